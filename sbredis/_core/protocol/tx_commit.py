"""tx_commit.lua: apply a transaction's operations on its home partition, all or none."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .. import scripts
from .base import Call
from .forward_out import outbox_keys

NAME = "tx_commit"
ARGV = ("transaction id", "how long the commit marker is kept", "n settlements")
Settle = tuple[str, str, int, str, str, str]  # action, group, local seq, lock nonce, reason, description
Store = tuple[str, int, int, bytes]  # message_id or '', ttl_ms, scheduled_ms, blob (send.lua's w = 4)
Transfer = tuple[str, bytes]  # destination path, blob


def call(
    home: str,
    partition: int,
    tx_id: str,
    mark_ms: int,
    settles: Sequence[Settle],
    direct: Sequence[Store],
    via: Sequence[Transfer],
) -> Call:
    args: list[Any] = [tx_id, mark_ms, len(settles)]
    for s in settles:
        args += s
    args.append(len(direct))
    for d in direct:
        args += d
    args.append(len(via))
    for v in via:
        args += v
    return Call(scripts.load(NAME), outbox_keys(home, partition), tuple(args), partition)


def lost(reply: list[Any]) -> list[int] | None:
    """The 0-based indexes of the settlements that lost their locks (nothing was applied), or
    None when the transaction committed (now, or before: a retry)."""
    if int(reply[0]) == 0:
        return [int(i) - 1 for i in reply[1:]]
    return None


def locked_until(reply: list[Any]) -> int:
    """The locked-until (ms) of the locks a committed transaction renewed."""
    return int(reply[2])
