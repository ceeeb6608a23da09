"""forward_in.lua: store forwarded messages at a destination queue (publish's per-message layout)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .base import Call, partition_call
from .publish import PER_MESSAGE

NAME = "forward_in"
ARGV = ("source", "n")


def call(dest: str, partition: int, source: str, msg_args: Sequence[Any]) -> Call:
    return partition_call(NAME, dest, partition, (source, len(msg_args) // PER_MESSAGE, *msg_args))


def delivered(reply: list[Any]) -> int:
    """How many messages were stored (a forward_in or publish reply: {now, seq or 0, ...})."""
    return sum(1 for s in reply[1:] if int(s))
