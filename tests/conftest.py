"""Fixtures: a real redis-server and a real 3-primary Redis Cluster per session (started here), a
fresh queue name per test.

The conformance suite (modules marked ``conformance``) runs three times (the ``backend`` parameter):
against the standalone server, against the cluster, and on ``memory://`` (fakeredis in-process).
Tests that start, kill or proxy their own server (they ask for ``redis_server``) or are marked
``standalone`` run on the standalone server only.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.redis_cluster import RedisCluster
from tests.redis_server import RedisServer

MEMORY_URL = "memory://conformance"  # the in-process backend (fakeredis running the same Lua scripts)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "backend" not in metafunc.fixturenames or metafunc.definition.get_closest_marker("conformance") is None:
        return
    if metafunc.definition.get_closest_marker("standalone") or "redis_server" in metafunc.fixturenames:
        return
    metafunc.parametrize("backend", ["standalone", "cluster", "memory"], indirect=True)


@pytest.fixture()
def backend(request: pytest.FixtureRequest) -> str:
    return str(getattr(request, "param", "standalone"))


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    srv = RedisServer().start()
    yield srv
    srv.stop()


@pytest.fixture(scope="session")
def redis_cluster() -> Iterator[RedisCluster]:
    cluster = RedisCluster(3).start()
    yield cluster
    cluster.stop()


@pytest.fixture()
def url(request: pytest.FixtureRequest, backend: str) -> str:
    if backend == "cluster":
        return str(request.getfixturevalue("redis_cluster").url)
    if backend == "memory":
        return MEMORY_URL
    return str(request.getfixturevalue("redis_server").url)


@pytest.fixture()
def raw_redis(request: pytest.FixtureRequest, backend: str) -> Any:
    """A plain redis-py client on the same backend (a cluster client for the cluster)."""
    import redis

    if backend == "cluster":
        node = request.getfixturevalue("redis_cluster").primaries[0]
        return redis.RedisCluster(host="127.0.0.1", port=node.port)
    if backend == "memory":
        from sbredis._sync._transport import _memory_client

        return _memory_client(MEMORY_URL)
    return redis.Redis.from_url(request.getfixturevalue("redis_server").url)


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
