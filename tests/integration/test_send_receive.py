"""Sending, receive modes, peek-lock settlement and delivery counts, on a real Redis."""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from sbredis import ServiceBusMessage, ServiceBusReceiveMode, ServiceBusSubQueue
from sbredis.exceptions import (
    InvalidArgumentError,
    InvalidOperationError,
    MessageAlreadySettled,
    MessageLockLostError,
    MessageNotFoundError,
    MessageSizeExceededError,
    MessagingEntityDisabledError,
    MessagingEntityNotFoundError,
    ServiceBusError,
    ServiceBusQuotaExceededError,
)
from sbredis.management import EntityStatus
from tests.conftest import eventually

pytestmark = [pytest.mark.integration, pytest.mark.conformance]


def bodies(msgs: list[Any]) -> list[str]:
    return [str(m) for m in msgs]


def test_send_then_peek_lock_complete(client: Any, admin: Any, make_queue: Any) -> None:
    q = make_queue()
    with client.get_queue_sender(q) as s:
        s.send_messages(ServiceBusMessage("hello", subject="greeting", application_properties={"n": 1}))
    with client.get_queue_receiver(q, max_wait_time=2) as r:
        [m] = r.receive_messages(max_message_count=10, max_wait_time=2)
        assert str(m) == "hello" and m.body_bytes == b"hello"
        assert m.subject == "greeting" and m.sent_application_properties == {"n": 1}
        assert m.delivery_count == 0 and m.sequence_number == 1
        assert m.lock_token and m.locked_until_utc > datetime.now(UTC)
        assert m.enqueued_time_utc <= datetime.now(UTC) + timedelta(seconds=5)
        r.complete_message(m)
        assert r.receive_messages(wait=False) == []
    props = admin.get_queue_runtime_properties(q)
    assert props.total_message_count == 0 and props.size_in_bytes == 0


def test_list_and_batch_send_in_order(client: Any, make_queue: Any) -> None:
    q = make_queue()
    with client.get_queue_sender(q) as s:
        s.send_messages([ServiceBusMessage(f"a{i}") for i in range(5)])
        batch = s.create_message_batch()
        for i in range(5):
            batch.add_message(ServiceBusMessage(f"b{i}"))
        s.send_messages(batch)
    with client.get_queue_receiver(q) as r:
        got = r.receive_messages(20, max_wait_time=1)
        assert bodies(got) == [f"a{i}" for i in range(5)] + [f"b{i}" for i in range(5)]
        seqs = [m.sequence_number for m in got]
        assert seqs == sorted(seqs) and len(set(seqs)) == 10


def test_batch_is_bounded_by_entity_message_size(client: Any, make_queue: Any) -> None:
    q = make_queue(max_message_size_in_kilobytes=2)
    with client.get_queue_sender(q) as s:
        batch = s.create_message_batch()
        assert batch.max_size_in_bytes == 2048
        batch.add_message(ServiceBusMessage(b"x" * 900))
        with pytest.raises(MessageSizeExceededError):
            batch.add_message(ServiceBusMessage(b"x" * 1200))
        with pytest.raises(MessageSizeExceededError):
            s.send_messages(ServiceBusMessage(b"x" * 3000))
        # a list over the limit is refused whole: nothing stored
        with pytest.raises(MessageSizeExceededError):
            s.send_messages([ServiceBusMessage(b"x" * 900) for _ in range(3)])
    with client.get_queue_receiver(q) as r:
        assert r.peek_messages(10) == []


def test_a_message_of_exactly_the_maximum_size_is_accepted(client: Any, make_queue: Any) -> None:
    q = make_queue(max_message_size_in_kilobytes=2)

    # the body length whose stored form is exactly 2048 bytes (the limit applies to the stored form;
    # a fixed message_id, as a generated one varies in length)
    def message(n: int) -> ServiceBusMessage:
        return ServiceBusMessage(b"x" * n, message_id="m")

    n = next(n for n in range(1900, 2048) if len(message(n).encoded()) == 2048)
    with client.get_queue_sender(q) as s:
        s.send_messages(message(n))
        with pytest.raises(MessageSizeExceededError):
            s.send_messages(message(n + 1))
    with client.get_queue_receiver(q) as r:
        (m,) = r.receive_messages(1, max_wait_time=1)
        assert str(m) == "x" * n
        r.complete_message(m)


