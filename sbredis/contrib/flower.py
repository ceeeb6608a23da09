"""Queue lengths in Flower for Celery on ``sbredis://``.

Flower asks the broker for queue lengths through its own broker classes, chosen by the URL
scheme in ``flower.utils.broker.Broker`` (amqp, redis, rediss, redis+socket, sentinel), and
answers 404 "'sbredis' broker is not supported" for any other. It has no registry to add one to,
so :func:`install` wraps that factory: for ``sbredis``, ``sbredis+rediss`` and ``sbredis+unix``
URLs it returns :class:`SbredisBroker`, every other URL goes to Flower's own classes.

It is installed when ``sbredis.contrib.celery`` is imported in a process that has already
imported Flower (``celery -A proj flower`` does: Celery loads its command plugins before the
app); elsewhere (``flower`` run on its own, or to be explicit) import this module from Flower's
config file::

    # flowerconfig.py
    import sbredis.contrib.flower  # noqa: F401  (queue lengths for sbredis://)

A queue's length is its messages ready to be delivered (not locked by a worker, deferred or
scheduled), what Flower shows for redis:// (the list's length).
"""

from __future__ import annotations

import asyncio
from typing import Any

from flower.utils import broker as _flower_broker

from .kombu import SCHEME, entity_name, ready_messages

_installed = False


def _redis_url(broker_url: str) -> str:
    """redis:// (or rediss://, unix://) for an sbredis:// URL."""
    scheme, _, rest = broker_url.partition("://")
    if scheme == SCHEME:
        return "redis://" + rest
    if scheme.startswith(SCHEME + "+"):
        return scheme[len(SCHEME) + 1 :] + "://" + rest
    return broker_url


class SbredisBroker(_flower_broker.BrokerBase):  # type: ignore[misc]
    """Flower's broker interface on sbredis queues: ``await queues(names)``."""

    def __init__(self, broker_url: str, *_: Any, **kwargs: Any) -> None:
        super().__init__(broker_url)
        options = kwargs.get("broker_options") or {}
        self.url = _redis_url(broker_url)
        self.prefix = str(options.get("queue_name_prefix", ""))

    def _lengths(self, names: list[str]) -> list[dict[str, Any]]:
        from sbredis.exceptions import MessagingEntityNotFoundError
        from sbredis.management import ServiceBusAdministrationClient

        out = []
        with ServiceBusAdministrationClient.from_connection_string(self.url) as admin:
            for name in names:
                try:
                    props = admin.get_queue_runtime_properties(entity_name(name, self.prefix))
                except MessagingEntityNotFoundError:
                    continue
                out.append({"name": name, "messages": ready_messages(props)})
        return out

    async def queues(self, names: Any) -> list[dict[str, Any]]:
        return await asyncio.to_thread(self._lengths, list(names))


def install() -> None:
    """Make Flower's broker factory return SbredisBroker for sbredis URLs (idempotent)."""
    global _installed
    if _installed:
        return
    factory = _flower_broker.Broker
    flowers_new = factory.__new__

    def _new(cls: type, broker_url: str, *args: Any, **kwargs: Any) -> Any:
        scheme = broker_url.partition("://")[0]
        if scheme == SCHEME or scheme.startswith(SCHEME + "+"):
            return SbredisBroker(broker_url, *args, **kwargs)
        return flowers_new(cls, broker_url, *args, **kwargs)

    factory.__new__ = staticmethod(_new)
    _installed = True


install()
