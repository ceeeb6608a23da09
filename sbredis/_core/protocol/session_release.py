"""session_release.lua: let go of a session (closing)."""

from __future__ import annotations

from collections.abc import Sequence

from .base import Call, partition_call

NAME = "session_release"
ARGV = ("session id", "the session lock's nonce", "n")


def call(entity: str, partition: int, session_id: str, nonce: str, unhanded: Sequence[int]) -> Call:
    """`unhanded`: local seqs fetched ahead and never handed out."""
    return partition_call(NAME, entity, partition, (session_id, nonce, len(unhanded), *unhanded))
