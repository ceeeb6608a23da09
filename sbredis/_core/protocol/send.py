"""send.lua: store a batch of messages in one partition's main queue, all or none."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..._message import PARTITION_SHIFT
from .base import Call, cfg_call

NAME = "send"
ARGV = ("n", "w")
FULL, BLOB_ONLY = 4, 1  # w: arguments per message (message_id, ttl_ms, scheduled_ms, blob) or the blob alone


def call(entity: str, partition: int, n: int, w: int, fields: Sequence[Any]) -> Call:
    """`fields`: `w` per message (w = 4: message_id or '', ttl_ms or 0, scheduled_ms or 0, blob)."""
    return cfg_call(NAME, entity, partition, (n, w, *fields))


def parse(c: Call, reply: list[Any]) -> list[int]:
    """Global sequence numbers (0 for duplicates that were dropped). A reply of {now, first} for
    n > 1 messages means none was a duplicate: first, first + 1, ..."""
    base = c.partition << PARTITION_SHIFT
    if len(reply) == 2 and c.args[0] > 1:
        first = base | int(reply[1])
        return list(range(first, first + c.args[0]))
    return [base | int(s) if int(s) else 0 for s in reply[1:]]
