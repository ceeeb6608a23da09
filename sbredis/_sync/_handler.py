# Generated from sbredis/aio/_handler.py by scripts/unasync.py: edit the async source, not this.
"""HandlerContext: what a client gives its senders, receivers, sessions and transactions (as the
Azure SDK's handler base): the transport, the entity metadata cache, the forwarder and the paired
namespace. Handlers use it instead of reaching into the client."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._core.fanout import meta_from_record
from .._core.keys import TRANSFER
from .._core.meta import EntityMeta
from ..exceptions import MessagingEntityNotFoundError, ServiceBusError
from ._forwarder import Forwarder
from ._registry import Registry
from ._transport import Transport

if TYPE_CHECKING:
    from ..paired._sync import PairedNamespace


class HandlerContext:
    """One per client, shared by its handlers."""

    def __init__(self, transport: Transport) -> None:
        self.transport = transport
        self.registry = Registry(transport)
        self.forwarder = Forwarder(transport)
        self.paired: PairedNamespace | None = None  # the client's, set once it exists
        self.meta: dict[str, EntityMeta] = {}

    def entity(self, name: str, refresh: bool = False) -> EntityMeta:
        """A queue's, topic's or subscription's metadata (``<path>/$Transfer``: its owner's).

        Raises:
            MessagingEntityNotFoundError: no such entity.
        """
        meta = None if refresh else self.meta.get(name)
        if meta is None:
            owner = name[: -len(TRANSFER)] if name.endswith(TRANSFER) else name
            rec = self.registry.get(owner, entity=name)
            if rec is None:
                self.meta.pop(name, None)
                raise MessagingEntityNotFoundError(f"The messaging entity '{name}' was not found.")
            meta = meta_from_record(owner, rec)
            self.meta[name] = meta
        return meta

    def recreated(self, name: str, gen: str) -> bool:
        """A call made with metadata of generation `gen` found `name` missing or stale (a partition
        that does not exist, or of another generation): reload the metadata. True when the entity
        exists under another generation now (it was deleted and created again: re-plan and retry
        with the new metadata), False when it is gone or unchanged (the error stands)."""
        try:
            meta = self.entity(name, refresh=True)
        except ServiceBusError:
            return False
        return meta.generation != gen

    def forget(self, name: str) -> None:
        """Drop the cached metadata of `name` (it was deleted or changed)."""
        self.meta.pop(name, None)
