"""session_renew.lua: extend a session lock the caller holds."""

from __future__ import annotations

from typing import Any

from .base import Call, partition_call

NAME = "session_renew"
ARGV = ("session id", "the session lock's nonce")


def call(entity: str, partition: int, session_id: str, nonce: str) -> Call:
    return partition_call(NAME, entity, partition, (session_id, nonce))


def parse(reply: list[Any]) -> tuple[int, int]:
    """(server now ms, locked-until ms)."""
    return int(reply[0]), int(reply[1])
