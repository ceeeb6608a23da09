"""What every script call shares: the Call record, the wire codes for group and mode, the sweep limit.

A protocol module (one per Lua script, named after it) builds its script's Call and reads its
reply; it alone knows the script's name, KEYS, ARGV order and reply shape. ``ARGV`` in each module
names the script's leading fixed arguments in the order of the script's header
(tests/unit/test_lua_contract.py holds the two against each other).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from ..._enums import ServiceBusReceiveMode
from .. import scripts
from ..keys import cfg_key, entity_keys

SWEEP_LIMIT = 100  # due schedules, elapsed locks and expiries a receive-side script sweeps per call


class Group(StrEnum):
    """A message group of a partition, as the scripts name it (ARGV 'm' | 'd')."""

    MAIN = "m"
    DEAD_LETTER = "d"


class Mode(StrEnum):
    """A receive mode, as the scripts name it (ARGV 'L' | 'D')."""

    PEEK_LOCK = "L"
    RECEIVE_AND_DELETE = "D"


def group_of(sub_queue: Any) -> Group:
    """The group a receiver of `sub_queue` (None: the entity itself) reads."""
    return Group.MAIN if sub_queue is None else Group.DEAD_LETTER


def mode_of(mode: ServiceBusReceiveMode) -> Mode:
    return Mode.PEEK_LOCK if mode is ServiceBusReceiveMode.PEEK_LOCK else Mode.RECEIVE_AND_DELETE


@dataclass(frozen=True)
class Call:
    """One script call on one partition.

    ``gen``: the caller's entity generation, passed after ``args`` as the script's last ARGV, which
    includes/partition.lua takes off and checks against the partition's: a partition of another
    generation answers STALE (the entity was deleted and created again). '' is not checked.
    """

    script: scripts.Script
    keys: tuple[str, ...]
    args: tuple[Any, ...]
    partition: int
    gen: str = ""

    @property
    def argv(self) -> tuple[Any, ...]:
        """What the script is called with: ``args`` and then ``gen``."""
        return (*self.args, self.gen)


def stamped(calls: list[Call], gen: str) -> list[Call]:
    """`calls` made with the metadata of generation `gen` (EntityMeta.generation)."""
    if not gen:
        return calls
    return [Call(c.script, c.keys, c.args, c.partition, gen) for c in calls]  # not replace(): half the cost


def stamp(c: Call, gen: str) -> Call:
    """stamped() of one call (a one-message settlement's: no list to build)."""
    return Call(c.script, c.keys, c.args, c.partition, gen) if gen else c


def partition_call(name: str, entity: str, partition: int, args: tuple[Any, ...]) -> Call:
    """Script `name` on partition `partition` of `entity` (its 24 keys): a queue or topic name, a
    subscription path ``topic/Subscriptions/name``, or either followed by ``/$Transfer``."""
    return Call(scripts.load(name), entity_keys(entity, partition), args, partition)


def cfg_call(name: str, entity: str, partition: int, args: tuple[Any, ...]) -> Call:
    """partition_call() for a script that takes the partition's cfg key alone and names the others
    itself (includes/partition.lua): complete, receive and send."""
    return Call(scripts.load(name), cfg_key(entity, partition), args, partition)


def text(v: Any) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def text_or_none(v: Any) -> str | None:
    t = v.decode() if isinstance(v, bytes) else v
    return t or None
