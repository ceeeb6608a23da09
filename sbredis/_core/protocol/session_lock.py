"""session_lock.lua: lock a named session, or the next available one, of a partition."""

from __future__ import annotations

from typing import Any

from ..keys import SUBSCRIPTIONS, TRANSFER, journal_key
from .base import SWEEP_LIMIT, Call, partition_call

NAME = "session_lock"
ARGV = ("session id", "lock nonce", "sweep limit")


def call(entity: str, partition: int, session_id: str, nonce: str) -> Call:
    """`session_id` '' for the next available session of the partition."""
    c = partition_call(NAME, entity, partition, (session_id, nonce, SWEEP_LIMIT))
    topic, sep, _ = entity.partition(SUBSCRIPTIONS)
    if sep and not entity.endswith(TRANSFER):  # a subscription: its topic partition's journal too
        return Call(c.script, (*c.keys, journal_key(topic, partition)), c.args, partition)
    return c


def parse(reply: list[Any]) -> tuple[int, int, str | None]:
    """(server now ms, locked-until ms, session id); (now, 0, None) when no session was available."""
    now, until, sid = int(reply[0]), int(reply[1]), reply[2]
    if not until:
        return now, 0, None
    return now, until, sid.decode() if isinstance(sid, bytes) else str(sid)


def again(reply: list[Any]) -> bool:
    """Whether a next-available search stopped on its per-call budget: the partition may still
    have a session for the caller, so call again at once (session_lock.lua)."""
    return len(reply) > 3 and int(reply[3]) == 1


def journal_pending(reply: list[Any]) -> bool:
    """A next-available search found a fan-out to this subscription unfinished and locked
    nothing: finish it (finish_journal), then search again."""
    return len(reply) > 3 and int(reply[3]) == 2
