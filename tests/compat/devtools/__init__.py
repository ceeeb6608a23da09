"""Stand-in for Azure's test tooling (devtools_testutils) in the ported azure-servicebus tests.

Recording and playback, sanitizers and resource-group preparers have no meaning against a local
redis-server: they are pass-throughs. `get_credential` and `PowerShellPreparer` are the connection:
they hand the tests the test server's address and ACL user (tests/compat/live.py sets them).
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import os
from collections.abc import Callable
from typing import Any

from tests.compat.identity import DefaultAzureCredential


class AzureRecordedTestCase:
    @staticmethod
    def await_prepared_test(fn: Callable[..., Any]) -> Callable[..., Any]:
        """An async test run to completion from a sync one (the tooling's decorator for tests that
        take no fixtures)."""

        @functools.wraps(fn)
        def run(self: Any, *args: Any, **kwargs: Any) -> Any:
            return asyncio.run(fn(self, *args, **kwargs))

        return run


class AzureMgmtRecordedTestCase(AzureRecordedTestCase):
    pass


class AzureTestError(Exception):
    pass


def get_credential(is_async: bool = False, **_: Any) -> Any:
    return DefaultAzureCredential()


def recorded_by_proxy(fn: Callable[..., Any]) -> Callable[..., Any]:
    return fn


def set_custom_default_matcher(**_: Any) -> None:
    pass


def add_general_regex_sanitizer(**_: Any) -> None:
    pass


def add_remove_header_sanitizer(**_: Any) -> None:
    pass


def add_oauth_response_sanitizer(**_: Any) -> None:
    pass


def _passthrough(*_: Any, **__: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    return lambda fn: fn


CachedResourceGroupPreparer = _passthrough
RandomNameResourceGroupPreparer = _passthrough
ResourceGroupPreparer = _passthrough


def inject(fn: Callable[..., Any], make: Callable[[], dict[str, Any]]) -> Callable[..., Any]:
    """`fn` called with the keyword arguments `make()` returns, hidden from pytest's signature."""
    signature = inspect.signature(fn)

    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in signature.parameters.values())

    def accepted() -> dict[str, Any]:  # as Azure's preparers: only what the test takes
        return {k: v for k, v in make().items() if takes_any or k in signature.parameters}

    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def wrapper_async(*args: Any, **kwargs: Any) -> Any:
            return await fn(*args, **{**accepted(), **kwargs})

        wrapper: Callable[..., Any] = wrapper_async
    else:

        @functools.wraps(fn)
        def wrapper_sync(*args: Any, **kwargs: Any) -> Any:
            return fn(*args, **{**accepted(), **kwargs})

        wrapper = wrapper_sync
    provided = set(make())
    params = [p for name, p in signature.parameters.items() if name not in provided]
    wrapper.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
    return wrapper


def PowerShellPreparer(service: str, **defaults: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:  # noqa: N802
    """Inject the ``<service>_...`` settings, from the environment when set there (as Azure's does)."""

    def values() -> dict[str, Any]:
        return {key: os.environ.get(key.upper(), value) for key, value in defaults.items()}

    return lambda fn: inject(fn, values)
