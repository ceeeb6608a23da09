"""The native Worker in-process: settlement, dead-lettering, lock renewal, concurrency, middleware, drain."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from sbredis import ServiceBusMessage, ServiceBusSubQueue
from sbredis.exceptions import InvalidArgumentError
from sbredis.worker import DeadLetter, ExitCode, Middleware, Worker
from tests.conftest import eventually

pytestmark = pytest.mark.integration


def send(client: Any, queue: str, *bodies: str) -> None:
    with client.get_queue_sender(queue) as s:
        s.send_messages([ServiceBusMessage(b) for b in bodies])


def dead_letters(client: Any, queue: str) -> list[Any]:
    with client.get_queue_receiver(queue, sub_queue=ServiceBusSubQueue.DEAD_LETTER) as dlq:
        return list(dlq.peek_messages(20, sequence_number=0))


def counts(admin: Any, queue: str) -> tuple[int, int]:
    p = admin.get_queue_runtime_properties(queue)
    return p.active_message_count, p.dead_letter_message_count


def test_success_completes_and_errors_abandon_until_dead_lettered(start: Any, make_queue: Any, client: Any, admin: Any):
    q = make_queue(max_delivery_count=2)
    seen: list[tuple[str, int]] = []

    def handle(m: Any) -> None:
        seen.append((m.body_bytes.decode(), m.delivery_count + 1))  # the attempt number
        if m.body_bytes == b"bad":
            raise RuntimeError("nope")

    w = start(handle, q)
    send(client, q, "good", "bad")
    eventually(lambda: counts(admin, q) == (0, 1), timeout=10)
    assert w.stop() == ExitCode.OK
    assert ("good", 1) in seen and ("bad", 1) in seen and ("bad", 2) in seen
    (dl,) = dead_letters(client, q)
    assert dl.dead_letter_reason == "MaxDeliveryCountExceeded"
    assert w.worker.stats["completed"] == 1 and w.worker.stats["abandoned"] == 2


def test_listed_exceptions_and_dead_letter_dead_letter_at_once(start: Any, make_queue: Any, client: Any, admin: Any):
    q = make_queue(max_delivery_count=10)

    def handle(m: Any) -> None:
        if m.body_bytes == b"value":
            raise ValueError("bad value")
        raise DeadLetter("Poison", "explicit")

    w = start(handle, q, dead_letter_on=(ValueError,))
    send(client, q, "value", "explicit")
    eventually(lambda: len(dead_letters(client, q)) == 2, timeout=10)
    w.stop()
    reasons = {(m.body_bytes, m.dead_letter_reason, m.dead_letter_error_description) for m in dead_letters(client, q)}
    assert reasons == {(b"value", "ValueError", "bad value"), (b"explicit", "Poison", "explicit")}
    assert all(m.delivery_count == 0 for m in dead_letters(client, q))


def test_a_dead_letter_with_long_texts_is_clipped_not_refused(start: Any, make_queue: Any, client: Any) -> None:
    """Dead-letter texts over 4096 characters are InvalidArgumentError; a handler's DeadLetter with
    longer ones still dead-letters its message, with the texts cut to 4096."""
    q = make_queue(max_delivery_count=10)

    def handle(m: Any) -> None:
        raise DeadLetter("R" * 5000, "D" * 9000)

    w = start(handle, q)
    send(client, q, "long")
    eventually(lambda: len(dead_letters(client, q)) == 1, timeout=10)
    w.stop()
    (dl,) = dead_letters(client, q)
    assert (dl.dead_letter_reason, dl.dead_letter_error_description) == ("R" * 4096, "D" * 4096)
    assert dl.delivery_count == 0  # delivered once: no earlier deliveries


def test_async_handler_and_concurrency_bound(start: Any, make_queue: Any, client: Any, admin: Any) -> None:
    q = make_queue()
    now, peak = 0, 0

    async def handle(m: Any) -> None:
        nonlocal now, peak
        now += 1
        peak = max(peak, now)
        await asyncio.sleep(0.2)
        now -= 1

    w = start(handle, q, concurrency=3, prefetch=2)
    send(client, q, *[str(i) for i in range(9)])
    eventually(lambda: w.worker.stats["completed"] == 9, timeout=10)
    w.stop()
    assert peak == 3
    assert counts(admin, q) == (0, 0)


def test_thread_handlers_run_concurrently(start: Any, make_queue: Any, client: Any) -> None:
    q = make_queue()
    lock, now, peak = threading.Lock(), [0], [0]

    def handle(m: Any) -> None:
        with lock:
            now[0] += 1
            peak[0] = max(peak[0], now[0])
        time.sleep(0.2)
        with lock:
            now[0] -= 1

    w = start(handle, q, concurrency=4)
    send(client, q, *[str(i) for i in range(8)])
    eventually(lambda: w.worker.stats["completed"] == 8, timeout=10)
    w.stop()
    assert peak[0] == 4


def test_the_lock_is_renewed_while_the_handler_runs(start: Any, make_queue: Any, client: Any, admin: Any) -> None:
    q = make_queue(lock_duration=1)
    deliveries: list[int] = []

    def handle(m: Any) -> None:
        deliveries.append(m.delivery_count + 1)  # the attempt number
        time.sleep(2.5)

    w = start(handle, q, concurrency=2)
    send(client, q, "long")
    eventually(lambda: w.worker.stats["completed"] == 1, timeout=10)
    w.stop()
    assert deliveries == [1]
    assert w.worker.stats["failed_settlements"] == 0
    assert counts(admin, q) == (0, 0)


def test_middleware_hooks(start: Any, make_queue: Any, client: Any) -> None:
    q = make_queue()
    calls: list[tuple[Any, ...]] = []

    class Record(Middleware):
        def after_receive(self, worker: Worker, messages: list[Any]) -> None:
            calls.extend(("received", m.body_bytes) for m in messages)

        async def before_process(self, worker: Worker, message: Any) -> None:
            calls.append(("before_process", message.body_bytes))
            if message.body_bytes == b"skip":
                raise DeadLetter("Skipped")

        def after_process(self, worker: Worker, message: Any, exception: BaseException | None) -> None:
            calls.append(("after_process", message.body_bytes, type(exception).__name__ if exception else None))

        def before_settle(self, worker: Worker, message: Any, action: str) -> None:
            calls.append(("before_settle", message.body_bytes, action))

        def after_settle(self, worker: Worker, message: Any, action: str, exception: BaseException | None) -> None:
            calls.append(("after_settle", message.body_bytes, action, exception))

    ran: list[bytes] = []
    w = start(lambda m: ran.append(m.body_bytes), q, middleware=[Record()], concurrency=1)
    send(client, q, "a", "skip")
    eventually(lambda: sum(1 for c in calls if c[0] == "after_settle") == 2, timeout=10)
    w.stop()
    assert ran == [b"a"]
    assert [c for c in calls if c[1] == b"a"] == [
        ("received", b"a"),
        ("before_process", b"a"),
        ("after_process", b"a", None),
        ("before_settle", b"a", "complete"),
        ("after_settle", b"a", "complete", None),
    ]
    assert ("before_settle", b"skip", "dead_letter") in calls


def test_stop_drains_in_flight_work(start: Any, make_queue: Any, client: Any, admin: Any) -> None:
    q = make_queue()
    started = threading.Event()

    def handle(m: Any) -> None:
        started.set()
        time.sleep(1.0)

    w = start(handle, q, grace_period=10)
    send(client, q, "x")
    assert started.wait(10)
    assert w.stop() == ExitCode.OK
    assert w.worker.stats["completed"] == 1
    assert counts(admin, q) == (0, 0)


def test_grace_period_expiry_abandons_and_force_stops(start: Any, make_queue: Any, client: Any) -> None:
    q = make_queue()
    started, finished = threading.Event(), threading.Event()

    def handle(m: Any) -> None:
        started.set()
        time.sleep(30)
        finished.set()

    w = start(handle, q, grace_period=0.5)
    send(client, q, "stuck")
    assert started.wait(10)
    assert w.stop() == ExitCode.GRACE_EXPIRED
    assert not finished.is_set()  # stop returned without waiting for the handler
    with client.get_queue_receiver(q, max_wait_time=2) as r:  # released at once, not after the lock
        (m,) = r.receive_messages(1, max_wait_time=2)
        assert m.body_bytes == b"stuck" and m.delivery_count == 1
        r.complete_message(m)

    started.clear()
    w2 = start(handle, q, grace_period=60)
    send(client, q, "stuck again")
    assert started.wait(10)
    w2.worker.stop()  # drain...
    time.sleep(0.3)
    assert w2.stop(force=True) == ExitCode.FORCED  # ...then force


def test_bad_options(url: str, make_queue: Any) -> None:
    with pytest.raises(InvalidArgumentError, match="invalid subscription name"):
        Worker(url, print, entity="orders", subscription="bad name!")
    with pytest.raises(InvalidArgumentError):
        Worker(url, print, entity="orders", concurrency=0)
    with pytest.raises(InvalidArgumentError):
        Worker(url, print, entity="bad:name")
    with pytest.raises(InvalidArgumentError, match="session_idle_timeout"):
        Worker(url, print, entity="orders", session=True, session_idle_timeout=-1)
    assert Worker(url, print, entity="no-such-queue").run(handle_signals=False) == ExitCode.ERROR


def test_a_subscription_worker_processes_its_copies_only(start: Any, admin: Any, client: Any) -> None:
    topic = f"wt-{time.time_ns()}"
    admin.create_topic(topic)
    admin.create_subscription(topic, "a", max_delivery_count=1)
    admin.create_subscription(topic, "b")
    try:
        seen: list[str] = []

        def handle(m: Any) -> None:
            seen.append(m.body_bytes.decode())
            if m.body_bytes == b"bad":
                raise RuntimeError("nope")

        w = start(handle, topic, subscription="a")
        with client.get_topic_sender(topic) as s:
            s.send_messages([ServiceBusMessage(b) for b in ("x", "y", "bad")])
        eventually(lambda: sorted(seen) == ["bad", "x", "y"] and w.worker.stats["abandoned"] == 1)
        assert w.stop() == ExitCode.OK
        a = admin.get_subscription_runtime_properties(topic, "a")
        assert (a.active_message_count, a.dead_letter_message_count) == (0, 1)
        b = admin.get_subscription_runtime_properties(topic, "b")
        assert b.active_message_count == 3  # the other subscription's copies are untouched
        assert repr(w.worker) == f"Worker(entity='{topic}/Subscriptions/a', concurrency=8, prefetch=None)"
    finally:
        admin.delete_topic(topic)


def test_a_worker_on_a_missing_subscription_ends_with_an_error(url: str, admin: Any) -> None:
    topic = f"wt-{time.time_ns()}"
    admin.create_topic(topic)
    try:
        w = Worker(url, print, entity=topic, subscription="nope", poll_interval=0.2)
        assert w.run(handle_signals=False) == ExitCode.ERROR
    finally:
        admin.delete_topic(topic)


def test_completions_batch_but_each_message_gets_its_own_outcome(start: Any, make_queue: Any, client: Any) -> None:
    q = make_queue(lock_duration=2, max_delivery_count=5)
    outcomes: list[tuple[bytes, int, Any]] = []
    slow_started = threading.Event()
    together = threading.Barrier(4, timeout=10)  # the slow handler and three fast ones end at once

    class Record(Middleware):
        def after_settle(self, worker: Worker, message: Any, action: str, exception: BaseException | None) -> None:
            outcomes.append(
                (message.body_bytes, message.delivery_count + 1, type(exception).__name__ if exception else None)
            )

    def handle(m: Any) -> None:
        if m.delivery_count > 0:
            return
        if m.body_bytes == b"slow":
            slow_started.set()
            time.sleep(2.3)  # past its lock, which nothing renews
        together.wait()

    w = start(handle, q, concurrency=4, max_lock_renewal_duration=0.3, middleware=[Record()])
    send(client, q, "slow")
    assert slow_started.wait(10)
    time.sleep(1.2)  # the fast ones are locked late enough to hold their locks at the end
    send(client, q, "a", "b", "c")
    eventually(lambda: len([o for o in outcomes if o[2] is None]) == 4, timeout=15)
    w.stop()
    assert (b"slow", 1, "MessageLockLostError") in outcomes and (b"slow", 2, None) in outcomes
    assert sorted(o[0] for o in outcomes if o[2] is None) == [b"a", b"b", b"c", b"slow"]
    assert w.worker.stats["failed_settlements"] == 1 and w.worker.stats["completed"] == 4


def test_by_default_slow_handlers_leave_the_rest_of_the_queue_to_other_workers(
    start: Any, make_queue: Any, client: Any
) -> None:
    """Without a prefetch the worker keeps about a second of its handlers' work ahead: with
    handlers that take 0.3 s each, two at a time, most of a backlog stays for other receivers
    (a fixed prefetch of 64 would lock all of it ahead)."""
    q = make_queue(lock_duration=4)
    started = threading.Event()

    def handle(m: Any) -> None:
        started.set()
        time.sleep(0.3)

    send(client, q, *[str(i) for i in range(40)])
    w = start(handle, q, concurrency=2)
    assert started.wait(10)
    time.sleep(0.8)  # a few of the worker's receives, each sized to the pace measured so far
    with client.get_queue_receiver(q) as other:
        taken = other.receive_messages(max_message_count=40, wait=False)
        other.complete_messages(taken)
    w.stop()
    assert len(taken) >= 25
    assert w.worker.stats["completed"] + len(taken) <= 40


def test_by_default_a_fast_handler_gets_many_messages_ahead(start: Any, make_queue: Any, client: Any, admin: Any):
    """The same worker with a no-op handler keeps up to 256 messages ahead, so that it goes to
    Redis once per many messages; every message is completed once."""
    q = make_queue()
    send(client, q, *[str(i) for i in range(600)])
    seen: list[str] = []
    w = start(lambda m: seen.append(m.body_bytes.decode()), q, concurrency=4)
    eventually(lambda: w.worker.stats["completed"] == 600, timeout=30)
    assert w.stop() == ExitCode.OK
    assert sorted(seen) == sorted(str(i) for i in range(600))
    assert counts(admin, q) == (0, 0)


def test_a_settlement_failing_with_redis_away_lets_the_lock_elapse() -> None:
    """Redis stops while a handler runs, so its message's complete fails on the connection; Redis
    comes back (append-only, so the message and its lock survive). The worker renews that lock no
    more: the message is delivered again once its short lock elapses, not after
    max_lock_renewal_duration, and is then completed."""
    from sbredis import ServiceBusClient
    from sbredis.management import ServiceBusAdministrationClient
    from tests.redis_server import RedisServer
    from tests.worker.conftest import Running

    srv = RedisServer("--appendonly", "yes", "--appendfsync", "always").start()
    running: Running | None = None
    try:
        with ServiceBusAdministrationClient.from_connection_string(srv.url) as admin:
            admin.create_queue("q", lock_duration=4)  # renewal due 2.7 s after the receive: Redis is back by then
        with ServiceBusClient.from_connection_string(srv.url) as client:
            send(client, "q", "m")
        attempts: list[int] = []

        def handle(m: Any) -> None:
            attempts.append(m.delivery_count + 1)
            if len(attempts) == 1:
                assert srv.proc is not None
                srv.proc.terminate()  # a clean shutdown: the append-only file has everything
                srv.proc.wait(10)

        worker = Worker(
            srv.url, handle, entity="q", concurrency=1, poll_interval=0.2, max_lock_renewal_duration=60, retry_total=0
        )
        running = Running(worker)
        eventually(lambda: worker.stats["failed_settlements"] == 1, timeout=10)
        srv.start()
        eventually(lambda: worker.stats["completed"] == 1, timeout=20)  # well before 60 s
        assert running.stop() == ExitCode.OK
        running = None
        assert attempts == [1, 2]
        with ServiceBusAdministrationClient.from_connection_string(srv.url) as admin:
            assert admin.get_queue_runtime_properties("q").active_message_count == 0
    finally:
        if running is not None:
            running.stop(force=True)
        srv.stop()
