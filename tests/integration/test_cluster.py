"""Redis Cluster specifics: partitions spread over the primaries, availability with a primary
killed (SIGKILL), failover to a replica, seeds, AUTH, and waiting for replicas."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sbredis import ServiceBusClient, ServiceBusMessage
from sbredis._core.keys import partition_keys
from sbredis._core.ops import partition_of
from sbredis.exceptions import ServiceBusAuthenticationError, ServiceBusConnectionError
from sbredis.management import ServiceBusAdministrationClient
from tests.redis_cluster import RedisCluster
from tests.redis_server import free_port

pytestmark = [pytest.mark.integration, pytest.mark.cluster]
FAST = {"retry_total": 2, "retry_backoff_factor": 0.05, "socket_timeout": 2}


@pytest.fixture()
def cluster() -> Iterator[RedisCluster]:
    c = RedisCluster(3, 0, "--appendonly", "yes", "--appendfsync", "always").start()
    yield c
    c.stop()


def node_of(cluster: RedisCluster, queue: str, p: int) -> int:
    """Index of the primary holding partition p."""
    slot = cluster.primaries[0].client().execute_command("CLUSTER", "KEYSLOT", partition_keys(queue, p)[0])
    step = 16384 // len(cluster.primaries)
    return min(int(slot) // step, len(cluster.primaries) - 1)


def test_partitions_spread_over_every_primary(redis_cluster: RedisCluster) -> None:
    with ServiceBusAdministrationClient.from_connection_string(redis_cluster.url) as admin:
        admin.create_queue("spread", enable_partitioning=True, partition_count=16)
        props = admin.get_queue_runtime_properties("spread")
        nodes = {p.node for p in props.partitions}
        assert nodes == {f"127.0.0.1:{n.port}" for n in redis_cluster.primaries}
        assert not props.limited
        admin.delete_queue("spread")


def test_a_dead_seed_is_skipped(redis_cluster: RedisCluster) -> None:
    dead = f"127.0.0.1:{free_port()}"
    live = ",".join(f"127.0.0.1:{n.port}" for n in redis_cluster.primaries)
    with ServiceBusAdministrationClient.from_connection_string(f"redis+cluster://{dead},{live}") as admin:
        admin.create_queue("seeds")
        try:
            with ServiceBusClient.from_connection_string(f"redis+cluster://{dead},{live}") as c:
                c.get_queue_sender("seeds").send_messages(ServiceBusMessage("x"))
                with c.get_queue_receiver("seeds") as r:
                    assert [str(m) for m in r.receive_messages(1, max_wait_time=2)] == ["x"]
        finally:
            admin.delete_queue("seeds")


def test_a_killed_primary(cluster: RedisCluster) -> None:
    admin = ServiceBusAdministrationClient.from_connection_string(cluster.url, **FAST)
    admin.create_queue("q", enable_partitioning=True, partition_count=16)
    dead = 1
    dead_parts = [p for p in range(16) if node_of(cluster, "q", p) == dead]
    live_parts = [p for p in range(16) if p not in dead_parts]
    assert dead_parts and live_parts
    with ServiceBusClient.from_connection_string(cluster.url, **FAST) as c:
        s = c.get_queue_sender("q")
        s.send_messages([ServiceBusMessage(f"before-{p}", partition_key=f"k{p}") for p in range(40)])
        cluster.kill(dead)

        # unkeyed sends go round-robin and move past the dead partitions: all succeed
        ok = 0
        for i in range(100):
            s.send_messages(ServiceBusMessage(f"rr-{i}"))
            ok += 1
        assert ok == 100

        # a send pinned to a dead partition fails, retryable, naming the partition
        key = next(k for k in (f"key-{i}" for i in range(1000)) if partition_of(k, 16) in dead_parts)
        with pytest.raises(ServiceBusConnectionError) as info:
            s.send_messages(ServiceBusMessage("pinned", partition_key=key))
        assert info.value.retryable
        assert f"partition {partition_of(key, 16)} of 'q'" in info.value.message

        # receives keep serving from the live partitions
        with c.get_queue_receiver("q", max_wait_time=0.5) as r:
            got = []
            while batch := r.receive_messages(50, max_wait_time=0.5):
                got += batch
                r.complete_messages(batch)
        bodies = {str(m) for m in got}
        assert {f"rr-{i}" for i in range(100)} <= bodies
        assert all(m.partition_id in live_parts for m in got)

        # runtime properties say which partitions are missing instead of failing
        props = admin.get_queue_runtime_properties("q")
        assert props.limited and sorted(props.missing_partitions) == dead_parts

        # entity changes need every partition: a clear error, nothing written
        with pytest.raises(ServiceBusConnectionError) as err:
            admin.create_queue("new", enable_partitioning=True, partition_count=16)
        assert "nothing was changed" in err.value.message
        assert "new" not in [q.name for q in admin.list_queues()]

        # the node comes back (AOF, appendfsync always): its messages are there, keyed sends work again
        cluster.primaries[dead].start()
        cluster.wait_ok()
        s.send_messages(ServiceBusMessage("pinned", partition_key=key))
        with c.get_queue_receiver("q", max_wait_time=0.5) as r:
            rest = []
            while batch := r.receive_messages(50, max_wait_time=0.5):
                rest += batch
                r.complete_messages(batch)
        assert {str(m) for m in rest} >= {"pinned"} | {
            f"before-{p}" for p in range(40) if partition_of(f"k{p}", 16) in dead_parts
        }
        assert not admin.get_queue_runtime_properties("q").limited
    admin.close()


def test_failover_to_a_replica_keeps_keyed_sends_working() -> None:
    cluster = RedisCluster(3, 1).start()
    try:
        admin = ServiceBusAdministrationClient.from_connection_string(cluster.url)
        admin.create_queue("q", enable_partitioning=True, partition_count=4, requires_duplicate_detection=True)
        opts = {"retry_total": 12, "retry_backoff_factor": 0.1, "retry_backoff_max": 1.0, "socket_timeout": 2}
        with ServiceBusClient.from_connection_string(cluster.url, wait_for_replicas=1, **opts) as c:
            # acknowledged only once the replica has them (WAIT)
            c.get_queue_sender("q").send_messages([ServiceBusMessage(str(i), message_id=str(i)) for i in range(20)])
        victim = node_of(cluster, "q", partition_of("0", 4))
        cluster.kill(victim)
        with ServiceBusClient.from_connection_string(cluster.url, **opts) as c:
            # the replica takes over within the node timeout; the retry policy rides it out, and the
            # scripts load again on the new primary (NOSCRIPT)
            after = next(k for k in (f"after-{i}" for i in range(100)) if partition_of(k, 4) == partition_of("0", 4))
            c.get_queue_sender("q").send_messages(ServiceBusMessage("after", message_id=after))
            with c.get_queue_receiver("q", max_wait_time=0.5) as r:
                got = []
                while batch := r.receive_messages(50, max_wait_time=1):
                    got += batch
                    r.complete_messages(batch)
        assert sorted(str(m) for m in got) == sorted([*map(str, range(20)), "after"])
        admin.close()
    finally:
        cluster.stop()


def test_auth_on_the_cluster() -> None:
    cluster = RedisCluster(3, 0, "--requirepass", "s3cret", "--masterauth", "s3cret")
    for n in cluster.nodes:  # the harness talks to the nodes with the password too
        n.password = "s3cret"
    try:
        cluster.start()
        seeds = ",".join(f"127.0.0.1:{n.port}" for n in cluster.primaries)
        with ServiceBusAdministrationClient.from_connection_string(f"redis+cluster://:s3cret@{seeds}") as admin:
            admin.create_queue("q", enable_partitioning=True, partition_count=4)
        with ServiceBusClient.from_connection_string(f"redis+cluster://:s3cret@{seeds}") as c:
            c.get_queue_sender("q").send_messages(ServiceBusMessage("x"))
        with ServiceBusClient.from_connection_string(f"redis+cluster://:wrong-pass@{seeds}", retry_total=0) as c:
            with pytest.raises(ServiceBusAuthenticationError) as info:
                c.get_queue_sender("q").send_messages(ServiceBusMessage("x"))
            assert "wrong-pass" not in str(info.value)
            assert "wrong-pass" not in repr(c)
    finally:
        cluster.stop()


def test_wait_for_replicas_without_replicas_reports_in_doubt(redis_cluster: RedisCluster, queue_name: str) -> None:
    with ServiceBusAdministrationClient.from_connection_string(redis_cluster.url) as admin:
        admin.create_queue(queue_name)
    with ServiceBusClient.from_connection_string(
        redis_cluster.url, wait_for_replicas=1, durability_timeout=0.05, retry_total=0
    ) as c:
        with pytest.raises(ServiceBusConnectionError) as info:
            c.get_queue_sender(queue_name).send_messages(ServiceBusMessage("x"))
        assert "0 of 1 replicas" in info.value.message
        with c.get_queue_receiver(queue_name) as r:
            assert [str(m) for m in r.peek_messages(5)] == ["x"]  # stored on the primary: in doubt, not lost


def test_cluster_url_errors_are_typed(redis_cluster: RedisCluster) -> None:
    from sbredis.exceptions import InvalidArgumentError

    for bad in ("redis+cluster://", "redis+cluster://host", "redis+cluster://h:1/3", "redis+cluster://h:x"):
        with pytest.raises(InvalidArgumentError):
            ServiceBusClient.from_connection_string(bad)
