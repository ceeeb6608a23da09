"""abandon.lua: release locks the caller holds; a status per message."""

from __future__ import annotations

from collections.abc import Sequence

from ..._message import ServiceBusReceivedMessage
from ._held import ARGV, apply_status, lock_args
from .base import Call, Group, partition_call

NAME = "abandon"
__all__ = ["ARGV", "NAME", "apply", "call"]
apply = apply_status


def call(
    entity: str,
    partition: int,
    group: Group,
    msgs: Sequence[ServiceBusReceivedMessage],
    undo: str = "0",
    delay_ms: int = 0,
) -> Call:
    """`undo` '1': release without counting the delivery (messages never handed to a user);
    `delay_ms` > 0: the messages going back to ready are scheduled that much later instead."""
    tail = (undo, delay_ms) if delay_ms > 0 else (undo,)
    return partition_call(NAME, entity, partition, (group, *lock_args(msgs), *tail))
