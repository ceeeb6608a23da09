"""peek.lua: read messages from a sequence number on without locking them."""

from __future__ import annotations

from typing import Any, NamedTuple

from ..._enums import ServiceBusMessageState
from ..._message import LockRef, ServiceBusReceivedMessage
from .base import Call, Group, partition_call, text_or_none

NAME = "peek"
ARGV = ("group", "first seq", "count", "session id")


def call(entity: str, partition: int, group: Group, first: int, count: int, session_id: str = "") -> Call:
    """`first`: partition-local; `session_id` '' for every message."""
    return partition_call(NAME, entity, partition, (group, first, count, session_id))


def resume(reply: list[Any]) -> int:
    """Where a session-filtered peek that stopped on its scan cap goes on (partition-local seq;
    0: it did not stop there)."""
    return int(reply[1])


def parse(reply: list[Any], entity: str, partition: int, group: str) -> list[ServiceBusReceivedMessage]:
    """The peeked messages (they hold no lock and cannot be settled)."""
    dlq = group == Group.DEAD_LETTER
    stride = 8 if dlq else 6
    ref = LockRef(entity, partition, group, "", None)
    cls = ServiceBusReceivedMessage
    out = []
    for i in range(2, len(reply), stride):
        m = cls.__new__(cls)
        m.fill(  # settled from the start: peeked messages hold no lock and cannot be settled
            reply[i + 3],
            ref,
            int(reply[i]),
            max(0, int(reply[i + 1]) - 1),  # as a receiver sees it: the deliveries before the last
            int(reply[i + 4]),
            int(reply[i + 5]),
            0,
            True,
            ServiceBusMessageState(int(reply[i + 2])),
        )
        if dlq:
            m.dead_letter_reason = text_or_none(reply[i + 6])
            m.dead_letter_error_description = text_or_none(reply[i + 7])
        out.append(m)
    return out


class Fields(NamedTuple):
    """A peek reply as columns, for readers that never need message objects (the Spark source)."""

    local_seq: list[int]
    delivery_count: list[int]
    state: list[int]
    raw: list[bytes]
    enqueued_ms: list[int]
    expires_ms: list[int]
    dead_letter_reason: list[str | None]
    dead_letter_error_description: list[str | None]

    def head(self, n: int) -> Fields:
        """The first `n` messages."""
        return Fields(
            self.local_seq[:n],
            self.delivery_count[:n],
            self.state[:n],
            self.raw[:n],
            self.enqueued_ms[:n],
            self.expires_ms[:n],
            self.dead_letter_reason[:n],
            self.dead_letter_error_description[:n],
        )

    def pick(self, keep: list[int]) -> Fields:
        """The messages at positions `keep`, in that order."""
        return Fields(
            [self.local_seq[i] for i in keep],
            [self.delivery_count[i] for i in keep],
            [self.state[i] for i in keep],
            [self.raw[i] for i in keep],
            [self.enqueued_ms[i] for i in keep],
            [self.expires_ms[i] for i in keep],
            [self.dead_letter_reason[i] for i in keep],
            [self.dead_letter_error_description[i] for i in keep],
        )
