"""TTL and expiry, scheduled messages and duplicate detection, on a real Redis."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from sbredis import ServiceBusMessage, ServiceBusMessageState, ServiceBusSubQueue
from sbredis.exceptions import MessageNotFoundError
from tests.conftest import eventually

pytestmark = [pytest.mark.integration, pytest.mark.conformance]
MS = timedelta(milliseconds=1)


def dlq(client: Any, q: str) -> Any:
    return client.get_queue_receiver(q, sub_queue=ServiceBusSubQueue.DEAD_LETTER)


def test_expires_at_is_enqueued_plus_ttl(client: Any, make_queue: Any) -> None:
    q = make_queue()
    with client.get_queue_sender(q) as s:
        s.send_messages(ServiceBusMessage("x", time_to_live=timedelta(minutes=5)))
    with client.get_queue_receiver(q) as r:
        [m] = r.receive_messages(1, max_wait_time=1)
        assert m.expires_at_utc - m.enqueued_time_utc == timedelta(minutes=5)
        assert m.time_to_live == timedelta(minutes=5)


def test_entity_ttl_is_default_and_ceiling(client: Any, make_queue: Any) -> None:
    q = make_queue(default_message_time_to_live=timedelta(minutes=1))
    with client.get_queue_sender(q) as s:
        s.send_messages(
            [
                ServiceBusMessage("default"),
                ServiceBusMessage("long", time_to_live=timedelta(hours=1)),
                ServiceBusMessage("short", time_to_live=timedelta(seconds=10)),
            ]
        )
    with client.get_queue_receiver(q) as r:
        got = {str(m): m.expires_at_utc - m.enqueued_time_utc for m in r.receive_messages(3, max_wait_time=1)}
    assert got == {"default": timedelta(minutes=1), "long": timedelta(minutes=1), "short": timedelta(seconds=10)}


def test_entity_ttl_applies_to_a_batch_of_plain_messages(client: Any, admin: Any, make_queue: Any) -> None:
    # messages without TTL, schedule or duplicate check take send.lua's plain path
    q = make_queue(default_message_time_to_live=300 * MS, dead_lettering_on_message_expiration=True)
    with client.get_queue_sender(q) as s:
        s.send_messages([ServiceBusMessage(b) for b in ("a", "b", "c")])
    with client.get_queue_receiver(q) as r:
        peeked = r.peek_messages(5)
        assert [str(m) for m in peeked] == ["a", "b", "c"]
        assert {m.expires_at_utc - m.enqueued_time_utc for m in peeked} == {300 * MS}
        time.sleep(0.4)  # past the TTL: a receive hands none out (and dead-letters them)
        assert r.receive_messages(5, wait=False) == []
    with dlq(client, q) as d:
        got = eventually(lambda: d.receive_messages(5, max_wait_time=0.2))
        assert [(str(m), m.dead_letter_reason) for m in got] == [(b, "TTLExpiredException") for b in ("a", "b", "c")]
    assert admin.get_queue_runtime_properties(q).active_message_count == 0


def test_no_ttl_never_expires(client: Any, make_queue: Any) -> None:
    q = make_queue()
    with client.get_queue_sender(q) as s:
        s.send_messages(ServiceBusMessage("x"))
    with client.get_queue_receiver(q) as r:
        [m] = r.receive_messages(1, max_wait_time=1)
        assert m.expires_at_utc is None and m.time_to_live is None


def test_expired_never_received_and_dropped(client: Any, admin: Any, make_queue: Any) -> None:
    q = make_queue()
    with client.get_queue_sender(q) as s:
        s.send_messages([ServiceBusMessage("short", time_to_live=150 * MS), ServiceBusMessage("keep")])
    time.sleep(0.3)
    with client.get_queue_receiver(q) as r:
        # lazily removed: may still show in peek until a receive runs
        got = r.receive_messages(5, max_wait_time=0.5)
        assert [str(m) for m in got] == ["keep"]
        r.complete_messages(got)
    props = admin.get_queue_runtime_properties(q)
    assert props.total_message_count == 0 and props.dead_letter_message_count == 0


def test_expired_dead_lettered_when_enabled(client: Any, admin: Any, make_queue: Any) -> None:
    q = make_queue(dead_lettering_on_message_expiration=True)
    with client.get_queue_sender(q) as s:
        s.send_messages(ServiceBusMessage("short", time_to_live=100 * MS))
    time.sleep(0.25)
    with client.get_queue_receiver(q) as r:
        assert r.receive_messages(1, wait=False) == []
    with dlq(client, q) as d:
        [m] = d.receive_messages(1, max_wait_time=1)
        assert str(m) == "short" and m.dead_letter_reason == "TTLExpiredException"
        assert m.expires_at_utc is None  # dead-lettered messages do not expire
        d.abandon_message(m)
    props = admin.get_queue_runtime_properties(q)
    assert (props.active_message_count, props.dead_letter_message_count) == (0, 1)


def test_dead_letter_receiver_gets_expired_messages_without_a_main_receive(client: Any, make_queue: Any) -> None:
    # a dead-letter receive sweeps the main queue of its partition first: a dead-letter receiver
    # alone (no main-queue receive) must still see expired messages
    q = make_queue(dead_lettering_on_message_expiration=True, enable_partitioning=True, partition_count=2)
    with client.get_queue_sender(q) as s:
        s.send_messages([ServiceBusMessage(f"short{i}", time_to_live=100 * MS) for i in range(2)])
    time.sleep(0.25)
    got: list[Any] = []
    with dlq(client, q) as d:
        eventually(lambda: got.extend(d.receive_messages(2, max_wait_time=1)) or len(got) == 2)
        assert sorted(str(m) for m in got) == ["short0", "short1"]
        assert {m.dead_letter_reason for m in got} == {"TTLExpiredException"}


def test_expiry_sweep_reaches_messages_behind_others(client: Any, make_queue: Any) -> None:
    q = make_queue(dead_lettering_on_message_expiration=True, lock_duration=timedelta(seconds=30))
    with client.get_queue_sender(q) as s:
        expiring = [ServiceBusMessage(f"e{i}", time_to_live=100 * MS) for i in range(3)]
        s.send_messages([ServiceBusMessage("first"), *expiring])
    time.sleep(0.25)
    with client.get_queue_receiver(q) as r:
        [first] = r.receive_messages(1, max_wait_time=1)  # the sweep dead-letters all three
        assert str(first) == "first"
    with dlq(client, q) as d:
        assert sorted(str(m) for m in d.peek_messages(10)) == ["e0", "e1", "e2"]


def test_locked_message_does_not_expire_while_locked(client: Any, make_queue: Any) -> None:
    q = make_queue(dead_lettering_on_message_expiration=True, lock_duration=timedelta(seconds=30))
    with client.get_queue_sender(q) as s:
        s.send_messages(ServiceBusMessage("x", time_to_live=200 * MS))
    with client.get_queue_receiver(q) as r:
        [m] = r.receive_messages(1, max_wait_time=1)
        time.sleep(0.35)
        r.receive_messages(1, wait=False)  # a sweep runs; the locked message is left alone
        r.renew_message_lock(m)
        r.complete_message(m)  # completed under lock: never dead-lettered
    with dlq(client, q) as d:
        assert d.peek_messages(5) == []


def test_abandon_after_ttl_expires_at_once(client: Any, make_queue: Any) -> None:
    q = make_queue(dead_lettering_on_message_expiration=True, lock_duration=timedelta(seconds=30))
    with client.get_queue_sender(q) as s:
        s.send_messages(ServiceBusMessage("x", time_to_live=200 * MS))
    with client.get_queue_receiver(q) as r:
        [m] = r.receive_messages(1, max_wait_time=1)
        time.sleep(0.3)
        r.abandon_message(m)
        assert r.receive_messages(1, wait=False) == []
    with dlq(client, q) as d:
        [dl] = d.receive_messages(1, max_wait_time=1)
        assert dl.dead_letter_reason == "TTLExpiredException"


def test_lock_elapse_after_ttl_expires_at_once(client: Any, make_queue: Any) -> None:
    q = make_queue(lock_duration=timedelta(milliseconds=200))
    with client.get_queue_sender(q) as s:
        s.send_messages(ServiceBusMessage("x", time_to_live=150 * MS))
    with client.get_queue_receiver(q) as r:
        r.receive_messages(1, max_wait_time=1)
        time.sleep(0.35)
        assert r.receive_messages(1, max_wait_time=0.2) == []  # dropped (no dead-lettering)
        assert r.peek_messages(5, sequence_number=1) == []


def test_deferred_message_expires(client: Any, make_queue: Any) -> None:
    q = make_queue(dead_lettering_on_message_expiration=True, lock_duration=timedelta(seconds=30))
    with client.get_queue_sender(q) as s:
        s.send_messages(ServiceBusMessage("x", time_to_live=200 * MS))
    with client.get_queue_receiver(q) as r:
        [m] = r.receive_messages(1, max_wait_time=1)
        r.defer_message(m)
        time.sleep(0.3)
        r.receive_messages(1, wait=False)  # the sweep expires the deferred message
        with pytest.raises(MessageNotFoundError):
            r.receive_deferred_messages([m.sequence_number])
    with dlq(client, q) as d:
        assert [x.dead_letter_reason for x in d.peek_messages(5)] == ["TTLExpiredException"]


def test_scheduled_message_materializes_at_its_time(client: Any, admin: Any, make_queue: Any) -> None:
    q = make_queue()
    at = datetime.now(UTC) + timedelta(milliseconds=400)
    with client.get_queue_sender(q) as s:
        [seq] = s.schedule_messages(ServiceBusMessage("later", time_to_live=timedelta(minutes=1)), at)
    assert admin.get_queue_runtime_properties(q).scheduled_message_count == 1
    with client.get_queue_receiver(q) as r:
        [peeked] = r.peek_messages(1)
        assert peeked.state is ServiceBusMessageState.SCHEDULED and peeked.sequence_number == seq
        assert r.receive_messages(1, wait=False) == []
        [m] = r.receive_messages(1, max_wait_time=5)
        assert str(m) == "later" and m.sequence_number == seq
        # a scheduled message's enqueued time is its scheduled time; expiry counts from there
        assert abs(m.enqueued_time_utc - at) < timedelta(milliseconds=2)
        assert m.expires_at_utc - m.enqueued_time_utc == timedelta(minutes=1)
        r.complete_message(m)


def test_schedule_messages_sets_the_scheduled_time_a_receiver_reads(client: Any, make_queue: Any) -> None:
    q = make_queue()
    with client.get_queue_sender(q) as s, client.get_queue_receiver(q) as r:
        s.send_messages(ServiceBusMessage("again"))
        [received] = r.receive_messages(1, max_wait_time=5)
        r.complete_message(received)
        at = (datetime.now(UTC) + timedelta(milliseconds=300)).replace(microsecond=0) + timedelta(seconds=1)
        fresh = ServiceBusMessage("fresh")
        s.schedule_messages([received, fresh], at)
        # the SDK sets it on the messages given, received ones included
        assert fresh.scheduled_enqueue_time_utc == at
        got = eventually(lambda: r.receive_messages(2, max_wait_time=0.2), timeout=10)
        got += r.receive_messages(2, max_wait_time=0.5) if len(got) < 2 else []
        assert sorted(str(m) for m in got) == ["again", "fresh"]
        assert [m.scheduled_enqueue_time_utc for m in got] == [at, at]
        assert all(m.enqueued_time_utc >= at for m in got)


def test_scheduled_enqueue_time_on_message(client: Any, make_queue: Any) -> None:
    q = make_queue()
    at = datetime.now(UTC) + timedelta(milliseconds=300)
    with client.get_queue_sender(q) as s:
        s.send_messages(ServiceBusMessage("x", scheduled_enqueue_time_utc=at))
    with client.get_queue_receiver(q) as r:
        assert r.receive_messages(1, wait=False) == []
        assert [str(m) for m in eventually(lambda: r.receive_messages(1, max_wait_time=0.1))] == ["x"]


def test_cancel_scheduled(client: Any, admin: Any, make_queue: Any) -> None:
    q = make_queue()
    at = datetime.now(UTC) + timedelta(milliseconds=300)
    with client.get_queue_sender(q) as s:
        seqs = s.schedule_messages([ServiceBusMessage("a"), ServiceBusMessage("b")], at)
        assert len(seqs) == 2 and seqs[0] < seqs[1]
        with pytest.raises(MessageNotFoundError):
            s.cancel_scheduled_messages([seqs[0], seqs[1] + 100])  # nothing cancelled
        assert admin.get_queue_runtime_properties(q).scheduled_message_count == 2
        s.cancel_scheduled_messages(seqs)
    time.sleep(0.4)
    with client.get_queue_receiver(q) as r:
        assert r.receive_messages(2, max_wait_time=0.2) == []
    props = admin.get_queue_runtime_properties(q)
    assert props.total_message_count == 0 and props.size_in_bytes == 0


def test_cancel_after_the_scheduled_time_is_refused(client: Any, make_queue: Any) -> None:
    # a message whose time has come is enqueued even before a receive moves it to the ready set,
    # so cancelling it must fail rather than lose it
    q = make_queue()
    with client.get_queue_sender(q) as s:
        (seq,) = s.schedule_messages(ServiceBusMessage("due"), datetime.now(UTC) + timedelta(milliseconds=100))
        time.sleep(0.25)
        with pytest.raises(MessageNotFoundError):
            s.cancel_scheduled_messages(seq)
    with client.get_queue_receiver(q) as r:
        assert [str(m) for m in r.receive_messages(1, max_wait_time=1)] == ["due"]


def test_duplicate_detection_drops_repeats_in_window(client: Any, make_queue: Any) -> None:
    q = make_queue(
        requires_duplicate_detection=True, duplicate_detection_history_time_window=timedelta(milliseconds=500)
    )
    with client.get_queue_sender(q) as s:
        s.send_messages(ServiceBusMessage("first", message_id="id-1"))
        s.send_messages(ServiceBusMessage("again", message_id="id-1"))  # accepted, dropped
        s.send_messages([ServiceBusMessage("x", message_id="id-2"), ServiceBusMessage("x2", message_id="id-2")])
    with client.get_queue_receiver(q) as r:
        got = r.receive_messages(10, max_wait_time=0.5)
        assert sorted(str(m) for m in got) == ["first", "x"]
        r.complete_messages(got)
    time.sleep(0.6)  # the window passed: the id is new again
    with client.get_queue_sender(q) as s:
        s.send_messages(ServiceBusMessage("after", message_id="id-1"))
    with client.get_queue_receiver(q) as r:
        assert [str(m) for m in r.receive_messages(10, max_wait_time=1)] == ["after"]


def test_duplicate_detection_off_keeps_repeats(client: Any, make_queue: Any) -> None:
    q = make_queue()
    with client.get_queue_sender(q) as s:
        s.send_messages([ServiceBusMessage("a", message_id="same"), ServiceBusMessage("b", message_id="same")])
    with client.get_queue_receiver(q) as r:
        assert len(r.receive_messages(10, max_wait_time=0.5)) == 2


def test_resending_same_message_object_is_deduplicated(client: Any, make_queue: Any) -> None:
    q = make_queue(requires_duplicate_detection=True, enable_partitioning=True, partition_count=4)
    m = ServiceBusMessage("once")  # message_id generated once, kept across retries
    with client.get_queue_sender(q) as s:
        for _ in range(3):
            s.send_messages(m)
    with client.get_queue_receiver(q) as r:
        assert [str(x) for x in r.receive_messages(10, max_wait_time=0.5)] == ["once"]


def test_a_received_message_changed_and_sent_on_keeps_its_body(client: Any, make_queue: Any) -> None:
    q = make_queue()
    with client.get_queue_sender(q) as s, client.get_queue_receiver(q, max_wait_time=5) as r:
        s.send_messages(ServiceBusMessage(b"\x00payload", subject="first", application_properties={"k": 1}))
        [m] = r.receive_messages(1)
        r.complete_message(m)
        m.subject = "second"
        s.send_messages(m)
        [again] = r.receive_messages(1)
        assert (again.body_bytes, again.subject, again.sent_application_properties) == (
            b"\x00payload",
            "second",
            {"k": 1},
        )


@pytest.mark.parametrize("count", [2, 20])  # 20: send.lua writes a larger batch's expiry index after its opening
def test_dead_letter_receiver_gets_plain_messages_expired_by_the_entity_ttl(
    client: Any, make_queue: Any, count: int
) -> None:
    # plain messages (send.lua's short path) expire by the entity's default TTL: a dead-letter
    # receiver alone (no main-queue receive reads them) must still see them expire
    q = make_queue(default_message_time_to_live=200 * MS, dead_lettering_on_message_expiration=True)
    bodies = [f"m{i}" for i in range(count)]
    with client.get_queue_sender(q) as s:
        s.send_messages([ServiceBusMessage(b) for b in bodies])
    got: list[Any] = []
    with dlq(client, q) as d:
        eventually(lambda: got.extend(d.receive_messages(count, max_wait_time=0.5)) or len(got) == count)
        assert [(str(m), m.dead_letter_reason) for m in got] == [(b, "TTLExpiredException") for b in bodies]


def test_a_receive_behind_more_expired_messages_than_one_sweep_expires_gets_none(client: Any, make_queue: Any) -> None:
    # a receive's sweep expires at most 5,000 messages (EXPIRE_BUDGET); the read after it meets
    # the others and must expire them too, never hand them out
    q = make_queue(default_message_time_to_live=200 * MS)
    with client.get_queue_sender(q) as s:
        for i in range(0, 5_500, 500):
            s.send_messages([ServiceBusMessage(str(j)) for j in range(i, i + 500)])
    time.sleep(0.3)  # past the TTL of all
    with client.get_queue_receiver(q) as r:
        assert r.receive_messages(max_message_count=100, max_wait_time=1) == []
