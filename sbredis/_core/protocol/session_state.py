"""session_state.lua: read or write the state of a session the caller holds, or count its messages."""

from __future__ import annotations

from typing import Any

from .base import Call, partition_call

NAME = "session_state"
ARGV = ("op", "session id", "the session lock's nonce", "the state")


def get_call(entity: str, partition: int, session_id: str, nonce: str) -> Call:
    return partition_call(NAME, entity, partition, ("get", session_id, nonce))


def count_call(entity: str, partition: int, session_id: str, nonce: str) -> Call:
    return partition_call(NAME, entity, partition, ("count", session_id, nonce))


def set_call(entity: str, partition: int, session_id: str, nonce: str, state: bytes | None) -> Call:
    """Set the state; None deletes it."""
    if state is None:
        return partition_call(NAME, entity, partition, ("del", session_id, nonce))
    return partition_call(NAME, entity, partition, ("set", session_id, nonce, state))


def parse_state(reply: Any) -> bytes | None:
    return None if reply is None else bytes(reply)
