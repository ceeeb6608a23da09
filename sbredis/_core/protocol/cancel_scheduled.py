"""cancel_scheduled.lua: cancel scheduled messages of one partition, all or none."""

from __future__ import annotations

from collections.abc import Sequence

from .base import Call, partition_call

NAME = "cancel_scheduled"
ARGV = ("n",)


def call(entity: str, partition: int, seqs: Sequence[int]) -> Call:
    """`seqs`: partition-local sequence numbers."""
    return partition_call(NAME, entity, partition, (len(seqs), *seqs))
