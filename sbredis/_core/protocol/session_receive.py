"""session_receive.lua: messages of a session the caller holds; the reply is receive's."""

from __future__ import annotations

from ..keys import SUBSCRIPTIONS, TRANSFER, journal_key
from .base import SWEEP_LIMIT, Call, Mode, partition_call
from .receive import journal_pending, more, parse

NAME = "session_receive"
ARGV = ("session id", "mode", "count", "the session lock's nonce", "sweep limit")
__all__ = ["ARGV", "NAME", "call", "journal_pending", "more", "parse"]


def call(entity: str, partition: int, session_id: str, mode: Mode, count: int, nonce: str) -> Call:
    c = partition_call(NAME, entity, partition, (session_id, mode, count, nonce, SWEEP_LIMIT))
    topic, sep, _ = entity.partition(SUBSCRIPTIONS)
    if sep and not entity.endswith(TRANSFER):  # a subscription: its topic partition's journal too
        return Call(c.script, (*c.keys, journal_key(topic, partition)), c.args, partition)
    return c