def test_receive_messages_takes_one_message_by_default(client: Any, make_queue: Any) -> None:
    q = make_queue()
    client.get_queue_sender(q).send_messages([ServiceBusMessage(x) for x in "abc"])
    with client.get_queue_receiver(q) as r:
        got = r.receive_messages(max_wait_time=1)
        assert [str(m) for m in got] == ["a"]
        more = r.receive_messages(None, max_wait_time=1)  # None: the default too
        assert [str(m) for m in more] == ["b"]
        r.complete_messages(got + more)


def test_a_partitioned_receive_tops_up_from_the_other_partitions(client: Any, make_queue: Any) -> None:
    q = make_queue(enable_partitioning=True, partition_count=2)
    with client.get_queue_sender(q) as s:
        for i in range(2):  # one send each: one message in each partition
            s.send_messages(ServiceBusMessage(str(i)))
    with client.get_queue_receiver(q) as r:
        # a small count is asked of one partition first; the other is asked for the rest
        got = r.receive_messages(2, max_wait_time=1)
        assert sorted(str(m) for m in got) == ["0", "1"]
        r.complete_messages(got)


def test_a_partitioned_receive_takes_no_more_than_asked(client: Any, make_queue: Any, admin: Any) -> None:
    q = make_queue(enable_partitioning=True, partition_count=4)
    with client.get_queue_sender(q) as s:
        for i in range(8):  # one send each: round-robin over the partitions
            s.send_messages(ServiceBusMessage(str(i)))
    with client.get_queue_receiver(q) as r, client.get_queue_receiver(q) as other:
        got = r.receive_messages(2, max_wait_time=1)
        assert len(got) == 2
        rest = other.receive_messages(8, max_wait_time=1)
        while len(got) + len(rest) < 8 and (more := other.receive_messages(8, max_wait_time=0.2)):
            rest += more
        assert sorted(str(m) for m in got + rest) == [str(i) for i in range(8)]  # nothing held back
        r.complete_messages(got)
        other.complete_messages(rest)
    admin.delete_queue(q)
    with client.get_queue_receiver(q) as r, pytest.raises(MessagingEntityNotFoundError):
        r.receive_messages(1, wait=False)


def test_large_and_small_messages_round_trip_in_one_batch(client: Any, make_queue: Any) -> None:
    # bodies over 64 KiB go to Redis unpacked, between the packed small ones (_core/packer.py)
    q = make_queue(max_message_size_in_kilobytes=1024)
    sent = [os.urandom(70_000), b"small", os.urandom(300_000), os.urandom(65_536), b""]
    with client.get_queue_sender(q) as s:
        s.send_messages([ServiceBusMessage(b, subject=f"n{i}") for i, b in enumerate(sent)])
        s.send_messages(ServiceBusMessage(sent[2]))
    with client.get_queue_receiver(q, max_wait_time=2) as r:
        got = r.receive_messages(max_message_count=10, max_wait_time=2)
        assert [m.body_bytes for m in got] == [*sent, sent[2]]
        assert [m.subject for m in got] == [f"n{i}" for i in range(len(sent))] + [None]
        r.complete_messages(got)


def test_receive_and_delete(client: Any, admin: Any, make_queue: Any) -> None:
    q = make_queue()
    with client.get_queue_sender(q) as s:
        s.send_messages([ServiceBusMessage("one"), ServiceBusMessage("two")])
    with client.get_queue_receiver(q, receive_mode=ServiceBusReceiveMode.RECEIVE_AND_DELETE) as r:
        got = r.receive_messages(2, max_wait_time=1)
        assert bodies(got) == ["one", "two"]
        assert got[0].lock_token is None
        with pytest.raises(ValueError, match="RECEIVE_AND_DELETE"):  # the SDK's error
            r.complete_message(got[0])
    assert admin.get_queue_runtime_properties(q).total_message_count == 0


