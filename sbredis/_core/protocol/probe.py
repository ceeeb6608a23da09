"""probe.lua: how many messages one receive could take from a partition now."""

from __future__ import annotations

from typing import Any

from .base import Call, Group, partition_call

NAME = "probe"
ARGV = ("group",)


def call(entity: str, partition: int, group: Group) -> Call:
    return partition_call(NAME, entity, partition, (group,))


def parse(reply: Any) -> int | None:
    """The count, or None when the reply is not one (an error in its place)."""
    return int(reply) if isinstance(reply, int) else None
