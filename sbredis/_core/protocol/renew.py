"""renew.lua: extend the locks the caller holds; the new locked-until per message."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..._message import ServiceBusReceivedMessage
from ._held import ARGV, LOCK_LOST, lock_args
from .base import Call, Group, partition_call

NAME = "renew"
__all__ = ["ARGV", "NAME", "apply", "call"]


def call(entity: str, partition: int, group: Group, msgs: Sequence[ServiceBusReceivedMessage]) -> Call:
    return partition_call(NAME, entity, partition, (group, *lock_args(msgs)))


def apply(msgs: Sequence[ServiceBusReceivedMessage], reply: list[Any], status: dict[int, Any]) -> None:
    """{now, then per message the new locked-until (0: lost, id(message) -> LOCK_LOST)}."""
    for m, code in zip(msgs, reply[1:], strict=True):
        if code:
            m.locked_until_ms = code
        else:
            status[id(m)] = LOCK_LOST
