"""What a caller sees when the connection to Redis misbehaves, through both APIs (sbredis and
sbredis.aio): a lost reply retried, a send in doubt naming its partition, scripts flushed from the
server loaded again, a stopped server, a cluster's dead seeds, a killed primary, and WAIT falling
short."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from sbredis import ServiceBusMessage
from sbredis._core.keys import partition_keys
from sbredis._core.ops import partition_of
from sbredis.exceptions import OperationTimeoutError, ServiceBusConnectionError
from tests.latency_proxy import LatencyProxy
from tests.redis_cluster import RedisCluster
from tests.redis_server import RedisServer, free_port

pytestmark = [pytest.mark.integration, pytest.mark.conformance, pytest.mark.standalone]
FAST = {"retry_total": 2, "retry_backoff_factor": 0.01, "socket_timeout": 2}


def peek_all(sb_api: Any, url: str, q: str) -> list[str]:
    with sb_api.ServiceBusClient.from_connection_string(url) as c, c.get_queue_receiver(q) as r:
        return sorted(str(m) for m in r.peek_messages(100, sequence_number=0))


def test_a_lost_reply_is_retried_and_stored_once(sb_api: Any, redis_server: RedisServer, make_queue: Any) -> None:
    q = make_queue(requires_duplicate_detection=True, enable_partitioning=True, partition_count=2)
    with (
        LatencyProxy(redis_server.port, 0.0) as proxy,
        sb_api.ServiceBusClient.from_connection_string(proxy.url(), retry_backoff_factor=0.01) as c,
    ):
        s = c.get_queue_sender(q)
        s.send_messages(ServiceBusMessage("first"))
        proxy.lose_replies = 1  # Redis stores the next send; the client never hears back
        s.send_messages(ServiceBusMessage("second", message_id="m-2"))
        assert proxy.lost == 1
    assert peek_all(sb_api, redis_server.url, q) == ["first", "second"]


def test_a_send_in_doubt_names_its_partition(sb_api: Any, redis_server: RedisServer, make_queue: Any) -> None:
    q = make_queue(requires_duplicate_detection=True)
    with (
        LatencyProxy(redis_server.port, 0.0) as proxy,
        sb_api.ServiceBusClient.from_connection_string(proxy.url(), retry_total=0) as c,
    ):
        s = c.get_queue_sender(q)
        s.send_messages(ServiceBusMessage("first"))
        proxy.lose_replies = 1
        m = ServiceBusMessage("in doubt", message_id="doubt-1")
        with pytest.raises(ServiceBusConnectionError) as info:
            s.send_messages(m)
        assert info.value.retryable
        assert f"(partition 0 of '{q}')" in info.value.message
        s.send_messages(m)  # the caller's retry of the same message id: dropped as a duplicate
    assert peek_all(sb_api, redis_server.url, q) == ["first", "in doubt"]


def test_a_reply_later_than_the_socket_timeout_is_a_timeout_and_the_next_call_works(
    sb_api: Any, redis_server: RedisServer, make_queue: Any
) -> None:
    q = make_queue()
    with (
        LatencyProxy(redis_server.port, 0.0) as proxy,
        sb_api.ServiceBusClient.from_connection_string(proxy.url(), retry_total=0, socket_timeout=0.2) as c,
    ):
        s = c.get_queue_sender(q)
        s.send_messages(ServiceBusMessage("first"))
        time.sleep(0.3)  # idle for longer than the socket timeout: no call is in flight, none times out
        s.send_messages(ServiceBusMessage("second"))
        proxy.delay = 0.3  # each way: the reply comes after the socket timeout
        with pytest.raises(OperationTimeoutError):
            s.send_messages(ServiceBusMessage("late"))
        proxy.delay = 0.0
        s.send_messages(ServiceBusMessage("after"))  # on a new connection: the late reply is not taken for it
        with c.get_queue_receiver(q) as r:
            got = r.receive_messages(4, max_wait_time=2)
            r.complete_messages(got)
    assert {"first", "second", "after"} <= set(map(str, got))  # "late" reaches Redis when the proxy delivers it


def test_a_call_cancelled_while_it_waits_for_its_reply_is_cancelled(redis_server: RedisServer, make_queue: Any) -> None:
    import asyncio

    from sbredis.aio import ServiceBusClient

    q = make_queue()

    async def main() -> list[str]:
        with LatencyProxy(redis_server.port, 0.0) as proxy:
            async with ServiceBusClient.from_connection_string(proxy.url(), retry_total=0) as c:
                s = c.get_queue_sender(q)
                await s.send_messages(ServiceBusMessage("first"))
                proxy.delay = 0.2
                task = asyncio.create_task(s.send_messages(ServiceBusMessage("cancelled")))
                await asyncio.sleep(0.1)  # the command is on its way; its reply is not
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await task
                proxy.delay = 0.0
                await s.send_messages(ServiceBusMessage("after"))
                async with c.get_queue_receiver(q) as r:
                    got = await r.receive_messages(3, max_wait_time=2)
                    await r.complete_messages(got)
                return set(map(str, got))

    assert {"first", "after"} <= asyncio.run(main())  # "cancelled" reaches Redis when the proxy delivers it


def test_scripts_flushed_from_the_server_are_loaded_again(
    sb_api: Any, client: Any, make_queue: Any, redis_server: RedisServer
) -> None:
    q = make_queue(enable_partitioning=True, partition_count=2)
    s = client.get_queue_sender(q)
    s.send_messages(ServiceBusMessage("before"))
    raw = redis.Redis.from_url(redis_server.url)
    raw.script_flush()
    s.send_messages(ServiceBusMessage("after"))  # one script call: NOSCRIPT, loaded, run
    raw.script_flush()
    with client.get_queue_receiver(q) as r:  # one call per partition, pipelined: loaded, run again
        got: list[Any] = []
        while len(got) < 2 and (batch := r.receive_messages(2, max_wait_time=1)):
            got += batch
        assert sorted(map(str, got)) == ["after", "before"]
        raw.script_flush()
        r.complete_messages(got)
    assert peek_all(sb_api, redis_server.url, q) == []


@pytest.fixture()
def own_server() -> Iterator[RedisServer]:
    srv = RedisServer("--appendonly", "yes", "--appendfsync", "always").start()
    yield srv
    srv.stop()


def test_a_connection_closed_while_idle_is_replaced_without_an_error(sb_api: Any, own_server: RedisServer) -> None:
    """Settlements one after another on a connection the server closed while it sat idle (its
    `timeout`, CLIENT KILL) go on a new one, without retries: the check before a kept connection
    is used again runs once it has been idle a moment (a tight loop of calls skips it)."""
    url = own_server.url
    with (
        sb_api.ServiceBusAdministrationClient.from_connection_string(url) as admin,
        sb_api.ServiceBusClient.from_connection_string(url, retry_total=0) as c,
    ):
        admin.create_queue("q")
        c.get_queue_sender("q").send_messages([ServiceBusMessage(str(i)) for i in range(6)])
        with c.get_queue_receiver("q", max_wait_time=1) as r:
            got = r.receive_messages(6, max_wait_time=1)
            for i, m in enumerate(got):
                if i % 2:
                    redis.Redis.from_url(url).client_kill_filter(_type="normal", skipme=True)
                    time.sleep(0.01)
                r.complete_message(m)
        assert admin.get_queue_runtime_properties("q").total_message_count == 0


@pytest.mark.parametrize("partitions", [1, 2])
def test_a_stopped_server_gives_typed_errors(sb_api: Any, own_server: RedisServer, partitions: int) -> None:
    """A receive from a queue none of whose partitions answer raises, one partition or several
    (a one-partition receive returned [] after its wait, logging a warning per try)."""
    url = own_server.url
    with (
        sb_api.ServiceBusAdministrationClient.from_connection_string(url, retry_total=0) as admin,
        sb_api.ServiceBusClient.from_connection_string(url, retry_total=0) as c,
    ):
        admin.create_queue("q", enable_partitioning=partitions > 1, partition_count=partitions)
        c.get_queue_sender("q").send_messages(ServiceBusMessage("x"))
        receiver = c.get_queue_receiver("q")
        own_server.kill()
        for call in (
            lambda: admin.get_queue("q"),
            lambda: admin.create_queue("other"),
            lambda: receiver.receive_messages(2, max_wait_time=1),
            lambda: c.get_queue_sender("q").send_messages(ServiceBusMessage("y")),
        ):
            with pytest.raises(ServiceBusConnectionError) as info:
                call()
            assert info.value.retryable
        own_server.restart()
        # without retries, a call on a pooled connection left idle since the server went away can
        # fail once more (retryable): asyncio sees the closed socket only when it reads from it
        got = None
        for _ in range(3):
            try:
                got = receiver.receive_messages(2, max_wait_time=2)
                break
            except ServiceBusConnectionError as e:
                assert e.retryable
        assert got is not None and [str(m) for m in got] == ["x"]
        receiver.close()


def test_cluster_seeds_that_do_not_answer(sb_api: Any, redis_cluster: RedisCluster, queue_name: str) -> None:
    dead = f"127.0.0.1:{free_port()}"
    live = ",".join(f"127.0.0.1:{n.port}" for n in redis_cluster.primaries)
    with sb_api.ServiceBusAdministrationClient.from_connection_string(f"redis+cluster://{dead},{live}") as admin:
        admin.create_queue(queue_name)
        try:
            with sb_api.ServiceBusClient.from_connection_string(f"redis+cluster://{dead},{live}") as c:
                c.get_queue_sender(queue_name).send_messages(ServiceBusMessage("x"))
                with c.get_queue_receiver(queue_name) as r:
                    assert [str(m) for m in r.receive_messages(1, max_wait_time=2)] == ["x"]
        finally:
            admin.delete_queue(queue_name)
    other = f"127.0.0.1:{free_port()}"
    with (
        sb_api.ServiceBusClient.from_connection_string(f"redis+cluster://{dead},{other}", retry_total=0) as c,
        pytest.raises(ServiceBusConnectionError, match="No node of the cluster"),
    ):
        c.get_queue_sender(queue_name).send_messages(ServiceBusMessage("x"))


def test_cluster_wait_for_replicas_without_replicas_is_in_doubt(
    sb_api: Any, redis_cluster: RedisCluster, queue_name: str
) -> None:
    with sb_api.ServiceBusAdministrationClient.from_connection_string(redis_cluster.url) as admin:
        admin.create_queue(queue_name)
        try:
            with sb_api.ServiceBusClient.from_connection_string(
                redis_cluster.url, wait_for_replicas=1, durability_timeout=0.05, retry_total=0
            ) as c:
                with pytest.raises(ServiceBusConnectionError) as info:
                    c.get_queue_sender(queue_name).send_messages(ServiceBusMessage("x"))
                assert "0 of 1 replicas" in info.value.message and info.value.retryable
                with c.get_queue_receiver(queue_name) as r:
                    assert [str(m) for m in r.peek_messages(5)] == ["x"]  # stored on the primary: in doubt
        finally:
            admin.delete_queue(queue_name)


@pytest.fixture()
def small_cluster() -> Iterator[RedisCluster]:
    c = RedisCluster(3, 0).start()
    yield c
    c.stop()


def test_a_killed_cluster_primary(sb_api: Any, small_cluster: RedisCluster) -> None:
    cluster = small_cluster
    admin = sb_api.ServiceBusAdministrationClient.from_connection_string(cluster.url, **FAST)
    admin.create_queue("q", enable_partitioning=True, partition_count=8)
    first = cluster.primaries[0].client()
    step = 16384 // len(cluster.primaries)

    def node_of(p: int) -> int:
        return min(int(first.execute_command("CLUSTER", "KEYSLOT", partition_keys("q", p)[0])) // step, 2)

    dead_parts = [p for p in range(8) if node_of(p) == 1]
    assert dead_parts and len(dead_parts) < 8
    with sb_api.ServiceBusClient.from_connection_string(cluster.url, **FAST) as c:
        s = c.get_queue_sender("q")
        s.send_messages([ServiceBusMessage(f"k{i}", partition_key=f"k{i}") for i in range(24)])
        cluster.kill(1)
        key = next(k for k in (f"key-{i}" for i in range(1000)) if partition_of(k, 8) in dead_parts)
        with pytest.raises(ServiceBusConnectionError) as info:
            s.send_messages(ServiceBusMessage("pinned", partition_key=key))
        assert info.value.retryable and f"partition {partition_of(key, 8)} of 'q'" in info.value.message
        with c.get_queue_receiver("q", max_wait_time=0.5) as r:
            got: list[Any] = []
            while batch := r.receive_messages(50, max_wait_time=0.5):
                got += batch
                r.complete_messages(batch)
        assert got and all(m.partition_id not in dead_parts for m in got)
        with pytest.raises(ServiceBusConnectionError) as err:
            admin.create_queue("new", enable_partitioning=True, partition_count=8)
        assert "nothing was changed" in err.value.message
    admin.close()


@pytest.mark.parametrize("appendonly", ["yes", "no"])
def test_wait_for_aof(sb_api: Any, appendonly: str) -> None:
    """Redis >= 7.2: a send returns once fsynced (appendonly on); a server without an append-only
    file, or Redis 6.2 (no WAITAOF), gives a typed error that retrying cannot cure."""
    from sbredis.exceptions import InvalidOperationError
    from tests.reliability.test_redis_kills import redis_72_binary

    new = RedisServer("--appendonly", appendonly, "--appendfsync", "always", binary=redis_72_binary()).start()
    old = RedisServer().start()  # the default binary: Redis 6.2
    try:
        for srv in (new, old):
            with sb_api.ServiceBusAdministrationClient.from_connection_string(srv.url) as admin:
                admin.create_queue("q")
        opts = {"wait_for_aof": True, "durability_timeout": 0.2, "retry_total": 0}
        with sb_api.ServiceBusClient.from_connection_string(new.url, **opts) as c:
            s = c.get_queue_sender("q")
            if appendonly == "yes":
                s.send_messages(ServiceBusMessage("x"))
            else:
                with pytest.raises(InvalidOperationError, match="needs appendonly on the server") as info:
                    s.send_messages(ServiceBusMessage("x"))
                assert not info.value.retryable and "the send was stored" in info.value.message
        assert peek_all(sb_api, new.url, "q") == ["x"]  # stored either way
        with (
            sb_api.ServiceBusClient.from_connection_string(old.url, **opts) as c,
            pytest.raises(InvalidOperationError, match=r"Redis 7\.2 or later"),
        ):
            c.get_queue_sender("q").send_messages(ServiceBusMessage("x"))
    finally:
        new.stop()
        old.stop()


def test_connection_options_redis_refuses_are_typed(sb_api: Any, redis_server: RedisServer) -> None:
    from sbredis.exceptions import InvalidArgumentError

    with pytest.raises(InvalidArgumentError, match="invalid connection option") as info:
        sb_api.ServiceBusClient.from_connection_string(redis_server.url, no_such_option=1)
    assert "no_such_option" in info.value.message
    with pytest.raises(InvalidArgumentError, match="cannot parse the connection string"):
        sb_api.ServiceBusClient.from_connection_string("redis://127.0.0.1:99999/0")