def test_locked_message_invisible_to_competitors(client: Any, make_queue: Any) -> None:
    q = make_queue(lock_duration=timedelta(seconds=30))
    with client.get_queue_sender(q) as s:
        s.send_messages([ServiceBusMessage("a"), ServiceBusMessage("b")])
    with client.get_queue_receiver(q) as r1, client.get_queue_receiver(q) as r2:
        [a] = r1.receive_messages(1, max_wait_time=1)
        [b] = r2.receive_messages(5, max_wait_time=1)
        assert (str(a), str(b)) == ("a", "b")
        assert r2.receive_messages(5, max_wait_time=0.2) == []
        # peek sees both and locks nothing
        assert bodies(r2.peek_messages(5, sequence_number=1)) == ["a", "b"]
        r1.complete_message(a)
        r2.complete_message(b)


def test_abandon_returns_to_front_and_counts(client: Any, make_queue: Any) -> None:
    q = make_queue()
    with client.get_queue_sender(q) as s:
        s.send_messages([ServiceBusMessage(str(i)) for i in range(3)])
    with client.get_queue_receiver(q) as r:
        [m0] = r.receive_messages(1, max_wait_time=1)
        r.abandon_message(m0)
        [again] = r.receive_messages(1, max_wait_time=1)
        assert str(again) == "0" and again.delivery_count == 1
        assert again.lock_token != m0.lock_token
        with pytest.raises(MessageAlreadySettled):
            r.abandon_message(m0)


def test_lock_elapses_then_redelivered_and_old_token_fails(client: Any, make_queue: Any) -> None:
    q = make_queue(lock_duration=timedelta(milliseconds=300))
    with client.get_queue_sender(q) as s:
        s.send_messages(ServiceBusMessage("x"))
    with client.get_queue_receiver(q) as r1, client.get_queue_receiver(q) as r2:
        [m] = r1.receive_messages(1, max_wait_time=1)
        again = eventually(lambda: r2.receive_messages(1, max_wait_time=0.1), timeout=5)
        assert str(again[0]) == "x" and again[0].delivery_count == 1
        with pytest.raises(MessageLockLostError) as info:
            r1.complete_message(m)  # stolen: the lock is someone else's now
        assert info.value.messages == [m] and info.value.retryable is False
        r2.complete_message(again[0])


def test_settle_after_lock_expired_changes_nothing(client: Any, admin: Any, make_queue: Any) -> None:
    q = make_queue(lock_duration=timedelta(milliseconds=200))
    with client.get_queue_sender(q) as s:
        s.send_messages(ServiceBusMessage("x"))
    with client.get_queue_receiver(q) as r:
        [m] = r.receive_messages(1, max_wait_time=1)
        time.sleep(0.35)
        for settle in (r.complete_message, r.abandon_message, r.defer_message, r.dead_letter_message):
            with pytest.raises(MessageLockLostError):
                settle(m)
        with pytest.raises(MessageLockLostError):
            r.renew_message_lock(m)
        props = admin.get_queue_runtime_properties(q)
        assert props.active_message_count == 1 and props.dead_letter_message_count == 0
        [again] = r.receive_messages(1, max_wait_time=1)
        assert str(again) == "x" and again.delivery_count == 1


def test_renew_extends_lock(client: Any, make_queue: Any) -> None:
    q = make_queue(lock_duration=timedelta(milliseconds=600))
    with client.get_queue_sender(q) as s:
        s.send_messages(ServiceBusMessage("x"))
    with client.get_queue_receiver(q) as r, client.get_queue_receiver(q) as other:
        [m] = r.receive_messages(1, max_wait_time=1)
        first = m.locked_until_utc
        for _ in range(4):  # hold it for ~1.2 s, twice the lock duration
            time.sleep(0.3)
            new = r.renew_message_lock(m)
            assert new == m.locked_until_utc and new > first
            assert other.receive_messages(1, wait=False) == []
        r.complete_message(m)


