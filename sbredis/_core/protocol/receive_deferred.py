"""receive_deferred.lua: take deferred messages by sequence number; the reply is receive's."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .base import Call, Group, Mode, partition_call
from .receive import more, parse

NAME = "receive_deferred"
ARGV = ("group", "mode", "lock nonce", "n")
__all__ = ["ARGV", "NAME", "call", "more", "parse", "taken"]


def call(
    entity: str, partition: int, group: Group, mode: Mode, nonce: str, seqs: Sequence[int], session_id: str
) -> Call:
    """`seqs`: partition-local sequence numbers; `session_id` '' for none."""
    return partition_call(NAME, entity, partition, (group, mode, nonce, len(seqs), *seqs, session_id))


def taken(reply: list[Any]) -> int:
    """0 when the call took every number it was given; else it stopped on its read budget after
    the first `taken` of them, and the rest go in another call."""
    return int(reply[2])
