"""Retries with backoff: per task (@app.task(retry=...)) and per worker (Worker(retry=...))."""

from __future__ import annotations

import time
from typing import Any

import pytest

from sbredis import ServiceBusMessage, ServiceBusSubQueue
from sbredis.exceptions import InvalidArgumentError
from sbredis.worker import App, Retry, RetryAfter, Worker
from tests.conftest import eventually
from tests.worker.conftest import Running

pytestmark = pytest.mark.integration
CLOCK_SLACK = 0.002  # the server schedules at its ms clock (floored) + the delay


def dead_letters(client: Any, queue: str) -> list[Any]:
    with client.get_queue_receiver(queue, sub_queue=ServiceBusSubQueue.DEAD_LETTER) as dlq:
        return list(dlq.peek_messages(20, sequence_number=0))


def test_a_task_failing_twice_is_called_three_times_after_its_backoffs(url: str, make_queue: Any, client: Any):
    q = make_queue(max_delivery_count=10)
    calls: list[tuple[float, int]] = []
    with App(url) as app:

        @app.task(entity=q, retry=Retry(backoff=0.2, factor=2, max_retries=5))
        def flaky() -> None:
            calls.append((time.monotonic(), len(calls) + 1))
            if len(calls) < 3:
                raise ConnectionError("try again")

        seq = flaky.send()
        r = Running(app.worker(poll_interval=0.05))
        eventually(lambda: r.worker.stats["completed"] == 1, timeout=15)
        r.stop()
    assert [n for _, n in calls] == [1, 2, 3]
    (t1, _), (t2, _), (t3, _) = calls
    assert t2 - t1 >= 0.2 - CLOCK_SLACK and t3 - t2 >= 0.4 - CLOCK_SLACK
    assert r.worker.stats["retried"] == 2 and r.worker.stats["completed"] == 1
    assert seq > 0


def test_the_delivery_count_carries_on_across_retries(start: Any, make_queue: Any, client: Any) -> None:
    q = make_queue(max_delivery_count=10)
    seen: list[tuple[int, int]] = []

    def handle(m: Any) -> None:
        seen.append((m.sequence_number, m.delivery_count + 1))  # the attempt number
        if m.delivery_count < 2:
            raise RuntimeError("not yet")

    with client.get_queue_sender(q) as s:
        s.send_messages(ServiceBusMessage("x"))
    w = start(handle, q, retry=Retry(backoff=0.05, factor=1), poll_interval=0.05)
    eventually(lambda: w.worker.stats["completed"] == 1, timeout=15)
    w.stop()
    assert [dc for _, dc in seen] == [1, 2, 3] and len({s for s, _ in seen}) == 1


def test_dead_lettered_after_max_retries_with_a_reason(url: str, make_queue: Any, client: Any) -> None:
    q = make_queue(max_delivery_count=10)
    calls: list[int] = []
    with App(url) as app:

        @app.task(entity=q, retry=Retry(backoff=0.05, max_retries=2))
        def doomed() -> None:
            calls.append(1)
            raise KeyError("gone")

        doomed.send()
        r = Running(app.worker(poll_interval=0.05))
        eventually(lambda: len(dead_letters(client, q)) == 1, timeout=15)
        r.stop()
    assert len(calls) == 3
    (dl,) = dead_letters(client, q)
    assert dl.dead_letter_reason == "MaxRetriesExceeded"
    assert "KeyError('gone')" in (dl.dead_letter_error_description or "") and dl.delivery_count == 2


def test_worker_retry_stops_at_the_entity_max_delivery_count(start: Any, make_queue: Any, client: Any) -> None:
    q = make_queue(max_delivery_count=2)
    calls: list[int] = []

    def handle(m: Any) -> None:
        calls.append(m.delivery_count + 1)  # the attempt number
        raise RuntimeError("always")

    with client.get_queue_sender(q) as s:
        s.send_messages(ServiceBusMessage("x"))
    w = start(handle, q, retry=Retry(backoff=0.05), poll_interval=0.05)
    eventually(lambda: len(dead_letters(client, q)) == 1, timeout=15)
    w.stop()
    assert calls == [1, 2]
    assert dead_letters(client, q)[0].dead_letter_reason == "MaxDeliveryCountExceeded"


def test_a_handler_picks_its_delay_with_retry_after(start: Any, make_queue: Any, client: Any) -> None:
    q = make_queue(max_delivery_count=10)
    calls: list[float] = []

    async def handle(m: Any) -> None:
        calls.append(time.monotonic())
        if len(calls) == 1:
            raise RetryAfter(0.3, "rate limited")

    with client.get_queue_sender(q) as s:
        s.send_messages(ServiceBusMessage("x"))
    w = start(handle, q, poll_interval=0.05)
    eventually(lambda: w.worker.stats["completed"] == 1, timeout=15)
    w.stop()
    assert len(calls) == 2 and calls[1] - calls[0] >= 0.3 - CLOCK_SLACK


def test_send_returns_the_sequence_number(url: str, make_queue: Any, client: Any) -> None:
    q = make_queue()
    with App(url) as app:
        t = app.task(entity=q, name="t")(lambda x: None)
        seqs = [t.send(i) for i in range(3)]
    with client.get_queue_receiver(q) as r:
        got = r.receive_messages(3, max_wait_time=5)
        assert [m.sequence_number for m in got] == seqs
        assert [m.body_bytes for m in got] == [b'{"args":[%d],"kwargs":{}}' % i for i in range(3)]


def test_backoff_grows_to_its_cap() -> None:
    r = Retry(backoff=1, factor=3, max_backoff=20)
    assert [r.delay(n) for n in range(1, 6)] == [1, 3, 9, 20, 20]
    assert Retry(backoff=2, factor=1).delay(7) == 2  # fixed
    assert Retry(backoff=1, factor=2, max_backoff=60).delay(10_000) == 60  # no overflow


def test_jitter_stays_within_its_share_of_the_delay() -> None:
    r = Retry(backoff=1, factor=2, max_backoff=10, jitter=0.5)
    for n, full in ((1, 1.0), (3, 4.0), (9, 10.0)):
        draws = [r.delay(n) for _ in range(500)]
        assert all(full * 0.5 <= d <= full for d in draws)
        assert max(draws) - min(draws) > full * 0.25  # drawn, not fixed
    assert all(0 <= d <= 10 for d in (Retry(backoff=10, jitter=1).delay(1) for _ in range(200)))


def test_exhausted_counts_retries_not_deliveries() -> None:
    r = Retry(max_retries=2)
    assert [r.exhausted(n) for n in (1, 2, 3)] == [False, False, True]
    assert not Retry().exhausted(10**6)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"backoff": -1},
        {"factor": 0.5},
        {"jitter": 1.5},
        {"max_backoff": float("inf")},
        {"max_retries": -1},
        {"max_retries": 1.5},
        {"backoff": "1"},
        {"backoff": 10**9},
    ],
)
def test_bad_policies_are_refused(kwargs: dict[str, Any]) -> None:
    with pytest.raises(InvalidArgumentError):
        Retry(**kwargs)


def test_bad_retry_arguments_are_refused(url: str) -> None:
    with pytest.raises(InvalidArgumentError):
        Worker(url, print, entity="q", retry=3)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        App(url).task(entity="q", retry={"backoff": 1})  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        RetryAfter(-1)
