"""The overview's counts (one pipelined read for every entity) agree with the admin client's
runtime properties, entity by entity and partition by partition, on a standalone server, on a
3-primary cluster (one call per partition there, each on its own node) and on memory://."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from sbredis import ServiceBusMessage, ServiceBusSubQueue
from sbredis.dashboard.counts import Rates, Reader

pytestmark = [pytest.mark.integration, pytest.mark.conformance]


def test_counts_match_runtime_properties(url: str, backend: str) -> None:
    # this folder's `admin` and `client` fixtures serve the browser tests' server: the backend's own here
    from sbredis import ServiceBusClient
    from sbredis._sync._transport import Transport
    from sbredis.management import ServiceBusAdministrationClient

    with (
        ServiceBusAdministrationClient.from_connection_string(url) as admin,
        ServiceBusClient.from_connection_string(url) as client,
    ):
        check(url, admin, client, backend, Transport)


def check(url: str, admin: Any, client: Any, backend: str, Transport: Any) -> None:  # noqa: N803

    q, t, gone = (f"{p}-{uuid.uuid4().hex[:8]}" for p in ("cq", "ct", "gone"))
    admin.create_queue(q, enable_partitioning=True, partition_count=4)
    admin.create_queue(gone)
    admin.create_topic(t, enable_partitioning=True, partition_count=2, max_size_in_megabytes=2048)
    admin.create_subscription(t, "s")
    admin.create_subscription(t, "lost", forward_to=gone)
    admin.delete_queue(gone)
    try:
        with client.get_queue_sender(q) as s:
            s.send_messages([ServiceBusMessage(f"m{i}", session_id=None) for i in range(20)])
            s.schedule_messages([ServiceBusMessage("later")], datetime.now(UTC) + timedelta(hours=1))
        with client.get_queue_receiver(q) as r:
            got = r.receive_messages(6, max_wait_time=2)
            while len(got) < 6:
                got += r.receive_messages(6 - len(got), max_wait_time=2)
            r.dead_letter_messages(got[:3], reason="x")
            r.defer_message(got[3])
            # got[4:6] stay locked
            with client.get_topic_sender(t) as ts:
                ts.send_messages([ServiceBusMessage("e1"), ServiceBusMessage("e2")])
                ts.schedule_messages([ServiceBusMessage("e3")], datetime.now(UTC) + timedelta(hours=1))
            transport = Transport(url)
            rates = Rates()
            try:
                found = {e.name: e for e in Reader(transport).read()}
                # an entity page reads only its entity: the same counts (a topic's from its subscriptions,
                # a subscription's quota from its topic)
                alone = {n: Reader(transport).read(n)[0] for n in (t, f"{t}/Subscriptions/s", q)}
                assert [e.name for e in Reader(transport).read(t)] == [t]
                with_helpers = [e.name for e in Reader(transport).read(t, helpers=True)]  # for the topic's rates
                assert with_helpers[0] == t and sorted(with_helpers[1:]) == [
                    f"{t}/Subscriptions/{n}" for n in ("lost", "s")
                ]
            finally:
                transport.close()
            rates.update(list(found.values()), now=0.0)
            qp = admin.get_queue_runtime_properties(q)
        ent = found[q]
        assert ent.counts["active"] == qp.active_message_count == 17
        assert ent.counts["locked"] == 2 and ent.counts["deferred"] == 1
        assert ent.counts["scheduled"] == qp.scheduled_message_count == 1
        assert ent.counts["dead_letter"] == qp.dead_letter_message_count == 3
        assert ent.counts["size"] == qp.size_in_bytes
        by_partition = {p.partition_id: p for p in ent.partitions}
        for p in qp.partitions:
            mine = by_partition[p.partition_id]
            assert (mine.counts["active"], mine.counts["dead_letter"]) == (
                p.active_message_count,
                p.dead_letter_message_count,
            )
            if backend != "memory":  # an in-process server has no address: each client names it its own way
                assert mine.node == p.node
        assert ent.total("seq") == 21 and ent.total("dseq") == 3  # ever stored / ever dead-lettered
        lost = found[f"{t}/Subscriptions/lost"]
        sp = admin.get_subscription_runtime_properties(t, "lost")
        assert lost.counts["transfer_dead_letter"] == sp.transfer_dead_letter_message_count == 2
        assert found[f"{t}/Subscriptions/s"].counts["active"] == 2
        assert found[t].kind == "topic" and found[t].partition_count == 2
        # a topic's counts are its subscriptions' (s: 2 active and the scheduled copy; lost: 2 it could
        # not forward), its size the admin client's (what its subscriptions store)
        topic, tp = found[t], admin.get_topic_runtime_properties(t)
        subs = [found[f"{t}/Subscriptions/{n}"] for n in ("s", "lost")]
        assert topic.counts["active"] == 2 and topic.counts["transfer_dead_letter"] == 2
        assert subs[0].counts["scheduled"] == 1
        assert topic.counts["scheduled"] == sum(s.counts["scheduled"] for s in subs) >= 1
        assert topic.counts["size"] == tp.size_in_bytes > 0
        assert topic.total("seq") == 3  # sent to the topic: its own counter
        for i, part in enumerate(topic.partitions):  # partition by partition too
            for k in ("active", "scheduled", "transfer_dead_letter", "size"):
                assert part.counts[k] == sum(s.partitions[i].counts[k] for s in subs), (i, k)
        for name, ent in alone.items():
            assert (ent.name, ent.counts, ent.max_size_bytes) == (name, found[name].counts, found[name].max_size_bytes)
        # size against quota: a subscription partition holds up to its topic's max_size_in_megabytes
        assert found[f"{t}/Subscriptions/s"].max_size_bytes == 2048 * 1024 * 1024 * 2
        assert ent.fill == ent.total("size") / (1024 * 1024 * 1024 * 4)  # the queue: 1024 MB a partition
        assert topic.fill == max(s.fill for s in subs) > 0
        with client.get_subscription_receiver(t, "lost", sub_queue=ServiceBusSubQueue.TRANSFER_DEAD_LETTER) as r:
            assert len(r.peek_messages(5, sequence_number=0)) == 2
        if backend == "cluster":
            assert len({p.node for p in ent.partitions}) > 1  # spread over the primaries, each one named
    finally:
        admin.delete_queue(q)
        admin.delete_topic(t)


def test_rates() -> None:
    from sbredis.dashboard.counts import WIDTH, Entity

    def entity(seq: int, dseq: int, active: int, name: str = "q") -> Entity:
        e = Entity(name, "queue", "Active", 1, 1 << 30)
        row = [0] * WIDTH
        row[0], row[1], row[7], row[8] = 1, active, seq, dseq
        e.rows = row
        return e

    rates = Rates()
    assert rates.update([entity(100, 0, 100)], now=10.0) == {}
    # 2 s later: 50 more sent, 10 dead-lettered, 130 active: 10 completed
    assert rates.update([entity(150, 10, 130)], now=12.0) == {
        "q": {"sent": 25.0, "completed": 5.0, "dead_lettered": 5.0}
    }
    # one entity's page reads only it: the others keep their own last reading
    assert rates.update([entity(0, 0, 0, "other")], now=12.0) == {}
    assert rates.update([entity(170, 10, 150)], now=13.0) == {
        "q": {"sent": 20.0, "completed": 0.0, "dead_lettered": 0.0}
    }
    assert rates.update([entity(10, 0, 0, "other")], now=14.0) == {
        "other": {"sent": 5.0, "completed": 5.0, "dead_lettered": 0.0}
    }


@pytest.mark.cluster
def test_pages_on_a_cluster(redis_cluster: Any) -> None:
    """On a 3-primary cluster the overview and an entity page show each partition's node."""
    import http.client
    import re

    from sbredis.dashboard.app import Settings
    from sbredis.dashboard.server import start
    from sbredis.management import ServiceBusAdministrationClient

    name = "cl-" + uuid.uuid4().hex[:8]
    url = str(redis_cluster.url)
    with ServiceBusAdministrationClient.from_connection_string(url) as admin:
        admin.create_queue(name, enable_partitioning=True, partition_count=8)
        running = start(Settings.make(url))
        try:
            conn = http.client.HTTPConnection("127.0.0.1", running.port, timeout=30)
            conn.request("GET", "/")
            overview = conn.getresponse().read().decode()
            conn.request("GET", f"/entity/{name}")
            page = conn.getresponse().read().decode()
            conn.close()
        finally:
            running.stop()
            admin.delete_queue(name)
    assert f'data-entity="{name}"' in overview
    nodes = set(re.findall(r"<td>(127\.0\.0\.1:\d+)</td>", page))
    assert len(nodes) >= 2, nodes  # 8 partitions over 3 primaries


