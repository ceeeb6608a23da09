"""complete.lua: complete (remove) messages whose locks the caller holds; a status per message."""

from __future__ import annotations

from collections.abc import Sequence

from ..._message import ServiceBusReceivedMessage
from ._held import ARGV, apply_status, lock_args
from .base import Call, Group, cfg_call

NAME = "complete"
__all__ = ["ARGV", "NAME", "apply", "call", "call_by_nonce"]
apply = apply_status


def call(entity: str, partition: int, group: Group, msgs: Sequence[ServiceBusReceivedMessage]) -> Call:
    return cfg_call(NAME, entity, partition, (group, *lock_args(msgs)))


def call_by_nonce(entity: str, partition: int, group: Group, nonce: str, seqs: Sequence[int]) -> Call:
    """Complete the messages `seqs`, all locked under one receive's `nonce` (what a lock token
    carries), without their message objects."""
    return cfg_call(NAME, entity, partition, (group, len(seqs), nonce, *seqs))
