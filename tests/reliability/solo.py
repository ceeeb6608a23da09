"""Module-scoped fixtures for the battery's modules that run on a redis-server of their own.

A module imports the ones it uses (``from tests.reliability.solo import admin, client, raw,
server``): pytest registers a fixture under the name it has in the module, so these take the place
of the root conftest's backend-parametrized ``client``/``admin`` in that module only, and the rest
of the battery keeps those. Each importing module gets its own server (module scope), with a
SLOWLOG long enough for a test's checks (1,024 entries).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from sbredis import ServiceBusClient
from sbredis.management import ServiceBusAdministrationClient
from tests.redis_server import RedisServer


@pytest.fixture(scope="module")
def server() -> Iterator[RedisServer]:
    srv = RedisServer().start()
    r = redis.Redis.from_url(srv.url)
    r.config_set("slowlog-max-len", 1024)
    r.close()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def raw(server: RedisServer) -> Iterator[redis.Redis]:
    r = redis.Redis.from_url(server.url)
    yield r
    r.close()


@pytest.fixture(scope="module")
def admin(server: RedisServer) -> Iterator[ServiceBusAdministrationClient]:
    with ServiceBusAdministrationClient.from_connection_string(server.url) as a:
        yield a


@pytest.fixture(scope="module")
def client(server: RedisServer) -> Iterator[ServiceBusClient]:
    with ServiceBusClient.from_connection_string(server.url) as c:
        yield c
