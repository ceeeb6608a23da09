"""The kombu transport's Service Bus mapping: settlement, lock renewal, redelivery, ETA, fanout leases."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

pytest.importorskip("kombu")

import kombu

from sbredis import ServiceBusSubQueue
from sbredis.contrib.kombu import entity_name, redis_url
from tests.conftest import eventually

pytestmark = pytest.mark.integration
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def sb(url: str) -> str:
    return "sbredis" + url[len("redis") :]


@pytest.fixture()
def qname() -> str:
    return "kq-" + uuid.uuid4().hex[:10]


@pytest.fixture()
def conn(url: str) -> Iterator[kombu.Connection]:
    c = kombu.Connection(sb(url), transport_options={"queue_properties": {"lock_duration": 1, "max_delivery_count": 3}})
    yield c
    c.release()


def publish(conn: kombu.Connection, q: kombu.Queue, body: Any, **kwargs: Any) -> None:
    with conn.Producer() as p:
        p.publish(body, exchange=q.exchange, routing_key=q.routing_key, declare=[q], **kwargs)


def dead_letters(client: Any, name: str) -> list[Any]:
    with client.get_queue_receiver(name, sub_queue=ServiceBusSubQueue.DEAD_LETTER) as dlq:
        return list(dlq.peek_messages(10, sequence_number=0))


def test_entity_names_and_urls() -> None:
    assert entity_name("celery") == "celery"
    pidbox = entity_name("celery@host-1.celery.pidbox")
    assert pidbox.startswith("celery_host-1.celery.pidbox-") and pidbox != entity_name("celery_host-1.celery.pidbox")
    assert entity_name("_x.", "p.").startswith("p._x-")
    assert entity_name("-").startswith("q-")

    class Info:
        hostname, port, userid, password, virtual_host, ssl = "h", 6380, "u", "p@ss", "3", False

    assert redis_url(Info) == "redis://u:p%40ss@h:6380/3"
    Info.ssl, Info.password, Info.virtual_host = True, None, "/"
    assert redis_url(Info) == "rediss://h:6380/0"
    Info.hostname = "unix:///tmp/r.sock"
    assert redis_url(Info) == "unix:///tmp/r.sock"


def test_plus_scheme_keeps_the_redis_url(url: str, qname: str) -> None:
    with kombu.Connection("sbredis+" + url) as c, c.SimpleQueue(qname) as q:
        q.put({"n": 1})
        m = q.get(timeout=2)
        assert m.payload == {"n": 1}
        m.ack()


def test_reject_without_requeue_dead_letters(conn: kombu.Connection, client: Any, qname: str) -> None:
    with conn.SimpleQueue(qname) as q:
        q.put({"n": 1})
        m = q.get(timeout=2)
        assert m.delivery_info["delivery_count"] == 1 and not m.delivery_info["redelivered"]
        m.reject(requeue=False)
    (dl,) = dead_letters(client, qname)
    assert dl.dead_letter_reason == "Rejected"
    assert "kombu" in (dl.dead_letter_error_description or "")


def test_requeue_abandons_and_counts(conn: kombu.Connection, qname: str) -> None:
    with conn.SimpleQueue(qname) as q:
        q.put({"n": 1})
        q.get(timeout=2).requeue()
        m = q.get(timeout=2)
        assert m.delivery_info["delivery_count"] == 2 and m.delivery_info["redelivered"]
        m.ack()
        with pytest.raises(q.Empty):
            q.get(timeout=0.3)


def test_lock_is_renewed_while_unacked(conn: kombu.Connection, url: str, qname: str) -> None:
    with conn.SimpleQueue(qname) as q:
        q.put({"n": 1})
        m = q.get(timeout=2)
        # The lock is 1 s; another consumer must not get the message while we hold it.
        with kombu.Connection(sb(url)) as other, other.SimpleQueue(qname) as q2, pytest.raises(q2.Empty):
            q2.get(timeout=2.5)
        m.ack()  # still ours: completes
    with kombu.Connection(sb(url)) as c2, c2.SimpleQueue(qname) as q3, pytest.raises(q3.Empty):
        q3.get(timeout=0.3)


def test_no_ack_consumer_receives_and_deletes(conn: kombu.Connection, client: Any, admin: Any, qname: str) -> None:
    q = kombu.Queue(qname, routing_key=qname)
    publish(conn, q, {"n": 1})
    got = []
    with kombu.Consumer(conn, [q], no_ack=True, callbacks=[lambda body, m: got.append(body)]):
        conn.drain_events(timeout=2)
    assert got == [{"n": 1}]
    assert admin.get_queue_runtime_properties(qname).active_message_count == 0


def test_closing_a_channel_abandons_unacked_and_prefetched(url: str, admin: Any, qname: str) -> None:
    q = kombu.Queue(qname, routing_key=qname)
    with kombu.Connection(sb(url)) as c:
        for n in range(5):
            publish(c, q, {"n": n})
        got: list[Any] = []
        ch = c.channel()
        consumer = kombu.Consumer(ch, [q], callbacks=[lambda body, m: got.append(m)], prefetch_count=5)
        consumer.consume()
        c.drain_events(timeout=2)
        assert got
        ch.close()
    with kombu.Connection(sb(url)) as c, c.SimpleQueue(qname) as sq:
        seen = []
        for _ in range(5):
            m = sq.get(timeout=2)
            seen.append(m.payload["n"])
            m.ack()
    assert sorted(seen) == list(range(5))


def test_eta_is_a_scheduled_message(conn: kombu.Connection, admin: Any, qname: str) -> None:
    q = kombu.Queue(qname, routing_key=qname)
    eta = datetime.now(UTC) + timedelta(seconds=1.5)
    publish(conn, q, {"n": 1}, headers={"eta": eta.isoformat()})
    assert admin.get_queue_runtime_properties(qname).scheduled_message_count == 1
    with conn.SimpleQueue(qname) as sq:
        with pytest.raises(sq.Empty):
            sq.get(timeout=0.5)
        m = sq.get(timeout=3)
        assert datetime.now(UTC) >= eta - timedelta(milliseconds=50)
        m.ack()


def test_message_expiration_is_time_to_live(conn: kombu.Connection, client: Any, qname: str) -> None:
    q = kombu.Queue(qname, routing_key=qname)
    publish(conn, q, {"n": 1}, expiration=30)
    with client.get_queue_receiver(qname) as r:
        (m,) = r.peek_messages(1)
        assert m.time_to_live == timedelta(seconds=30)


_HOLDER = textwrap.dedent(
    """
    import sys, time
    sys.path.insert(0, {root!r})
    import kombu, sbredis.contrib.kombu
    with kombu.Connection({url!r}) as c, c.SimpleQueue({q!r}) as q:
        m = q.get(timeout=5)
        print("got", m.delivery_info["delivery_count"], flush=True)
        time.sleep(60)
    """
)


def test_a_killed_consumer_loses_its_lock_then_dead_letters(url: str, client: Any, qname: str) -> None:
    options = {"queue_properties": {"lock_duration": 1, "max_delivery_count": 2}}
    with kombu.Connection(sb(url), transport_options=options) as c, c.SimpleQueue(qname) as q:
        q.put({"n": 1})
    for expected in (1, 2):
        code = _HOLDER.format(root=ROOT, url=sb(url), q=qname)
        proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
        try:
            assert proc.stdout is not None
            assert proc.stdout.readline().split() == ["got", str(expected)]
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(5)
    # The second lock lapses: the message had max_delivery_count deliveries, so the next receive
    # (sbredis applies lapsed locks when a partition is read) dead-letters it instead.
    with kombu.Connection(sb(url)) as c, c.SimpleQueue(qname) as q, pytest.raises(q.Empty):
        q.get(timeout=2.5)
    (dl,) = dead_letters(client, qname)
    assert dl.dead_letter_reason == "MaxDeliveryCountExceeded"
    assert dl.delivery_count == 1


def test_fanout_copies_to_every_bound_queue_across_connections(url: str, qname: str) -> None:
    ex = kombu.Exchange(qname + "-fan", type="fanout")
    q1, q2 = kombu.Queue(qname + "-1", exchange=ex), kombu.Queue(qname + "-2", exchange=ex)
    with kombu.Connection(sb(url)) as consumer:
        q1(consumer.default_channel).declare()
        q2(consumer.default_channel).declare()
        # The publisher knows nothing of the bindings locally.
        with kombu.Connection(sb(url)) as publisher, publisher.Producer() as p:
            p.publish({"b": 1}, exchange=ex, declare=[ex])
        got: list[Any] = []
        with kombu.Consumer(consumer, [q1, q2], callbacks=[lambda body, m: (got.append(body), m.ack())]):
            deadline = time.monotonic() + 3
            while len(got) < 2 and time.monotonic() < deadline:
                consumer.drain_events(timeout=1)
        assert got == [{"b": 1}, {"b": 1}]


_BINDER = textwrap.dedent(
    """
    import sys, time
    sys.path.insert(0, {root!r})
    import kombu, sbredis.contrib.kombu
    with kombu.Connection({url!r}) as c:
        ex = kombu.Exchange({ex!r}, type="fanout")
        kombu.Queue({q!r}, exchange=ex, expires=0.3)(c.default_channel).declare()
        print("bound", flush=True)
        time.sleep(60)
    """
)


def test_an_expiring_queue_stops_getting_broadcasts_when_its_process_dies(url: str, qname: str) -> None:
    ex = kombu.Exchange(qname + "-fan", type="fanout")
    mine = kombu.Queue(qname + "-mine", exchange=ex, expires=0.3)
    code = _BINDER.format(root=ROOT, url=sb(url), ex=ex.name, q=qname + "-dead")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        with kombu.Connection(sb(url)) as c:
            mine(c.default_channel).declare()
            assert proc.stdout is not None and proc.stdout.readline().strip() == "bound"

            def bound() -> set[str]:
                return {q for _, _, q in c.default_channel.get_table(ex.name)}

            assert bound() == {mine.name, qname + "-dead"}
            proc.send_signal(signal.SIGKILL)
            proc.wait(5)
            # The dead process's lease lapses; ours is renewed while our connection is open.
            eventually(lambda: bound() == {mine.name}, timeout=3)
            time.sleep(0.8)
            assert bound() == {mine.name}
        with kombu.Connection(sb(url)) as c2:
            assert c2.default_channel.get_table(ex.name) == []  # a clean close removes its leases
    finally:
        proc.kill()
        proc.wait(5)


def run_hub(hub: Any, until: Any, timeout: float = 10.0) -> None:
    """Turn kombu's event loop (as Celery's worker does) until `until()` holds."""
    loop = hub.create_loop()
    deadline = time.monotonic() + timeout
    while not until():
        assert time.monotonic() < deadline, "the event loop delivered nothing in time"
        next(loop)


def test_consuming_in_an_event_loop(conn: kombu.Connection, qname: str, url: str) -> None:
    """In Celery's event loop (the hub) the transport waits on its own socket: a message sent
    while the loop waits is delivered, no more than the prefetch count is out at once, a
    rejected (abandoned) message comes back, and acks made in the loop complete the messages."""
    from kombu.asynchronous import Hub

    from sbredis.management import ServiceBusAdministrationClient

    assert conn.transport.implements.asynchronous
    q = kombu.Queue(qname, routing_key=qname)
    got: list[Any] = []
    hub = Hub()
    try:
        conn.connect()
        conn.register_with_event_loop(hub)
        with conn.Consumer([q], callbacks=[lambda body, m: got.append((body, m))], prefetch_count=1):
            loop = hub.create_loop()
            for _ in range(3):  # the loop is waiting: nothing to deliver yet
                next(loop)
            assert got == []
            for n in range(3):
                publish(conn, q, {"n": n})
            run_hub(hub, lambda: len(got) == 1)
            for _ in range(2):
                next(loop)
            assert len(got) == 1  # prefetch 1: the next waits for the ack
            got[0][1].ack()
            run_hub(hub, lambda: len(got) == 2)
            got[1][1].reject(requeue=True)
            run_hub(hub, lambda: len(got) == 3)
            assert got[2][0] == got[1][0] and got[2][1].delivery_info["delivery_count"] == 2
            got[2][1].ack()
            run_hub(hub, lambda: len(got) == 4)
            got[3][1].ack()
            assert sorted(b["n"] for b, _ in (got[0], got[2], got[3])) == [0, 1, 2]
            with ServiceBusAdministrationClient.from_connection_string(url) as admin:
                run_hub(hub, lambda: admin.get_queue_runtime_properties(qname).active_message_count == 0)
    finally:
        hub.close()


def test_an_ack_failing_with_redis_away_lets_the_lock_elapse() -> None:
    """Redis stops before an ack, so its complete fails on the connection; Redis comes back
    (append-only, so the message and its lock survive). The connection renews that lock no more:
    the message is delivered again once its short lock elapses, not after
    max_lock_renewal_duration."""
    from sbredis.exceptions import ServiceBusError
    from tests.redis_server import RedisServer

    srv = RedisServer("--appendonly", "yes", "--appendfsync", "always").start()
    options = {
        "queue_properties": {"lock_duration": 4},  # renewal due 2.7 s after the receive: Redis is back by then
        "max_lock_renewal_duration": 60,
        "retry_total": 0,
    }
    try:
        with kombu.Connection(sb(srv.url), transport_options=options) as conn, conn.SimpleQueue("q") as q:
            q.put({"n": 1})
            m = q.get(timeout=2)
            assert m.delivery_info["delivery_count"] == 1
            assert srv.proc is not None
            srv.proc.terminate()  # a clean shutdown: the append-only file has everything
            srv.proc.wait(10)
            with pytest.raises(ServiceBusError):
                m.ack()
            srv.start()
            deadline = time.monotonic() + 20  # well before 60 s
            again = None
            while again is None and time.monotonic() < deadline:
                try:
                    again = q.get(timeout=1)
                except q.Empty:
                    pass
            assert again is not None, "the message did not come back"
            assert again.payload == {"n": 1} and again.delivery_info["delivery_count"] == 2
            again.ack()
    finally:
        srv.stop()


def test_reply_poll_time_is_a_transport_option(url: str) -> None:
    """The clients' reply_poll_time (docs/client.md): 0 (never poll) carries messages as usual; a
    value out of its range is refused with the option's name."""
    from sbredis.exceptions import InvalidArgumentError

    qname = f"poll-{uuid.uuid4().hex[:8]}"
    with kombu.Connection(sb(url), transport_options={"reply_poll_time": 0}) as c, c.SimpleQueue(qname) as q:
        q.put({"n": 1})
        m = q.get(timeout=2)
        assert m.payload == {"n": 1}
        m.ack()
    with (
        pytest.raises(InvalidArgumentError, match="reply_poll_time"),
        kombu.Connection(sb(url), transport_options={"reply_poll_time": 1}) as c,
        c.SimpleQueue(qname) as q,
    ):
        q.put({"n": 2})
