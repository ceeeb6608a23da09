"""Commands that write or remove an entity's per-partition config and keys (queue administration)."""

from __future__ import annotations

from typing import Any

from .entity import QueueProperties, partition_config
from .keys import partition_keys
from .topic_entity import owner_config_commands, owner_delete_keys


def config_commands(p: QueueProperties, gen: str = "") -> list[tuple[Any, ...]]:
    """Commands that write the entity's config (of generation `gen`) into each partition (and its
    transfer queue's)."""
    cmds: list[tuple[Any, ...]] = []
    for i in range(p.partition_count):
        cmds += owner_config_commands(partition_keys(p.name, i), partition_config(p, i, gen))
    return cmds


def delete_commands(name: str, partitions: int) -> list[tuple[Any, ...]]:
    """Remove every key of the entity's partitions and their transfer queues."""
    return [("UNLINK", *owner_delete_keys(partition_keys(name, i))) for i in range(partitions)]