def test_max_delivery_count_dead_letters(client: Any, make_queue: Any) -> None:
    q = make_queue(max_delivery_count=3)
    with client.get_queue_sender(q) as s:
        s.send_messages(ServiceBusMessage("poison"))
    with client.get_queue_receiver(q) as r:
        for i in range(3):
            [m] = r.receive_messages(1, max_wait_time=1)
            assert m.delivery_count == i
            r.abandon_message(m)
        assert r.receive_messages(1, max_wait_time=0.2) == []
    with client.get_queue_receiver(q, sub_queue=ServiceBusSubQueue.DEAD_LETTER) as d:
        [dl] = d.receive_messages(1, max_wait_time=1)
        assert str(dl) == "poison"
        assert dl.dead_letter_reason == "MaxDeliveryCountExceeded"
        assert "3" in (dl.dead_letter_error_description or "")
        d.complete_message(dl)


def test_lock_elapse_counts_towards_max_delivery(client: Any, make_queue: Any) -> None:
    q = make_queue(max_delivery_count=2, lock_duration=timedelta(milliseconds=150))
    with client.get_queue_sender(q) as s:
        s.send_messages(ServiceBusMessage("slow"))
    with client.get_queue_receiver(q) as r, client.get_queue_receiver(q, sub_queue=ServiceBusSubQueue.DEAD_LETTER) as d:
        r.receive_messages(1, max_wait_time=1)
        time.sleep(0.25)
        [m] = r.receive_messages(1, max_wait_time=1)
        assert m.delivery_count == 1
        time.sleep(0.25)
        # the next receive sweeps the elapsed lock: the second delivery was the last
        assert r.receive_messages(1, wait=False) == []
        [dl] = d.receive_messages(1, max_wait_time=1)
        assert dl.dead_letter_reason == "MaxDeliveryCountExceeded"


def test_dead_letter_with_reason_and_dlq_receiver(client: Any, admin: Any, make_queue: Any) -> None:
    q = make_queue()
    with client.get_queue_sender(q) as s:
        s.send_messages(ServiceBusMessage("bad", application_properties={"k": "v"}))
    with client.get_queue_receiver(q) as r:
        [m] = r.receive_messages(1, max_wait_time=1)
        r.dead_letter_message(m, reason="Invalid", error_description="field x missing")
    props = admin.get_queue_runtime_properties(q)
    assert props.active_message_count == 0 and props.dead_letter_message_count == 1
    with client.get_queue_receiver(q, sub_queue=ServiceBusSubQueue.DEAD_LETTER) as d:
        [peeked] = d.peek_messages(1)
        assert peeked.dead_letter_reason == "Invalid"
        [dl] = d.receive_messages(1, max_wait_time=1)
        assert (dl.dead_letter_reason, dl.dead_letter_error_description) == ("Invalid", "field x missing")
        assert dl.sent_application_properties == {"k": "v"}
        with pytest.raises(InvalidOperationError):
            d.dead_letter_message(dl)
        with client.get_queue_receiver(q) as main, pytest.raises(InvalidOperationError):
            main.complete_message(dl)  # a dead-letter message is not the main queue's
        d.abandon_message(dl)  # back in the dead-letter subqueue
        [dl2] = d.receive_messages(1, max_wait_time=1)
        d.complete_message(dl2)
    assert admin.get_queue_runtime_properties(q).total_message_count == 0


def test_defer_and_receive_deferred(client: Any, admin: Any, make_queue: Any) -> None:
    q = make_queue()
    with client.get_queue_sender(q) as s:
        s.send_messages([ServiceBusMessage("later"), ServiceBusMessage("now")])
    with client.get_queue_receiver(q) as r:
        [m] = r.receive_messages(1, max_wait_time=1)
        seq = m.sequence_number
        r.defer_message(m)
        [n] = r.receive_messages(5, max_wait_time=0.5)
        assert str(n) == "now"
        r.complete_message(n)
        assert r.receive_messages(5, max_wait_time=0.2) == []
        assert admin.get_queue_runtime_properties(q).active_message_count == 1
        [peeked] = r.peek_messages(1, sequence_number=seq)
        assert peeked.state.name == "DEFERRED"
        with pytest.raises(MessageNotFoundError):
            r.receive_deferred_messages([seq, seq + 1])
        [d] = r.receive_deferred_messages([seq])
        assert str(d) == "later" and d.state.name == "DEFERRED" and d.delivery_count == 1
        r.abandon_message(d)  # stays deferred
        assert r.receive_messages(5, max_wait_time=0.2) == []
        [d] = r.receive_deferred_messages(seq)
        r.complete_message(d)
        with pytest.raises(MessageNotFoundError):
            r.receive_deferred_messages([seq])


