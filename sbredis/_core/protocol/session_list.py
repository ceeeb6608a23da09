"""session_list.lua: the sessions of a partition with messages, a lock holder or state."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .base import Call, partition_call

NAME = "session_list"
ARGV: tuple[str, ...] = ()


def call(entity: str, partition: int) -> Call:
    return partition_call(NAME, entity, partition, ())


def parse(replies: Iterable[Any]) -> list[str]:
    """Session ids from every partition's reply, each once, sorted."""
    out: set[str] = set()
    for reply in replies:
        for sid in reply:
            out.add(sid.decode() if isinstance(sid, bytes) else str(sid))
    return sorted(out)
