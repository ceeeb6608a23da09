"""receive_deferred.lua: take deferred messages by sequence number; the reply is receive's."""

from __future__ import annotations

from collections.abc import Sequence

from .base import Call, Group, Mode, partition_call
from .receive import more, parse

NAME = "receive_deferred"
ARGV = ("group", "mode", "lock nonce", "n")
__all__ = ["ARGV", "NAME", "call", "more", "parse"]


def call(
    entity: str, partition: int, group: Group, mode: Mode, nonce: str, seqs: Sequence[int], session_id: str
) -> Call:
    """`seqs`: partition-local sequence numbers; `session_id` '' for none."""
    return partition_call(NAME, entity, partition, (group, mode, nonce, len(seqs), *seqs, session_id))