def test_receive_deferred_again_after_its_lock_elapsed(client: Any, make_queue: Any) -> None:
    # a deferred message whose lock elapsed is deferred again at once: receive_deferred must not
    # answer MessageNotFoundError while no other receive of the partition has swept the lock
    q = make_queue(lock_duration=timedelta(milliseconds=200))
    with client.get_queue_sender(q) as s:
        s.send_messages(ServiceBusMessage("later"))
    with client.get_queue_receiver(q) as r:
        [m] = r.receive_messages(1, max_wait_time=1)
        r.defer_message(m)
        [locked] = r.receive_deferred_messages(m.sequence_number)
        assert locked.delivery_count == 1
        time.sleep(0.35)  # the lock elapses, nothing settles it
        [again] = r.receive_deferred_messages(m.sequence_number)
        assert str(again) == "later" and again.delivery_count == 2
        r.complete_message(again)


def test_settle_twice_and_foreign_messages(client: Any, make_queue: Any, admin: Any) -> None:
    q = make_queue()
    admin.create_queue(q + "-other")
    with client.get_queue_sender(q) as s:
        s.send_messages(ServiceBusMessage("x"))
    with client.get_queue_receiver(q) as r, client.get_queue_receiver(q + "-other") as other:
        [m] = r.receive_messages(1, max_wait_time=1)
        with pytest.raises(InvalidOperationError, match=r"received from '.*' \(main queue\)"):
            other.complete_message(m)
        with pytest.raises(ValueError):  # wrong type: a typed error that is also ValueError/TypeError
            r.complete_message("not a message")  # type: ignore[arg-type]
        r.complete_message(m)
        with pytest.raises(MessageAlreadySettled):
            r.complete_message(m)
        peeked = r.peek_messages(1, sequence_number=1)
        assert peeked == []


def test_a_batch_with_a_bad_message_names_that_message_and_settles_none(client: Any, make_queue: Any) -> None:
    q = make_queue()
    with client.get_queue_sender(q) as s:
        s.send_messages([ServiceBusMessage("a"), ServiceBusMessage("b")])
    with client.get_queue_receiver(q) as r:
        a, b = r.receive_messages(2, max_wait_time=1)
        r.complete_message(b)
        with pytest.raises(MessageAlreadySettled):  # b's error, not one about the good message before it
            r.complete_messages([a, b])
        with pytest.raises(InvalidArgumentError, match="twice"):
            r.complete_messages([a, a])
        assert not a.settled
        r.complete_message(a)  # the refused batches settled nothing


def test_unknown_lock_token_is_lock_lost(client: Any, make_queue: Any) -> None:
    q = make_queue()
    with client.get_queue_sender(q) as s:
        s.send_messages(ServiceBusMessage("x"))
    with client.get_queue_receiver(q) as r:
        [m] = r.receive_messages(1, max_wait_time=1)
        good = m.lock_ref
        m.lock_ref = good._replace(nonce="00" * 8)  # a token this lock never had
        with pytest.raises(MessageLockLostError):
            r.complete_message(m)
        m.lock_ref = good
        r.complete_message(m)


def test_complete_messages_batch_reports_lost_ones(client: Any, make_queue: Any) -> None:
    q = make_queue(lock_duration=timedelta(seconds=30))
    with client.get_queue_sender(q) as s:
        s.send_messages([ServiceBusMessage(str(i)) for i in range(4)])
    with client.get_queue_receiver(q) as r:
        got = r.receive_messages(4, max_wait_time=1)
        got[1].lock_ref = got[1].lock_ref._replace(nonce="ff" * 8)
        with pytest.raises(MessageLockLostError) as info:
            r.complete_messages(got)
        assert info.value.messages == [got[1]]
        assert all(m.settled for i, m in enumerate(got) if i != 1)
        assert bodies(r.peek_messages(10, sequence_number=1)) == ["1"]


