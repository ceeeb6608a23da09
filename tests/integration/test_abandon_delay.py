"""abandon_message(delay=...): the message comes back as a scheduled one, its delivery count kept."""

from __future__ import annotations

from typing import Any

import pytest

from sbredis import ServiceBusMessage, ServiceBusMessageState, ServiceBusSubQueue
from sbredis.exceptions import InvalidArgumentError, InvalidOperationError
from tests.conftest import eventually

pytestmark = [pytest.mark.integration, pytest.mark.conformance]


def send(client: Any, q: str, *bodies: str) -> None:
    with client.get_queue_sender(q) as s:
        s.send_messages([ServiceBusMessage(b) for b in bodies])


def test_delayed_abandon_is_scheduled_then_redelivered_with_its_count(client: Any, make_queue: Any) -> None:
    q = make_queue(max_delivery_count=5)
    send(client, q, "a", "b")
    with client.get_queue_receiver(q) as r:
        a, b = r.receive_messages(2, max_wait_time=5)
        r.abandon_message(a, delay=3600)
        r.abandon_message(b, delay=0.2)
        (peeked,) = [m for m in r.peek_messages(10, sequence_number=0) if m.sequence_number == a.sequence_number]
        assert peeked.state is ServiceBusMessageState.SCHEDULED
        got = eventually(lambda: r.receive_messages(5, max_wait_time=0.1), timeout=10)
        assert [(m.body_bytes, m.delivery_count) for m in got] == [(b"b", 1)]
        r.complete_message(got[0])
        assert r.receive_messages(5, max_wait_time=0.3) == []  # "a" waits out its hour


def test_delay_does_not_outlive_max_delivery_count(client: Any, make_queue: Any) -> None:
    q = make_queue(max_delivery_count=1)
    send(client, q, "x")
    with client.get_queue_receiver(q) as r:
        (m,) = r.receive_messages(1, max_wait_time=5)
        r.abandon_message(m, delay=3600)
    with client.get_queue_receiver(q, sub_queue=ServiceBusSubQueue.DEAD_LETTER) as dlq:
        (dead,) = dlq.peek_messages(1, sequence_number=0)
        assert dead.dead_letter_reason == "MaxDeliveryCountExceeded" and dead.delivery_count == 0


def test_delayed_abandon_of_a_deferred_message_defers_it_again(client: Any, make_queue: Any) -> None:
    q = make_queue()
    send(client, q, "d")
    with client.get_queue_receiver(q) as r:
        (m,) = r.receive_messages(1, max_wait_time=5)
        r.defer_message(m)
        (again,) = r.receive_deferred_messages(m.sequence_number)
        r.abandon_message(again, delay=0.05)
        (third,) = r.receive_deferred_messages(m.sequence_number)
        assert third.delivery_count == 2
        r.complete_message(third)


def test_bad_delays_are_refused_before_anything_changes(client: Any, make_queue: Any) -> None:
    q = make_queue()
    send(client, q, "x")
    with client.get_queue_receiver(q) as r:
        (m,) = r.receive_messages(1, max_wait_time=5)
        for bad in (-1, "5", True, float("nan"), 10**9):
            with pytest.raises(InvalidArgumentError):
                r.abandon_message(m, delay=bad)
        with client.transaction() as tx, pytest.raises(InvalidOperationError):
            r.abandon_message(m, delay=1, transaction=tx)
        r.complete_message(m)  # still locked: nothing was abandoned


def test_a_delayed_abandon_is_due_exactly_its_delay_later(client: Any, make_queue: Any, raw_redis: Any) -> None:
    """The message comes back when its delay is over by the server's clock, to the millisecond:
    1000 s later, not a second more (a retry schedule's delays add up)."""
    from sbredis._core.keys import partition_keys
    from sbredis._core.validation import LOCAL_MASK, PARTITION_SHIFT

    q = make_queue()
    send(client, q, "a")

    def server_ms() -> int:
        s, us = raw_redis.time()
        return int(s) * 1000 + int(us) // 1000

    with client.get_queue_receiver(q) as r:
        (a,) = r.receive_messages(1, max_wait_time=5)
        before = server_ms()
        r.abandon_message(a, delay=1000)
        after = server_ms()
    partition, local = a.sequence_number >> PARTITION_SHIFT, a.sequence_number & LOCAL_MASK
    sched = next(k for k in partition_keys(q, partition) if k.endswith(":sched"))
    due = raw_redis.zscore(sched, local)
    assert due is not None, "the abandoned message is not scheduled"
    assert before + 1_000_000 <= due <= after + 1_000_000
