"""The held-locks argument layout and status reply the settlement scripts share (held_args in
lua/includes/messages.lua): complete, abandon, defer, dead_letter and renew."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..._message import ServiceBusReceivedMessage

ARGV = ("group", "n", "the lock nonce")
LOCK_LOST = object()  # a settlement status: the lock elapsed, is not ours, or the message is gone


def lock_args(msgs: Sequence[ServiceBusReceivedMessage]) -> list[Any]:
    """A settlement script's arguments after the group: n, then the lock nonce all n messages
    share and their seqs (the usual case: one receive call), else '' and n pairs (seq, nonce)."""
    ref = msgs[0].lock_ref
    nonce = ref.nonce
    if len(msgs) == 1:  # complete_message in a loop
        return [1, nonce, msgs[0].local_seq]
    seqs = [m.local_seq for m in msgs]
    if all(m.lock_ref is ref or m.lock_ref.nonce == nonce for m in msgs):
        return [len(msgs), nonce, *seqs]
    args: list[Any] = [len(msgs), ""]
    for m in msgs:
        args.append(m.local_seq)
        args.append(m.lock_ref.nonce)
    return args


def apply_status(msgs: Sequence[ServiceBusReceivedMessage], reply: list[Any], status: dict[int, Any]) -> None:
    """A status per message, 0 for done (then settled), else lost (id(message) -> LOCK_LOST)."""
    for m, code in zip(msgs, reply, strict=True):
        if code:
            status[id(m)] = LOCK_LOST
        else:
            m.settled = True
