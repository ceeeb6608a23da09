"""Fixtures: a real redis-server per session (started here), a fresh queue name per test."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.redis_server import RedisServer


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    srv = RedisServer().start()
    yield srv
    srv.stop()


@pytest.fixture()
def url(redis_server: RedisServer) -> str:
    return redis_server.url


@pytest.fixture()
def admin(url: str) -> Iterator[Any]:
    from sbredis.management import ServiceBusAdministrationClient

    with ServiceBusAdministrationClient.from_connection_string(url) as a:
        yield a


@pytest.fixture()
def client(url: str) -> Iterator[Any]:
    from sbredis import ServiceBusClient

    with ServiceBusClient.from_connection_string(url) as c:
        yield c


@pytest.fixture()
def queue_name() -> str:
    return "q-" + uuid.uuid4().hex[:12]


@pytest.fixture()
def make_queue(admin: Any, queue_name: str) -> Callable[..., str]:
    """Create the test's queue with the given properties and return its name."""

    def make(**kwargs: Any) -> str:
        admin.create_queue(queue_name, **kwargs)
        return queue_name

    return make


def eventually(check: Callable[[], Any], timeout: float = 5.0, interval: float = 0.02) -> Any:
    """Poll `check` until it returns a truthy value or the deadline passes (then fail)."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s (last value {value!r})")
        time.sleep(interval)
