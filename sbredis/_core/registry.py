"""The entity registry ``sb:entities`` (keys.REGISTRY): one hash field per queue, topic,
subscription (``topic/Subscriptions/name``) and rule (keys.rule_path), its value the entity's
JSON record. This module alone names its commands; sbredis/aio/_registry.py (and its generated
sync twin) runs the reads, and the admin clients pass the writes to Transport.change with the
partition commands of the same change.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from .keys import REGISTRY

Command = tuple[Any, ...]


def get(path: str) -> Command:
    return ("HGET", REGISTRY, path)


def get_many(paths: Iterable[str]) -> Command:
    return ("HMGET", REGISTRY, *paths)


def get_all() -> Command:
    return ("HGETALL", REGISTRY)


def put(path: str, record: str) -> Command:
    """Write `path`'s record (JSON text)."""
    return ("HSET", REGISTRY, path, record)


def remove(*paths: str) -> Command:
    return ("HDEL", REGISTRY, *paths)


def decode(raw: Any) -> dict[str, Any] | None:
    """A record as read (JSON text or bytes), None for a missing one."""
    return None if raw is None else dict(json.loads(raw))


def decode_all(raw: dict[Any, Any] | None) -> dict[str, dict[str, Any]]:
    """HGETALL's reply as path -> record."""
    return {(k.decode() if isinstance(k, bytes) else str(k)): json.loads(v) for k, v in (raw or {}).items()}
