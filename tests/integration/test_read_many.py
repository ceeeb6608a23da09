"""Transport.read_many: plain reads of a partition in one MULTI, on every backend, through both
shells; replies as Redis sends them; errors typed."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from sbredis import ServiceBusMessage
from sbredis._core.keys import entity_keys
from sbredis._core.retry import RetryPolicy
from sbredis._sync._transport import Transport
from sbredis.aio._transport import Transport as AsyncTransport
from sbredis.exceptions import ServiceBusConnectionError, ServiceBusError
from tests.redis_server import RedisServer

pytestmark = [pytest.mark.integration, pytest.mark.conformance]


FAST = RetryPolicy(retry_total=1, retry_backoff_factor=0.01)


def read(url: str, groups: list[list[tuple[Any, ...]]], shell: str) -> list[list[Any]]:
    if shell == "sync":
        t = Transport(url, retry_policy=FAST)
        try:
            return t.read_many(groups)
        finally:
            t.close()

    async def run() -> list[list[Any]]:
        t = AsyncTransport(url, retry_policy=FAST)
        try:
            return await t.read_many(groups)
        finally:
            await t.close()

    return asyncio.run(run())


@pytest.mark.parametrize("shell", ["sync", "async"])
def test_groups_of_partitions_read_their_logs_raw(url: str, client: Any, make_queue: Any, shell: str) -> None:
    q = make_queue(enable_partitioning=True, partition_count=2)
    with client.get_queue_sender(q) as s:
        s.send_messages([ServiceBusMessage(f"b{i}", partition_key=f"k{i % 2}") for i in range(6)])
    groups = [[("HLEN", entity_keys(q, p)[5]), ("XRANGE", entity_keys(q, p)[2], "-", "+")] for p in (0, 1)]
    replies = read(url, groups, shell)
    assert [len(g) for g in replies] == [2, 2]
    assert [int(g[0]) for g in replies] == [0, 0]  # no locks
    entries = replies[0][1] + replies[1][1]
    assert len(entries) == 6
    # as Redis sends them: [id, [field, value, ...]], not redis-py's (id, dict)
    assert all(isinstance(e[1], list) and e[1][0] == b"b" and e[0].endswith(b"-0") for e in entries)


@pytest.mark.standalone
@pytest.mark.parametrize("shell", ["sync", "async"])
def test_an_error_reply_and_a_stopped_server_raise_typed_errors(shell: str) -> None:
    srv = RedisServer().start()
    try:
        with pytest.raises(ServiceBusError):
            read(srv.url, [[("SET", "{x}s", "v"), ("HLEN", "{x}s")]], shell)  # WRONGTYPE
    finally:
        srv.stop()
    with pytest.raises(ServiceBusConnectionError):
        read(srv.url, [[("HLEN", "{x}h")]], shell)


@pytest.mark.parametrize("shell", ["sync", "async"])
def test_an_error_inside_a_group_raises_on_every_backend(url: str, raw_redis: Any, shell: str) -> None:
    """A command that fails when the MULTI runs (WRONGTYPE) raises; groups of partitions on the
    same node (all of them on a standalone server or memory://) read in one round trip."""
    keys = [entity_keys("rm", p)[0] for p in range(6)]
    for k in keys:
        raw_redis.set(k, "v")
    assert [g[0] for g in read(url, [[("GET", k)] for k in keys], shell)] == [b"v"] * 6
    with pytest.raises(ServiceBusError):
        read(url, [[("GET", keys[0])], [("HLEN", keys[1])]], shell)
    for k in keys:
        raw_redis.delete(k)
