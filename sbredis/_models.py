"""Runtime properties (read-only counts) of queues and their partitions."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from ._core.entity import DictLike, EntityStatus, QueueProperties


@dataclass(frozen=True)
class PartitionRuntimeProperties(DictLike):
    """One partition's counts (beyond the Azure SDK: partitioning made visible)."""

    partition_id: int
    active_message_count: int
    locked_message_count: int
    deferred_message_count: int
    scheduled_message_count: int
    dead_letter_message_count: int
    size_in_bytes: int
    node: str = ""  # the server ("host:port") that holds the partition


@dataclass(frozen=True)
class QueueRuntimeProperties(DictLike):
    """A queue's counts summed over its partitions, as the Azure SDK's QueueRuntimeProperties.

    active_message_count includes locked and deferred messages; expired messages not yet removed
    (lazily, on receive) are still counted. When a partition's node cannot be reached the counts
    cover the others and ``missing_partitions`` lists it (``limited`` is then true).
    """

    name: str
    created_at_utc: datetime | None
    updated_at_utc: datetime | None
    accessed_at_utc: datetime | None
    size_in_bytes: int
    total_message_count: int
    active_message_count: int
    dead_letter_message_count: int
    scheduled_message_count: int
    transfer_message_count: int
    transfer_dead_letter_message_count: int
    partitions: tuple[PartitionRuntimeProperties, ...]
    missing_partitions: tuple[int, ...] = ()

    @property
    def limited(self) -> bool:
        """Some partitions could not be reached: the counts are partial."""
        return bool(self.missing_partitions)


__all__ = [
    "EntityStatus",
    "PartitionRuntimeProperties",
    "QueueProperties",
    "QueueRuntimeProperties",
]
