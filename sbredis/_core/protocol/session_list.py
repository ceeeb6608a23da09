"""session_list.lua: the sessions of a partition with messages, a lock holder or state, a page at a time."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .base import Call, partition_call, text

NAME = "session_list"
ARGV = ("cursor", "state updated after")


def call(entity: str, partition: int, cursor: str = "", after_ms: int | None = None) -> Call:
    """`cursor`: '' for the first page, else the previous page's next_cursor. `after_ms`: only
    the sessions whose state was set after this server time (and still is)."""
    return partition_call(NAME, entity, partition, (cursor, "" if after_ms is None else str(after_ms)))


def next_cursor(reply: list[Any]) -> str:
    """Where the partition's listing goes on ('' when this page completed it)."""
    return text(reply[0])


def parse(replies: Iterable[Any]) -> list[str]:
    """Session ids from every page of every partition, each once, sorted."""
    out: set[str] = set()
    for reply in replies:
        for sid in reply[1:]:
            out.add(sid.decode() if isinstance(sid, bytes) else str(sid))
    return sorted(out)
