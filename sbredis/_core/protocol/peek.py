"""peek.lua: read messages from a sequence number on without locking them."""

from __future__ import annotations

from typing import Any

from ..._enums import ServiceBusMessageState
from ..._message import ServiceBusReceivedMessage
from .base import Call, Group, partition_call, text_or_none

NAME = "peek"
ARGV = ("group", "first seq", "count", "session id")


def call(entity: str, partition: int, group: Group, first: int, count: int, session_id: str = "") -> Call:
    """`first`: partition-local; `session_id` '' for every message."""
    return partition_call(NAME, entity, partition, (group, first, count, session_id))


def parse(reply: list[Any], entity: str, partition: int, group: str) -> list[ServiceBusReceivedMessage]:
    """The peeked messages (they hold no lock and cannot be settled)."""
    dlq = group == Group.DEAD_LETTER
    stride = 8 if dlq else 6
    make = ServiceBusReceivedMessage._make
    out = []
    for i in range(1, len(reply), stride):
        m = make(
            reply[i + 3],
            entity,
            partition,
            group,
            int(reply[i]),
            int(reply[i + 1]),
            int(reply[i + 4]),
            int(reply[i + 5]),
            0,
            "",
            None,
            ServiceBusMessageState(int(reply[i + 2])),
        )
        if dlq:
            m.dead_letter_reason = text_or_none(reply[i + 6])
            m.dead_letter_error_description = text_or_none(reply[i + 7])
        m._settled = True  # peeked messages hold no lock and cannot be settled
        out.append(m)
    return out
