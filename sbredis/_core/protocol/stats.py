"""stats.lua: a partition's message counts and size, read-only."""

from __future__ import annotations

from typing import Any, NamedTuple

from .base import Call, partition_call

NAME = "stats"
ARGV: tuple[str, ...] = ()


class Stats(NamedTuple):
    ready: int
    locked: int
    deferred: int
    scheduled: int
    dlq_ready: int
    dlq_locked: int
    dlq_deferred: int
    size_bytes: int
    last_access_ms: int
    last_seq: int
    last_dlq_seq: int


def call(entity: str, partition: int) -> Call:
    return partition_call(NAME, entity, partition, ())


def parse(reply: list[Any]) -> Stats:
    return Stats(*(int(x) for x in reply[:11]))