def test_peek_from_sequence_number_and_continuation(client: Any, make_queue: Any) -> None:
    q = make_queue()
    with client.get_queue_sender(q) as s:
        s.send_messages([ServiceBusMessage(str(i)) for i in range(6)])
    with client.get_queue_receiver(q) as r:
        assert bodies(r.peek_messages(2)) == ["0", "1"]
        assert bodies(r.peek_messages(2)) == ["2", "3"]  # continues after the last peeked
        assert bodies(r.peek_messages(10, sequence_number=5)) == ["4", "5"]
        assert [m.delivery_count for m in r.peek_messages(3, sequence_number=1)] == [0, 0, 0]
        # peek locked nothing
        assert len(r.receive_messages(6, max_wait_time=1)) == 6


def test_iterate_until_max_wait_time(client: Any, make_queue: Any) -> None:
    q = make_queue()
    with client.get_queue_sender(q) as s:
        s.send_messages([ServiceBusMessage(str(i)) for i in range(5)])
    seen = []
    with client.get_queue_receiver(q, max_wait_time=0.3, prefetch_count=2) as r:
        for m in r:
            seen.append(str(m))
            r.complete_message(m)
    assert seen == [str(i) for i in range(5)]


def test_prefetched_messages_are_handed_out_in_receive_and_delete_mode(client: Any, make_queue: Any) -> None:
    """Fetched ahead in RECEIVE_AND_DELETE mode, the messages are already deleted: the buffer
    hands them out (no lock to check), and closing with some still buffered raises nothing."""
    q = make_queue()
    with client.get_queue_sender(q) as s:
        s.send_messages([ServiceBusMessage(str(i)) for i in range(5)])
    mode = ServiceBusReceiveMode.RECEIVE_AND_DELETE
    with client.get_queue_receiver(q, receive_mode=mode, prefetch_count=4) as r:
        assert bodies(r.receive_messages(1, max_wait_time=1)) == ["0"]
        assert bodies(r.receive_messages(2, wait=False)) == ["1", "2"]  # from the buffer
    with client.get_queue_receiver(q) as r:
        assert r.peek_messages(5, sequence_number=1) == []  # all five were deleted on receipt


def test_close_releases_prefetched_without_counting(client: Any, make_queue: Any) -> None:
    q = make_queue(lock_duration=timedelta(seconds=30))
    with client.get_queue_sender(q) as s:
        s.send_messages([ServiceBusMessage(str(i)) for i in range(3)])
    with client.get_queue_receiver(q, max_wait_time=0.5, prefetch_count=3) as r:
        m = next(iter(r))
        r.complete_message(m)
    with client.get_queue_receiver(q) as r2:
        got = r2.receive_messages(3, max_wait_time=0.5)
        assert bodies(got) == ["1", "2"]
        assert [m.delivery_count for m in got] == [0, 0]


@pytest.mark.parametrize("wait", [{"max_wait_time": 30}, {}], ids=["max_wait_time", "no_wait_given"])
def test_receive_waits_for_a_message(client: Any, make_queue: Any, wait: dict[str, Any]) -> None:
    """With max_wait_time, or with none anywhere (the receive then waits as long as it takes,
    polling an empty queue with growing pauses), the receive returns the message once it is sent."""
    import threading

    q = make_queue()

    def later() -> None:
        time.sleep(0.3)
        with client.get_queue_sender(q) as s:
            s.send_messages(ServiceBusMessage("late"))

    t = threading.Thread(target=later)
    t.start()
    with client.get_queue_receiver(q) as r:
        started = time.monotonic()
        assert bodies(r.receive_messages(1, **wait)) == ["late"]
        assert time.monotonic() - started < 30  # returned with its one message, not at max_wait_time
    t.join()


