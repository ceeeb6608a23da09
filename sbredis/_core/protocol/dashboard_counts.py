"""dashboard_counts.lua: many partitions' counts and their transfer queues', read-only, in one call.

Its KEYS are not the usual whole partition: 18 of a partition's 24 keys (and of its transfer
queue's) per partition, several partitions per call (see the script's header).
"""

from __future__ import annotations

from typing import Any

from .. import scripts
from ..keys import TRANSFER, entity_keys
from .base import Call

NAME = "dashboard_counts"
ARGV: tuple[str, ...] = ()

# positions in a partition's 24 keys (lua/includes/partition.lua) of those the script reads
OWNER_KEYS = (0, 1, 2, 3, 4, 7, 8, 11, 12, 13, 16, 17)
TRANSFER_KEYS = (2, 8, 11, 12, 13, 16)
KEYS_PER_PARTITION = len(OWNER_KEYS) + len(TRANSFER_KEYS)

# a partition's row of the reply (found is always 1; the transfer columns: its transfer queue's counts)
ROW = (
    "found",
    "active",
    "locked",
    "deferred",
    "scheduled",
    "dead_letter",
    "size",
    "seq",
    "dseq",
    "transfer",
    "transfer_dead_letter",
)
WIDTH = len(ROW)


def partition_keys(path: str, partition: int) -> tuple[str, ...]:
    """The script's keys for one partition of the entity at `path`, in the header's order."""
    owner, transfer = entity_keys(path, partition), entity_keys(path + TRANSFER, partition)
    return tuple(owner[i] for i in OWNER_KEYS) + tuple(transfer[i] for i in TRANSFER_KEYS)


def calls(parts: list[tuple[str, int]], per_partition: bool, chunk: int = 256) -> list[Call]:
    """The calls for (entity path, partition) pairs: one per partition on a cluster (a call is
    routed by one hash tag), else `chunk` partitions per call (a standalone server takes any keys;
    fewer, longer calls spare the per-call cost)."""
    script = scripts.load(NAME)
    if per_partition:
        return [Call(script, partition_keys(path, i), (), i) for path, i in parts]
    return [
        Call(script, tuple(k for path, i in parts[j : j + chunk] for k in partition_keys(path, i)), (), 0)
        for j in range(0, len(parts), chunk)
    ]


def partitions_of(call: Call) -> int:
    """How many partitions a call reads (its reply has WIDTH values for each)."""
    return len(call.keys) // KEYS_PER_PARTITION


def parse(reply: list[Any]) -> list[int]:
    """The partitions' rows, flattened (WIDTH values each, in the call's partition order; integer
    replies already)."""
    return reply
