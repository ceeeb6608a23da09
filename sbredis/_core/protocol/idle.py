"""idle.lua: auto-delete-on-idle for one partition of an entity: check, retire or restore."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .. import keys, scripts
from .base import Call

NAME = "idle"
ARGV = ("mode", "cutoff ms")


def call(path: str, kind: str, partition: int, subs: Sequence[str], mode: str, cutoff_ms: int) -> Call:
    """For a queue, subscription or topic (a topic with its subscriptions' keys); mode 'check' |
    'retire' | 'restore'."""
    ks: list[str] = list(keys.entity_keys(path, partition))
    if kind == "topic":
        for name in subs:
            ks += keys.subscription_keys(path, name, partition)
    return Call(scripts.load(NAME), tuple(ks), (mode, cutoff_ms), partition)


def parse(reply: list[Any]) -> tuple[bool, int]:
    """(idle, last use ms)."""
    return int(reply[0]) == 1, int(reply[1])