def test_errors_are_service_bus_errors(client: Any) -> None:
    from sbredis.exceptions import MessagingEntityNotFoundError

    with pytest.raises(MessagingEntityNotFoundError) as info, client.get_queue_sender("no-such-queue") as s:
        s.send_messages(ServiceBusMessage("x"))
    assert isinstance(info.value, ServiceBusError) and info.value.tracking_id
    assert "no-such-queue" in str(info.value)


@pytest.mark.parametrize("status", [EntityStatus.RECEIVE_DISABLED, EntityStatus.DISABLED])
def test_a_message_cannot_be_completed_while_its_queue_cannot_receive(
    client: Any, admin: Any, make_queue: Any, status: EntityStatus
) -> None:
    """Completing one message (the one-message path of complete.lua) on a queue disabled for
    receiving raises and leaves the message; once the queue is active again the lock still holds."""
    q = make_queue(lock_duration=timedelta(seconds=30))
    with client.get_queue_sender(q) as s:
        s.send_messages(ServiceBusMessage("m"))
    with client.get_queue_receiver(q) as r:
        [m] = r.receive_messages(1, max_wait_time=5)
        props = admin.get_queue(q)
        props.status = status
        admin.update_queue(props)
        with pytest.raises(MessagingEntityDisabledError):
            r.complete_message(m)
        props.status = EntityStatus.ACTIVE
        admin.update_queue(props)
        r.complete_message(m)
    assert admin.get_queue_runtime_properties(q).total_message_count == 0


def test_a_sender_is_held_to_a_message_size_lowered_after_it_first_sent(
    client: Any, admin: Any, make_queue: Any
) -> None:
    """The entity's limit is checked where the messages are stored: a sender that sent before the
    limit was lowered (and may check against what it read then) still has a list over the new
    limit refused whole."""
    q = make_queue(max_message_size_in_kilobytes=4)
    with client.get_queue_sender(q) as s:
        s.send_messages([ServiceBusMessage(b"x" * 900) for _ in range(3)])
        props = admin.get_queue(q)
        props.max_message_size_in_kilobytes = 2
        admin.update_queue(props)
        with pytest.raises(MessageSizeExceededError):
            s.send_messages([ServiceBusMessage(b"y" * 900) for _ in range(3)])
    with client.get_queue_receiver(q) as r:
        assert [m.body_bytes for m in r.peek_messages(10)] == [b"x" * 900] * 3


def test_a_send_that_fills_the_queue_exactly_is_stored_and_the_next_is_refused(
    client: Any, admin: Any, make_queue: Any
) -> None:
    """max_size_in_megabytes is the most a queue holds: stored messages may add up to it exactly."""
    q = make_queue(max_size_in_megabytes=1)

    def message(n: int) -> ServiceBusMessage:  # a fixed message_id: a generated one varies in length
        return ServiceBusMessage(b"x" * n, message_id="m")

    big = message(200_000)
    rest = 1024 * 1024 - 4 * len(big.encoded())
    n = next(n for n in range(rest - 200, rest) if len(message(n).encoded()) == rest)
    with client.get_queue_sender(q) as s:
        for _ in range(4):
            s.send_messages(message(200_000))
        s.send_messages(message(n))  # exactly full
        assert admin.get_queue_runtime_properties(q).size_in_bytes == 1024 * 1024
        with pytest.raises(ServiceBusQuotaExceededError):
            s.send_messages(ServiceBusMessage(b"y"))
    assert admin.get_queue_runtime_properties(q).active_message_count == 5


def test_a_receive_over_partitions_takes_the_rest_from_the_partition_that_holds_it(
    client: Any, make_queue: Any
) -> None:
    """A receive splits its count over the partitions; one that gave its whole share may have
    more, and the receive takes it from there: all eight in one call."""
    q = make_queue(enable_partitioning=True, partition_count=4)
    with client.get_queue_sender(q) as s:
        s.send_messages([ServiceBusMessage(str(i), partition_key="k") for i in range(8)])
    with client.get_queue_receiver(q) as r:
        got = r.receive_messages(max_message_count=8, max_wait_time=5)
        assert [str(m) for m in got] == [str(i) for i in range(8)]
        r.complete_messages(got)
