"""What the ported tests import from azure-servicebus's private modules (``azure.servicebus._*``).

A name sbredis exports publicly (an enum, a message class) is sbredis's; ``utc_now`` is the
current UTC time. Every other name is a placeholder: using it raises `ReadsSdkInternalsError`, and
tests/compat/live_plugin.py counts such a test as one that reads the SDK's internals (it does not
apply), not as a failure.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, NoReturn

import sbredis
import sbredis.exceptions
import sbredis.management


class ReadsSdkInternalsError(Exception):
    """A test used a private name of azure-servicebus that has no counterpart in sbredis."""


def utc_now() -> datetime:
    return datetime.now(UTC)


class _InternalBase:
    def __init__(self, *_: Any, **__: Any) -> None:
        raise ReadsSdkInternalsError(f"a subclass of an azure-servicebus internal: {type(self).__name__}")

    def __getattr__(self, name: str) -> Any:
        # what the internal base class would have supplied (DictMixin's keys(), ...)
        raise ReadsSdkInternalsError(f"{type(self).__name__}.{name}, from a subclassed azure-servicebus internal")


class _Internal:
    def __init__(self, name: str) -> None:
        object.__setattr__(self, "_name", name)

    def _refuse(self, *_: Any, **__: Any) -> NoReturn:
        raise ReadsSdkInternalsError(f"azure-servicebus internal {object.__getattribute__(self, '_name')!r}")

    __call__ = __getattr__ = __setattr__ = __eq__ = __lt__ = __gt__ = __iter__ = __getitem__ = _refuse
    __contains__ = __len__ = __bool__ = __int__ = __float__ = __index__ = _refuse
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __or__ = __ror__ = _refuse

    def __repr__(self) -> str:
        return f"<azure-servicebus internal {object.__getattribute__(self, '_name')}>"

    def __mro_entries__(self, bases: tuple[Any, ...]) -> tuple[type, ...]:
        return (_InternalBase,)

    def __hash__(self) -> int:
        return id(self)


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    for module in (sbredis, sbredis.exceptions, sbredis.management):
        if hasattr(module, name):
            return getattr(module, name)
    if name == "utc_now":
        return utc_now
    return _Internal(name)
