"""Paired namespaces on two real redis-server processes (docs/paired-namespaces.md).

Each test starts its own primary (appendonly, fsync always, so what it acknowledged survives a
kill -9 and a restart on the same port and data directory) and its own secondary; the
session-scoped shared server is never touched.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from sbredis import (
    SendAvailabilityPairedNamespaceOptions,
    ServiceBusClient,
    ServiceBusMessage,
    ServiceBusSubQueue,
)
from sbredis.exceptions import (
    MessageSizeExceededError,
    MessagingEntityNotFoundError,
    ServiceBusConnectionError,
    ServiceBusError,
)
from sbredis.management import ServiceBusAdministrationClient
from sbredis.paired import PING_CONTENT_TYPE
from tests.conftest import eventually
from tests.redis_server import RedisServer

FAST = {"retry_total": 0, "socket_timeout": 2.0}  # a dead primary fails at once


class Pair:
    def __init__(self) -> None:
        self.primary = RedisServer("--appendonly", "yes", "--appendfsync", "always").start()
        self.secondary = RedisServer("--appendonly", "yes", "--appendfsync", "always").start()

    def options(self, **kwargs: Any) -> SendAvailabilityPairedNamespaceOptions:
        base: dict[str, Any] = {
            "backlog_queue_count": 2,
            "failover_interval": 0,
            "ping_primary_interval": 0.2,
            "syphon_poll_interval": 0.05,
        }
        base.update(kwargs)
        return SendAvailabilityPairedNamespaceOptions(secondary=self.secondary.url, **base)

    def client(self, **kwargs: Any) -> ServiceBusClient:
        return ServiceBusClient(self.primary.url, paired_namespace=self.options(**kwargs), **FAST)

    def admin(self, which: str = "primary") -> ServiceBusAdministrationClient:
        return ServiceBusAdministrationClient(getattr(self, which).url)

    def backlog_counts(self, n: int = 2) -> list[int]:
        with self.admin("secondary") as a:
            return [a.get_queue_runtime_properties(f"x-servicebus-transfer/{i}").active_message_count for i in range(n)]

    def stop(self) -> None:
        self.primary.stop()
        self.secondary.stop()


@pytest.fixture()
def pair() -> Iterator[Pair]:
    p = Pair()
    yield p
    p.stop()


def drain(c: ServiceBusClient, queue: str, expected: int, timeout: float = 20.0) -> list[Any]:
    """Receive (and complete) until `expected` messages arrived; then make sure no more come."""
    got: list[Any] = []
    deadline = time.monotonic() + timeout
    with c.get_queue_receiver(queue) as r:
        while len(got) < expected and time.monotonic() < deadline:
            batch = r.receive_messages(100, max_wait_time=0.5)
            for m in batch:
                got.append(m)
            if batch:
                r.complete_messages(batch)
        got += r.receive_messages(100, max_wait_time=0.5)  # nothing beyond what was sent
    return got


# ------------------------------------------------------------------ backlog queues
def test_backlog_queues_are_created_with_the_reference_properties_and_existing_ones_used_as_they_are(
    pair: Pair, caplog: pytest.LogCaptureFixture
) -> None:
    with pair.admin("secondary") as a:
        a.create_queue("x-servicebus-transfer/1", max_delivery_count=5)  # differs from the table
        a.create_queue("x-servicebus-transfer/7")  # an extra one
    with pair.client(backlog_queue_count=3) as c, caplog.at_level(logging.WARNING, "sbredis"):
        assert c.paired_namespace is not None
        c.paired_namespace.create_backlog_queues()
        c.paired_namespace.create_backlog_queues()  # again: nothing changes
    with pair.admin("secondary") as a:
        names = sorted(q.name for q in a.list_queues())
        assert names == [f"x-servicebus-transfer/{i}" for i in (0, 1, 2, 7)]
        for i in (0, 2):
            p = a.get_queue(f"x-servicebus-transfer/{i}")
            assert p.max_size_in_megabytes == 5120
            assert p.max_delivery_count == 2**31 - 1
            assert p.lock_duration == timedelta(minutes=1)
            assert p.default_message_time_to_live.days > 10_000_000
            assert p.auto_delete_on_idle.days > 10_000_000
            assert p.dead_lettering_on_message_expiration is True
            assert p.enable_batched_operations is True
        assert a.get_queue("x-servicebus-transfer/1").max_delivery_count == 5
    warnings = [r.getMessage() for r in caplog.records if "x-servicebus-transfer/1" in r.getMessage()]
    assert warnings and "max_delivery_count=5" in warnings[0]


def test_a_healthy_primary_takes_every_send_and_the_secondary_is_not_touched(pair: Pair) -> None:
    with pair.admin() as a:
        a.create_queue("orders")
    with pair.client() as c:
        with c.get_queue_sender("orders") as s:
            s.send_messages([ServiceBusMessage(str(i)) for i in range(20)])
        assert [str(m) for m in drain(c, "orders", 20)] == [str(i) for i in range(20)]
        assert c.paired_namespace is not None
        metrics = c.paired_namespace.metrics
        assert metrics.as_dict() == {k: 0 for k in metrics.as_dict()}
    with pair.admin("secondary") as a:
        assert list(a.list_queues()) == []


# ------------------------------------------------------------------ kill -9 mid-stream
@pytest.mark.parametrize("sessions", [False, True], ids=["plain", "sessions-ttl"])
def test_kill_9_primary_mid_stream_every_acknowledged_send_arrives(pair: Pair, sessions: bool) -> None:
    """A sender keeps sending while the primary is killed: acknowledged sends go to a backlog
    queue; after the primary returns, the syphon moves them in order with their properties."""
    total, kill_after = 240, 80
    with pair.admin() as a:
        if sessions:  # sessions by partition key over 4 partitions; duplicate detection drops the in-flight repeat
            a.create_queue("orders", enable_partitioning=True, partition_count=4, requires_duplicate_detection=True)
        else:
            a.create_queue("orders")
    acked: list[int] = []
    failed: list[int] = []
    killed = threading.Event()
    with pair.client(enable_syphon=True) as c:
        paired = c.paired_namespace
        assert paired is not None

        def send_all() -> None:
            with c.get_queue_sender("orders") as s:
                for i in range(total):
                    m = ServiceBusMessage(str(i), application_properties={"i": i}, message_id=f"m{i}")
                    if sessions:
                        m.session_id = f"s{i % 4}"
                        m.time_to_live = timedelta(minutes=2)
                    try:
                        s.send_messages(m)
                        acked.append(i)
                    except ServiceBusError:
                        failed.append(i)
                    if i == kill_after:
                        killed.wait(10)

        sender = threading.Thread(target=send_all)
        sender.start()
        eventually(lambda: len(acked) > kill_after, 10)
        pair.primary.kill()
        killed.set()
        sender.join(60)
        assert not sender.is_alive()
        assert paired.unavailable_entities == ["orders"]
        assert paired.metrics.backlog_messages_sent >= total - kill_after - 2
        assert failed == []  # failover_interval 0: the first failed send already went to the backlog
        eventually(lambda: paired.metrics.ping_failures >= 1, 5)

        pair.primary.start()  # same port, same data directory: the acknowledged sends are there
        eventually(lambda: paired.unavailable_entities == [], 10)
        got = drain(c, "orders", total, timeout=30)
        metrics = paired.metrics

    bodies = [int(str(m)) for m in got]
    assert set(bodies) == set(acked) == set(range(total))
    assert len(bodies) - len(set(bodies)) <= (0 if sessions else 1)  # plain: the in-flight send may repeat
    for m in got:
        i = int(str(m))
        assert m.content_type != PING_CONTENT_TYPE
        assert m.sent_application_properties == {"i": i}  # x-ms-* are gone again
        assert m.message_id == f"m{i}"
        if sessions:
            assert m.session_id == f"s{i % 4}"
            assert m.time_to_live == timedelta(minutes=2)
        else:
            assert m.session_id is None and m.time_to_live is None
    if sessions:
        for s in range(4):
            order = [int(str(m)) for m in got if m.session_id == f"s{s}"]
            assert order == sorted(order), f"session s{s} out of order"
    else:
        first = [b for k, b in enumerate(bodies) if b not in bodies[:k]]
        assert first == sorted(first)
    assert metrics.pings >= 1 and metrics.failbacks == 1
    assert metrics.siphon_messages_sent == metrics.backlog_messages_sent
    assert metrics.backlog_messages_received >= metrics.backlog_messages_sent
    assert pair.backlog_counts() == [0, 0]


def test_no_ping_message_is_ever_received_peeked_or_dead_lettered(pair: Pair) -> None:
    with pair.admin() as a:
        a.create_queue("orders", dead_lettering_on_message_expiration=True)
    with pair.client(ping_primary_interval=0.05) as c:
        paired = c.paired_namespace
        assert paired is not None
        with c.get_queue_sender("orders") as s:
            s.send_messages(ServiceBusMessage("before"))
            pair.primary.kill()
            s.send_messages(ServiceBusMessage("during"))
            time.sleep(0.2)  # a few failed pings
            pair.primary.start()
            eventually(lambda: paired.unavailable_entities == [], 10)
            time.sleep(1.2)  # a stored 1-second ping would have expired into the dead-letter subqueue by now
            s.send_messages(ServiceBusMessage("after"))
        assert paired.metrics.pings >= 2
        with c.get_queue_receiver("orders") as r:
            assert [str(m) for m in r.peek_messages(10)] == ["before", "after"]
        with c.get_queue_receiver("orders", sub_queue=ServiceBusSubQueue.DEAD_LETTER) as r:
            assert r.peek_messages(10) == []
        assert [str(m) for m in drain(c, "orders", 2)] == ["before", "after"]


# ------------------------------------------------------------------ the timer, user errors, the rotation
def test_sends_fail_until_the_failover_interval_passes_with_no_success(pair: Pair) -> None:
    with pair.admin() as a:
        a.create_queue("orders")
    with pair.client(failover_interval=0.6) as c, c.get_queue_sender("orders") as s:
        s.send_messages(ServiceBusMessage("warm"))  # the entity's metadata is cached
        pair.primary.kill()
        start = time.monotonic()
        with pytest.raises(ServiceBusConnectionError):
            s.send_messages(ServiceBusMessage("first"))

        def diverted() -> bool:
            try:
                s.send_messages(ServiceBusMessage("later"))
                return True
            except ServiceBusConnectionError:
                return False

        eventually(diverted, 5, interval=0.05)
        assert time.monotonic() - start >= 0.6
        assert c.paired_namespace is not None and c.paired_namespace.metrics.backlog_messages_sent == 1


def test_the_callers_own_errors_never_fail_over(pair: Pair) -> None:
    with pair.admin() as a:
        a.create_queue("small", max_message_size_in_kilobytes=1)
    with pair.client() as c:
        with pytest.raises(MessagingEntityNotFoundError), c.get_queue_sender("missing") as s:
            s.send_messages(ServiceBusMessage("x"))
        with c.get_queue_sender("small") as s:
            s.send_messages(ServiceBusMessage("fits"))
            pair.primary.kill()
            with pytest.raises(MessageSizeExceededError):
                s.send_messages(ServiceBusMessage(b"x" * 2048))
        assert c.paired_namespace is not None
        assert c.paired_namespace.metrics.failovers == 0
        assert c.paired_namespace.unavailable_entities == []


def test_a_failing_backlog_queue_leaves_the_rotation_for_every_sender(pair: Pair) -> None:
    with pair.admin() as a:
        a.create_queue("orders")
    with pair.client() as c:
        paired = c.paired_namespace
        assert paired is not None
        paired.create_backlog_queues()
        with pair.admin("secondary") as a:
            q = a.get_queue("x-servicebus-transfer/0")
            a.update_queue(q, status="SendDisabled")
        senders = [c.get_queue_sender("orders") for _ in range(20)]
        senders[0].send_messages(ServiceBusMessage("warm"))
        pair.primary.kill()
        for k, s in enumerate(senders):  # each picks one of the 2 queues at random; the first on 0 fails it
            s.send_messages(ServiceBusMessage(str(k)))
        assert paired.metrics.backlog_send_failures == 1
        assert paired.metrics.backlog_messages_sent == 20
        assert pair.backlog_counts() == [0, 20]
        for s in senders:
            s.close()


# ------------------------------------------------------------------ failback, topics, schedules (async API)
def test_a_ping_sends_every_sender_back_at_once_and_the_syphon_serves_topics_and_schedules(pair: Pair) -> None:
    from sbredis.aio import ServiceBusClient as AsyncClient

    with pair.admin() as a:
        a.create_queue("orders")
        a.create_topic("events")
        a.create_subscription("events", "all")
    when = datetime.now(UTC) + timedelta(seconds=3)

    async def scenario() -> None:
        async with AsyncClient(pair.primary.url, paired_namespace=pair.options(), **FAST) as c:
            paired = c.paired_namespace
            assert paired is not None
            one, two = c.get_queue_sender("orders"), c.get_queue_sender("orders")
            topic = c.get_topic_sender("events")
            for s in (one, two, topic):
                await s.send_messages(ServiceBusMessage("warm"))
            pair.primary.kill()
            await one.send_messages(ServiceBusMessage("one", scheduled_enqueue_time_utc=when))
            await two.send_messages(ServiceBusMessage("two"))
            await topic.send_messages(ServiceBusMessage("published", subject="s"))
            assert paired.unavailable_entities == ["events", "orders"]
            assert paired.metrics.backlog_messages_sent == 3
            pair.primary.start()
            deadline = time.monotonic() + 10
            while paired.unavailable_entities and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
            assert paired.unavailable_entities == []
            await one.send_messages(ServiceBusMessage("one-back"))
            await two.send_messages(ServiceBusMessage("two-back"))
            assert paired.metrics.backlog_messages_sent == 3  # both senders went back to the primary
            await c.start_syphon()
            deadline = time.monotonic() + 10
            while paired.metrics.siphon_messages_sent < 3 and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
            assert paired.metrics.siphon_messages_sent == 3

    asyncio.run(scenario())
    with ServiceBusClient(pair.primary.url) as c:
        with c.get_subscription_receiver("events", "all") as r:
            got = r.receive_messages(10, max_wait_time=1)
            assert [(str(m), m.subject) for m in got] == [("warm", None), ("published", "s")]
        with c.get_queue_receiver("orders") as r:
            early = sorted(str(m) for m in r.receive_messages(10, max_wait_time=0.5))
            assert early == ["one-back", "two", "two-back", "warm", "warm"]  # "one" waits for its schedule
            later = r.receive_messages(1, max_wait_time=5)
            assert [str(m) for m in later] == ["one"]
            restored = later[0].scheduled_enqueue_time_utc
            assert restored is not None and abs((restored - when).total_seconds()) < 0.001
            assert abs((later[0].enqueued_time_utc - when).total_seconds()) < 0.05


# ------------------------------------------------------------------ several syphons, close and fault
def test_two_syphons_at_once_move_every_message_exactly_once_in_order(pair: Pair) -> None:
    with pair.admin() as a:
        a.create_queue("orders")  # no duplicate detection: a doubled message would show
    with pair.client() as c:
        with c.get_queue_sender("orders") as s:
            s.send_messages(ServiceBusMessage("warm"))
            pair.primary.kill()
            for i in range(300):
                s.send_messages(ServiceBusMessage(str(i), session_id=f"s{i % 3}"))
        assert c.paired_namespace is not None and c.paired_namespace.metrics.backlog_messages_sent == 300
    pair.primary.start()
    syphons = [pair.client(enable_syphon=True) for _ in range(2)]
    try:
        for sc in syphons:
            sc.start_syphon()
        eventually(lambda: sum(sc.paired_namespace.metrics.siphon_messages_sent for sc in syphons) >= 300, 20)
        with ServiceBusClient(pair.primary.url) as c:
            got = drain(c, "orders", 301)
    finally:
        for sc in syphons:
            sc.close()
    bodies = [str(m) for m in got if str(m) != "warm"]
    assert sorted(bodies, key=int) == [str(i) for i in range(300)]  # none lost, none doubled
    for s in range(3):
        order = [int(str(m)) for m in got if m.session_id == f"s{s}"]
        assert order == sorted(order)
    assert pair.backlog_counts() == [0, 0]


def test_closing_the_secondary_of_a_syphon_hosting_client_faults_the_primary_after_5_s(pair: Pair) -> None:
    with pair.admin() as a:
        a.create_queue("orders")
    with pair.client() as c:
        paired = c.paired_namespace
        assert paired is not None
        c.start_syphon()
        assert (paired.primary_state, paired.secondary_state) == ("open", "open")
        paired.secondary.close()
        closed_at = time.monotonic()
        assert paired.secondary_state == "closed"
        eventually(lambda: paired.primary_state == "faulted", 8, interval=0.05)
        assert time.monotonic() - closed_at >= 4.9
        with pytest.raises(ServiceBusError, match="faulted"), c.get_queue_sender("orders") as s:
            s.send_messages(ServiceBusMessage("x"))
