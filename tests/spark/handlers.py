"""Handlers for the consume job's tests; they run in Spark's Python workers and record what they
handled in the test server (list ``handled:<entity>``, url from $SBREDIS_TEST_URL)."""

from __future__ import annotations

import os
import time
from typing import Any

import redis

SLOW_SECONDS = 0.4


def _record(msg: Any) -> None:
    with redis.Redis.from_url(os.environ["SBREDIS_TEST_URL"]) as r:
        r.rpush(f"handled:{msg.entity_name}", msg.body_bytes)


def record(msg: Any) -> None:
    _record(msg)


def flaky(msg: Any) -> None:
    """Fails on bodies starting with 'fail'."""
    if msg.body_bytes.startswith(b"fail"):
        raise ValueError(f"cannot handle {msg.body_bytes!r}")
    _record(msg)


def slow(msg: Any) -> None:
    time.sleep(SLOW_SECONDS)
    _record(msg)


def crash_once(msg: Any) -> None:
    """Kills the Python worker (as a lost executor would) on the first delivery of 'crash'."""
    if msg.body_bytes == b"crash" and msg.delivery_count == 0:
        os._exit(1)
    _record(msg)


def handled(url: str, entity: str) -> list[bytes]:
    with redis.Redis.from_url(url) as r:
        return list(r.lrange(f"handled:{entity}", 0, -1))
