"""session_receive.lua: messages of a session the caller holds; the reply is receive's."""

from __future__ import annotations

from .base import SWEEP_LIMIT, Call, Mode, partition_call
from .receive import more, parse

NAME = "session_receive"
ARGV = ("session id", "mode", "count", "the session lock's nonce", "sweep limit")
__all__ = ["ARGV", "NAME", "call", "more", "parse"]


def call(entity: str, partition: int, session_id: str, mode: Mode, count: int, nonce: str) -> Call:
    return partition_call(NAME, entity, partition, (session_id, mode, count, nonce, SWEEP_LIMIT))