def test_topic_rates_and_namespace_totals() -> None:
    """A topic's sent rate is what was sent to it, its completed and dead-lettered its subscriptions';
    the namespace's totals count a send once (not once per subscription copy)."""
    from sbredis.dashboard.counts import WIDTH, Entity, fold_topics, totals

    def entity(name: str, kind: str, seq: int, dseq: int, active: int) -> Entity:
        e = Entity(name, kind, "Active", 1, 1 << 30, topic="t" if kind == "subscription" else None)
        row = [0] * WIDTH
        row[0], row[1], row[7], row[8] = 1, active, seq, dseq
        e.rows = row
        return e

    def read(sent: int, a: tuple[int, int], b: tuple[int, int], queue: int) -> list[Entity]:
        found = [
            entity("t", "topic", sent, 0, 0),
            entity("t/Subscriptions/a", "subscription", sent, a[1], a[0]),
            entity("t/Subscriptions/b", "subscription", sent, b[1], b[0]),
            entity("q", "queue", queue, 0, queue),
        ]
        fold_topics(found)
        return found

    rates = Rates()
    rates.update(read(10, (10, 0), (10, 0), 0), now=0.0)
    # 1 s later: 20 more sent to the topic (both subscriptions take each); a completed 15, b dead-lettered 4
    found = read(30, (15, 0), (26, 4), 6)
    assert found[0].counts["active"] == 15 + 26 and found[0].counts["dead_letter"] == 0
    got = rates.update(found, now=1.0)
    assert got["t/Subscriptions/a"] == {"sent": 20.0, "completed": 15.0, "dead_lettered": 0.0}
    assert got["t/Subscriptions/b"] == {"sent": 20.0, "completed": 0.0, "dead_lettered": 4.0}
    assert got["t"] == {"sent": 20.0, "completed": 15.0, "dead_lettered": 4.0}
    assert totals(found, got) == {"sent": 26.0, "completed": 15.0, "dead_lettered": 4.0}
