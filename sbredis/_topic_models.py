"""Runtime properties (read-only counts) of topics and subscriptions, as the Azure SDK's."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from ._core.entity import DictLike


@dataclass(frozen=True)
class TopicRuntimeProperties(DictLike):
    """A topic's counts. size_in_bytes sums what its subscriptions store; scheduled_message_count
    counts scheduled topic messages not yet enqueued (each may have a copy in several subscriptions)."""

    name: str
    created_at_utc: datetime | None
    updated_at_utc: datetime | None
    accessed_at_utc: datetime | None
    size_in_bytes: int
    subscription_count: int
    scheduled_message_count: int
    sql_filter_count: int = 0  # rules with SQL (true and false included) filters, over the subscriptions
    correlation_filter_count: int = 0


@dataclass(frozen=True)
class SubscriptionRuntimeProperties(DictLike):
    """A subscription's counts summed over its partitions (active includes locked and deferred;
    transfer_message_count: messages waiting in the outbox to be forwarded)."""

    name: str
    created_at_utc: datetime | None
    updated_at_utc: datetime | None
    accessed_at_utc: datetime | None
    total_message_count: int
    active_message_count: int
    dead_letter_message_count: int
    transfer_message_count: int
    transfer_dead_letter_message_count: int
