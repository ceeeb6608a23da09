"""The native Worker with session=True: per-session order, one handler per session, retries in
order, lock renewal, letting go of idle sessions, subscriptions, drain."""

from __future__ import annotations

import asyncio
import logging
import random
import threading
import time
from collections import defaultdict
from typing import Any

import pytest

from sbredis import ServiceBusMessage
from sbredis.worker import ExitCode, Worker
from tests.conftest import eventually
from tests.worker.test_worker import counts

pytestmark = pytest.mark.integration


class Recorder:
    """Records each session's handled messages and whether two handlers of one session overlapped."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.handled: dict[str, list[tuple[str, int]]] = defaultdict(list)
        self.active: dict[str, int] = defaultdict(int)
        self.running = 0
        self.peak = 0
        self.overlaps: list[str] = []

    def enter(self, m: Any) -> None:
        with self.lock:
            sid = m.session_id
            if self.active[sid]:
                self.overlaps.append(sid)
            self.active[sid] += 1
            self.running += 1
            self.peak = max(self.peak, self.running)
            self.handled[sid].append((m.body_bytes.decode(), m.delivery_count + 1))  # the attempt number

    def leave(self, m: Any) -> None:
        with self.lock:
            self.active[m.session_id] -= 1
            self.running -= 1

    def total(self) -> int:
        with self.lock:
            return sum(len(v) for v in self.handled.values())


def send_interleaved(client: Any, queue: str, sessions: list[str], per_session: int) -> None:
    with client.get_queue_sender(queue) as s:
        for i in range(per_session):  # s0-0, s1-0, ..., s0-1, s1-1, ...
            s.send_messages([ServiceBusMessage(f"{sid}-{i}", session_id=sid) for sid in sessions])


@pytest.mark.parametrize("kind", ["thread", "async"])
def test_sessions_in_order_one_handler_per_session_several_at_once(
    kind: str, start: Any, make_queue: Any, client: Any, admin: Any
) -> None:
    q = make_queue(requires_session=True, enable_partitioning=True)
    sessions = [f"s{i}" for i in range(6)]
    rec = Recorder()
    rng = random.Random(7)

    if kind == "thread":

        def handle(m: Any) -> None:
            rec.enter(m)
            time.sleep(rng.uniform(0.0, 0.02))
            rec.leave(m)

        w = start(handle, q, session=True, concurrency=3, prefetch=4, session_idle_timeout=0.3)
    else:

        async def ahandle(m: Any) -> None:
            rec.enter(m)
            await asyncio.sleep(rng.uniform(0.0, 0.02))
            rec.leave(m)

        w = start(ahandle, q, session=True, concurrency=3, prefetch=4, session_idle_timeout=0.3)
    send_interleaved(client, q, sessions, 10)
    eventually(lambda: w.worker.stats["completed"] == 60, timeout=30)
    assert w.stop() == ExitCode.OK
    assert rec.overlaps == []
    assert rec.peak >= 2  # sessions ran side by side
    assert rec.peak <= 3
    for sid in sessions:
        assert rec.handled[sid] == [(f"{sid}-{i}", 1) for i in range(10)]
    assert counts(admin, q) == (0, 0)
    assert client.list_queue_sessions(q) == []  # every session was let go of


def test_a_failed_message_is_abandoned_and_retried_before_the_next_of_its_session(
    start: Any, make_queue: Any, client: Any, admin: Any
) -> None:
    q = make_queue(requires_session=True, max_delivery_count=5)
    rec = Recorder()

    def handle(m: Any) -> None:
        rec.enter(m)
        rec.leave(m)
        if m.body_bytes == b"a-2" and m.delivery_count < 2:
            raise RuntimeError("not yet")

    w = start(handle, q, session=True, concurrency=2, prefetch=8, session_idle_timeout=0.3)
    send_interleaved(client, q, ["a", "b"], 5)
    eventually(lambda: w.worker.stats["completed"] == 10, timeout=30)
    assert w.stop() == ExitCode.OK
    assert rec.handled["a"] == [("a-0", 1), ("a-1", 1), ("a-2", 1), ("a-2", 2), ("a-2", 3), ("a-3", 1), ("a-4", 1)]
    assert rec.handled["b"] == [(f"b-{i}", 1) for i in range(5)]  # messages fetched ahead went back uncounted
    assert w.worker.stats["abandoned"] == 2
    assert counts(admin, q) == (0, 0)


def test_the_session_lock_is_renewed_while_a_handler_runs(start: Any, make_queue: Any, client: Any, admin: Any):
    q = make_queue(requires_session=True, lock_duration=1)
    rec = Recorder()

    def handle(m: Any) -> None:
        rec.enter(m)
        if m.body_bytes == b"long":
            time.sleep(2.5)
        rec.leave(m)

    w = start(handle, q, session=True, prefetch=2)
    with client.get_queue_sender(q) as s:
        s.send_messages([ServiceBusMessage(b, session_id="x") for b in ("long", "after")])
    eventually(lambda: w.worker.stats["completed"] == 2, timeout=15)
    w.stop()
    assert rec.handled["x"] == [("long", 1), ("after", 1)]
    assert w.worker.stats["failed_settlements"] == 0
    assert counts(admin, q) == (0, 0)


def test_an_idle_session_is_let_go_of_so_others_get_the_slot(start: Any, make_queue: Any, client: Any) -> None:
    q = make_queue(requires_session=True)
    rec = Recorder()

    def handle(m: Any) -> None:
        rec.enter(m)
        rec.leave(m)

    w = start(handle, q, session=True, concurrency=1, session_idle_timeout=0.3)
    with client.get_queue_sender(q) as s:
        s.send_messages(ServiceBusMessage("first", session_id="a"))
    eventually(lambda: rec.total() == 1, timeout=10)
    with client.get_queue_sender(q) as s:
        s.send_messages(ServiceBusMessage("second", session_id="b"))
    eventually(lambda: rec.total() == 2, timeout=10)  # one slot: session a was let go of
    with client.get_queue_receiver(q, session_id="a", max_wait_time=0.2) as r:  # nobody holds it
        assert r.session.get_state() is None
    assert w.stop() == ExitCode.OK
    assert dict(rec.handled) == {"a": [("first", 1)], "b": [("second", 1)]}


def test_a_session_subscription(start: Any, admin: Any, client: Any) -> None:
    topic = f"wts-{time.time_ns()}"
    admin.create_topic(topic)
    admin.create_subscription(topic, "s", requires_session=True)
    try:
        rec = Recorder()

        def handle(m: Any) -> None:
            rec.enter(m)
            rec.leave(m)

        w = start(handle, topic, subscription="s", session=True, concurrency=2, session_idle_timeout=0.3)
        with client.get_topic_sender(topic) as s:
            for i in range(4):
                s.send_messages([ServiceBusMessage(f"{sid}-{i}", session_id=sid) for sid in ("p", "q")])
        eventually(lambda: w.worker.stats["completed"] == 8, timeout=20)
        assert w.stop() == ExitCode.OK
        assert rec.overlaps == []
        assert {sid: [b for b, _ in v] for sid, v in rec.handled.items()} == {
            sid: [f"{sid}-{i}" for i in range(4)] for sid in ("p", "q")
        }
    finally:
        admin.delete_topic(topic)


def test_stop_abandons_a_stuck_handler_and_lets_go_of_its_session(start: Any, make_queue: Any, client: Any) -> None:
    q = make_queue(requires_session=True)
    started, finished = threading.Event(), threading.Event()

    def handle(m: Any) -> None:
        started.set()
        time.sleep(30)
        finished.set()

    w = start(handle, q, session=True, grace_period=0.5)
    with client.get_queue_sender(q) as s:
        s.send_messages([ServiceBusMessage(b, session_id="z") for b in ("stuck", "next")])
    assert started.wait(10)
    assert w.stop() == ExitCode.GRACE_EXPIRED
    assert not finished.is_set()  # stop returned without waiting for the handler
    with client.get_queue_receiver(q, session_id="z", max_wait_time=2) as r:  # released at once
        got = r.receive_messages(2, max_wait_time=2)
        assert [(m.body_bytes, m.delivery_count) for m in got] == [(b"stuck", 1), (b"next", 0)]
        r.complete_messages(got)


def test_session_option_must_match_the_entity(url: str, make_queue: Any, admin: Any, caplog: Any) -> None:
    plain = make_queue()
    assert Worker(url, print, entity=plain, session=True, poll_interval=0.2).run(handle_signals=False) == ExitCode.ERROR
    assert "does not require sessions" in caplog.text
    name = plain + "-s"
    admin.create_queue(name, requires_session=True)
    try:
        assert Worker(url, print, entity=name, poll_interval=0.2).run(handle_signals=False) == ExitCode.ERROR
        assert "use --session" in caplog.text
    finally:
        admin.delete_queue(name)


def test_a_queue_deleted_under_held_sessions_stops_the_worker_with_an_error(
    start: Any, admin: Any, client: Any, caplog: Any
) -> None:
    """The held session's receive fails (its entity is gone), the worker lets go of it, and taking
    the next session fails for good: the worker ends with ERROR and the log names the queue."""
    caplog.set_level(logging.DEBUG, logger="sbredis.worker")  # the held session's closing is logged at DEBUG
    q = f"wts-gone-{time.time_ns()}"
    admin.create_queue(q, requires_session=True)
    handled = threading.Event()
    w = start(lambda m: handled.set(), q, session=True, concurrency=1, session_idle_timeout=30)
    with client.get_queue_sender(q) as s:
        s.send_messages(ServiceBusMessage("only", session_id="a"))
    assert handled.wait(10)
    eventually(lambda: w.worker.stats["completed"] == 1, timeout=10)
    admin.delete_queue(q)  # session a is still held: its idle timeout is far off
    w.thread.join(20)
    assert not w.thread.is_alive(), "the worker did not stop"
    assert w.code == ExitCode.ERROR
    assert f"session 'a' of '{q}' let go of" in caplog.text
