"""Fixtures: a real redis-server and a real 3-primary Redis Cluster per session (started here), a
fresh queue name per test.

The conformance suite (modules marked ``conformance``) runs three times (the ``backend`` parameter):
against the standalone server, against the cluster, and on ``memory://`` (fakeredis in-process).
Tests that start, kill or proxy their own server (they ask for ``redis_server``) or are marked
``standalone`` run on the standalone server only.

Each conformance test that uses the ``client`` or ``admin`` fixture also runs through both APIs (the
``api`` parameter): ``sync`` gives the sbredis classes, ``async`` the sbredis.aio ones behind the sync
adapter of tests/sync_over_async.py. A test that builds its own client or renewer takes the classes
from the ``sb_api`` fixture so that it too runs through the API under test.
"""

from __future__ import annotations

import inspect
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from tests.redis_cluster import RedisCluster
from tests.redis_server import RedisServer

# per-module coverage floors, checked when the whole suite runs; the suite's xdist scheduling
pytest_plugins = ["tests.coverage_floors", "tests.parallel"]

# The suite shares the machine with its other workers and servers: a per-example deadline would fail
# on load, not on a slow implementation. Tests that set their own settings keep them.
settings.register_profile("sbredis", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("sbredis")  # --hypothesis-profile still chooses another

MEMORY_URL = "memory://conformance"  # the in-process backend (fakeredis running the same Lua scripts)


API_FIXTURES = {"client", "admin", "sb_api"}  # asked for by the test itself, not only through make_queue


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if metafunc.definition.get_closest_marker("conformance") is None:
        return
    one_server = metafunc.definition.get_closest_marker("standalone") or "redis_server" in metafunc.fixturenames
    if "backend" in metafunc.fixturenames and not one_server:
        metafunc.parametrize("backend", ["standalone", "cluster", "memory"], indirect=True)
    if API_FIXTURES & set(inspect.signature(metafunc.function).parameters):
        metafunc.parametrize("api", ["sync", "async"], indirect=True)


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
def api(request: pytest.FixtureRequest) -> str:
    """The API a conformance test runs through: ``sync`` (sbredis) or ``async`` (sbredis.aio, adapted)."""
    return str(getattr(request, "param", "sync"))


@pytest.fixture()
def sb_api(api: str) -> Iterator[Any]:
    """The classes of the API under test: ``ServiceBusClient``, ``ServiceBusAdministrationClient``,
    ``AutoLockRenewer``, each presenting the sync API."""
    from tests.sync_over_async import AsyncApi, SyncApi

    classes = AsyncApi() if api == "async" else SyncApi()
    yield classes
    classes.close()


@pytest.fixture()
def admin(url: str, sb_api: Any) -> Iterator[Any]:
    with sb_api.ServiceBusAdministrationClient.from_connection_string(url) as a:
        yield a


@pytest.fixture()
def client(url: str, sb_api: Any) -> Iterator[Any]:
    with sb_api.ServiceBusClient.from_connection_string(url) as c:
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
