"""Fault: a Redis Cluster primary SIGKILLed while a sender sends round robin.

- 3 primaries, no replicas: unkeyed sends move past the dead partitions (asserted: at least 99 %
  succeed); a send keyed to a dead partition fails with a retryable ServiceBusConnectionError naming
  it; once the node returns (AOF always) no acknowledged message is missing. Duplicates (a send in
  doubt at the kill, moved to a live partition) are counted.
- 3 primaries with a replica each: the replica takes over. Measured (not asserted: replication is
  asynchronous and we claim only what was measured): acknowledged messages missing after the
  failover, without and with ``wait_for_replicas=1``.

CI: 2,000 sends per run; SBREDIS_BATTERY_SCALE=full: 20,000 (5,000 with WAIT). Reports:
bench/results/reliability/cluster_kill_<setup>.<scale>.json.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections import Counter
from typing import Any

import pytest

from sbredis import ServiceBusClient, ServiceBusMessage
from sbredis._core.ops import partition_of
from sbredis.exceptions import ServiceBusConnectionError, ServiceBusError
from sbredis.management import ServiceBusAdministrationClient
from tests.redis_cluster import RedisCluster
from tests.reliability.conftest import scaled, write_report

pytestmark = [pytest.mark.integration, pytest.mark.reliability, pytest.mark.cluster]
OPTS = {"retry_total": 12, "retry_backoff_factor": 0.05, "retry_backoff_max": 0.5, "socket_timeout": 2}
PARTITIONS = 16


def drain(url: str, q: str) -> Counter[str]:
    """Every message of the queue, once every partition answers (a failover settles first)."""
    got: Counter[str] = Counter()
    deadline = time.monotonic() + 60
    with (
        ServiceBusAdministrationClient.from_connection_string(url, **OPTS) as admin,
        ServiceBusClient.from_connection_string(url, **OPTS) as c,
        c.get_queue_receiver(q) as r,
    ):
        while time.monotonic() < deadline:
            while batch := r.receive_messages(500, max_wait_time=0.5):
                got.update(str(m) for m in batch)
                r.complete_messages(batch)
            try:
                props = admin.get_queue_runtime_properties(q)
            except ServiceBusError:
                continue
            if not props.limited and props.active_message_count == 0:
                return got
            time.sleep(0.2)
    raise AssertionError("the queue could not be drained: a partition stayed unreachable")


def run(cluster: RedisCluster, setup: str, wait_for_replicas: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    # with WAIT, every send that lands on the promoted replica's partitions waits out the durability
    # timeout first (it has no replica of its own), so that run is shorter
    total = scaled(2_000, 5_000 if wait_for_replicas else 20_000)
    q = "ck-" + setup
    with ServiceBusAdministrationClient.from_connection_string(cluster.url, **OPTS) as admin:
        admin.create_queue(q, enable_partitioning=True, partition_count=PARTITIONS)
    victim = rng.randrange(len(cluster.primaries))
    kill_after = rng.randrange(total // 4, total // 2)
    acked: set[int] = set()
    failed: list[tuple[int, str]] = []
    kill_at: list[float] = []
    t0 = time.monotonic()
    # a promoted replica has no replica of its own: WAIT on its partitions times out (in doubt) and
    # the unkeyed send moves on, so a short durability timeout keeps long runs short
    durable = {"wait_for_replicas": wait_for_replicas, "durability_timeout": 0.05}
    with ServiceBusClient.from_connection_string(cluster.url, **durable, **OPTS) as c:
        s = c.get_queue_sender(q)
        killer = None
        for i in range(total):
            if i == kill_after:
                kill_at.append(round(time.monotonic() - t0, 3))
                killer = threading.Thread(target=cluster.kill, args=(victim,))
                killer.start()  # the kill lands while sends are in flight
            try:
                s.send_messages(ServiceBusMessage(f"m{i}"))
                acked.add(i)
            except ServiceBusError as e:
                failed.append((i, type(e).__name__))
        if killer:
            killer.join()
        dead_parts = [p for p in range(PARTITIONS) if node_of_live(cluster, q, p, victim)]
        keyed_error = ""
        if not cluster.replicas:
            key = next(k for k in (f"key-{j}" for j in range(1000)) if partition_of(k, PARTITIONS) in dead_parts)
            try:
                s.send_messages(ServiceBusMessage("pinned", partition_key=key))
                keyed_error = "none: the keyed send succeeded"
            except ServiceBusConnectionError as e:
                keyed_error = e.message
    elapsed = time.monotonic() - t0
    if not cluster.replicas:  # the dead node returns (AOF always) before the count
        cluster.primaries[victim].start()
    cluster.wait_ok(30)
    stored = drain(cluster.url, q)
    lost = sorted(i for i in acked if stored[f"m{i}"] == 0)
    return {
        "seed": seed,
        "setup": setup,
        "redis": "3 primaries" + (" + 1 replica each" if cluster.replicas else ", no replicas") + ", AOF always",
        "wait_for_replicas": wait_for_replicas,
        "sent": total,
        "acknowledged": len(acked),
        "acknowledged_share": round(len(acked) / total, 4),
        "failed": len(failed),
        "failed_kinds": dict(Counter(k for _, k in failed)),
        "completed": sum(stored.values()),
        "lost": len(lost),
        "lost_note": "acknowledged but not found after the failover"
        if cluster.replicas
        else "acknowledged but not found after the dead node returned",
        "duplicated": sum(1 for n in stored.values() if n > 1),
        "dead_lettered": 0,
        "kills": 1,
        "kill_times": [{"at_s": kill_at[0] if kill_at else None, "after_send": kill_after, "primary": victim}],
        "keyed_send_to_dead_partition": keyed_error,
        "elapsed_s": round(elapsed, 1),
    }


def node_of_live(cluster: RedisCluster, q: str, p: int, victim: int) -> bool:
    """Partition p lived on the victim (asked of a node that is still up)."""
    from sbredis._core.keys import partition_keys

    alive = next(n for i, n in enumerate(cluster.primaries) if i != victim)
    slot = int(alive.client().execute_command("CLUSTER", "KEYSLOT", partition_keys(q, p)[0]))
    return min(slot // (16384 // len(cluster.primaries)), len(cluster.primaries) - 1) == victim


@pytest.mark.timeout(900)
def test_primary_killed_without_replicas() -> None:
    seed = int(os.environ.get("SBREDIS_BATTERY_SEED", random.randrange(1 << 30)))
    cluster = RedisCluster(3, 0, "--appendonly", "yes", "--appendfsync", "always").start()
    try:
        report = run(cluster, "no_replicas", 0, seed)
    finally:
        cluster.stop()
    print(write_report("cluster_kill_no_replicas", report))
    assert report["acknowledged_share"] >= 0.99, report
    assert "partition" in report["keyed_send_to_dead_partition"], report
    assert report["lost"] == 0, report  # the node came back with its AOF


@pytest.mark.timeout(900)
@pytest.mark.parametrize("wait", [0, 1], ids=["no-wait", "wait-for-replicas"])
def test_primary_killed_with_replicas(wait: int) -> None:
    seed = int(os.environ.get("SBREDIS_BATTERY_SEED", random.randrange(1 << 30)))
    cluster = RedisCluster(3, 1, "--appendonly", "yes", "--appendfsync", "always").start()
    try:
        report = run(cluster, f"replicas_wait{wait}", wait, seed)
    finally:
        cluster.stop()
    print(write_report(f"cluster_kill_replicas_wait{wait}", report))
    assert report["acknowledged_share"] >= 0.99, report
