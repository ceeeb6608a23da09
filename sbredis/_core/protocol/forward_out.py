"""forward_out.lua: move a partition's forwarded messages into its outbox; return the oldest entries."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .. import keys, scripts
from .base import SWEEP_LIMIT, Call, text

NAME = "forward_out"
JOURNAL = 2  # reply[2] of a subscription's call that found its topic partition's fan-out journal to finish
ARGV = ("most messages to move", "most entries to return", "sweep limit")
OUTBOX_MOVE = 500  # messages moved into an outbox per forward_out call
OUTBOX_RETURN = 500  # outbox entries delivered per round
# a round also returns at most about this many bytes of entries (lua/includes/messages.lua READ_BYTES)
OUTBOX_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True)
class OutboxEntry:
    seq: int
    destination: str
    hop: int
    expires_ms: int
    blob: bytes
    reason: str  # '' unless the message was dead-lettered before being forwarded
    description: str


def outbox_keys(path: str, partition: int) -> tuple[str, ...]:
    """The partition's keys, then its transfer queue's (the outbox, same hash tag), then for a
    subscription its topic partition's fan-out journal (as a subscription's receive passes it)."""
    own = keys.entity_keys(path, partition)
    topic, sep, _ = path.partition(keys.SUBSCRIPTIONS)
    journal = (keys.journal_key(topic, partition),) if sep and not path.endswith(keys.TRANSFER) else ()
    return (*own, *keys.transfer_keys(own), *journal)


def call(path: str, partition: int) -> Call:
    return Call(scripts.load(NAME), outbox_keys(path, partition), (OUTBOX_MOVE, OUTBOX_RETURN, SWEEP_LIMIT), partition)


def journal_pending(reply: list[Any]) -> bool:
    """A subscription's call found a fan-out (or a cancel of its copies) to finish first and moved
    nothing: finish it (finish_journal), then call again."""
    return int(reply[2]) == JOURNAL


def more(reply: list[Any]) -> bool:
    """Whether the call's sweep stopped on its expiry budget with expired messages left: a
    message to forward may wait behind them, so the drain calls again."""
    return int(reply[2]) == 1


def parse(reply: list[Any]) -> tuple[str, list[OutboxEntry]]:
    """(incarnation, entries)."""
    inc = text(reply[1])
    out = []
    for i in range(3, len(reply), 7):
        out.append(
            OutboxEntry(
                int(reply[i]),
                text(reply[i + 1]),
                int(reply[i + 2]),
                int(reply[i + 3]),
                bytes(reply[i + 4]),
                text(reply[i + 5]),
                text(reply[i + 6]),
            )
        )
    return inc, out
