"""The last millisecond of a lock, a session lock, a TTL, a schedule and a duplicate-detection window.

A running clock cannot pin these (a test would have to act within the very millisecond), so the
server's clock stands still here (tests/reliability/clock.py) and each test moves it to the
boundary: a lock holds through its locked-until ms and is lost one ms later; a message expires at
its expires-at ms; a schedule is due at its ms; a duplicate-detection window ends at its ms. They
pin the comparisons the mutation run (scripts/mutation.py, docs/reliability.md) flips.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from sbredis import ServiceBusClient, ServiceBusMessage, ServiceBusSubQueue
from sbredis._core.ops import SWEEP_LIMIT
from sbredis.exceptions import MessageLockLostError, SessionCannotBeLockedError, SessionLockLostError
from sbredis.management import ServiceBusAdministrationClient
from tests.redis_server import RedisServer
from tests.reliability.clock import ServerClock

pytestmark = [pytest.mark.integration, pytest.mark.reliability]

LOCK_MS = 10_000


def utc(ms: int) -> datetime:
    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=ms)


@pytest.fixture()
def bus(clocked: tuple[RedisServer, ServerClock]) -> Iterator[tuple[Any, ServiceBusClient, ServerClock, str]]:
    server, clock = clocked
    clock.advance(3_600_000)  # past every lock, TTL and window an earlier test left
    with (
        ServiceBusAdministrationClient.from_connection_string(server.url) as admin,
        ServiceBusClient.from_connection_string(server.url) as client,
    ):
        yield admin, client, clock, "b-" + uuid.uuid4().hex[:10]


def test_a_lock_holds_through_its_locked_until_ms(bus: tuple[Any, ServiceBusClient, ServerClock, str]) -> None:
    admin, client, clock, q = bus
    admin.create_queue(q, lock_duration=timedelta(milliseconds=LOCK_MS))
    client.get_queue_sender(q).send_messages([ServiceBusMessage("c"), ServiceBusMessage("a"), ServiceBusMessage("b")])
    with client.get_queue_receiver(q) as r, client.get_queue_receiver(q) as other:
        (c,) = r.receive_messages(1, max_wait_time=2)
        assert str(c) == "c"
        clock.advance(1)
        a, b = r.receive_messages(2, max_wait_time=2)
        until = clock.now_ms + LOCK_MS
        assert a.locked_until_utc == b.locked_until_utc == utc(until)
        clock.set(until)
        # held at its last ms, also while another lock of the queue (c's, a ms older) has elapsed:
        # then a settlement compares each lock's locked-until with the server's now
        r.complete_message(a)
        got = other.receive_messages(2, wait=False)
        assert [str(m) for m in got] == ["c"]  # b is not elapsed at its last ms either
        other.complete_messages(got)
        clock.set(until + 1)
        with pytest.raises(MessageLockLostError):
            r.complete_message(b)
        (again,) = other.receive_messages(1, wait=False)
        assert (str(again), again.delivery_count) == ("b", 1)
        other.complete_message(again)


def test_a_lock_holds_through_its_locked_until_ms_for_a_settlement_of_several(
    bus: tuple[Any, ServiceBusClient, ServerClock, str],
) -> None:
    # complete_message of one message has a short path of its own (complete.lua); several
    # messages are checked by held(), at its last ms too
    admin, client, clock, q = bus
    admin.create_queue(q, lock_duration=timedelta(milliseconds=LOCK_MS))
    client.get_queue_sender(q).send_messages([ServiceBusMessage("c"), ServiceBusMessage("a"), ServiceBusMessage("b")])
    with client.get_queue_receiver(q) as r:
        (c,) = r.receive_messages(1, max_wait_time=2)
        clock.advance(1)
        a, b = r.receive_messages(2, max_wait_time=2)
        until = clock.now_ms + LOCK_MS
        clock.set(until)  # c's lock elapsed a ms ago; a's and b's hold
        r.complete_messages([a, b])
        with pytest.raises(MessageLockLostError):
            r.complete_messages([c])
        (again,) = r.receive_messages(1, wait=False)
        assert (str(again), again.delivery_count) == ("c", 1)
        r.complete_message(again)


def test_a_session_lock_holds_through_its_locked_until_ms(
    bus: tuple[Any, ServiceBusClient, ServerClock, str],
) -> None:
    admin, client, clock, q = bus
    admin.create_queue(q, requires_session=True, lock_duration=timedelta(milliseconds=LOCK_MS))
    client.get_queue_sender(q).send_messages(ServiceBusMessage("m", session_id="s"))
    with client.get_queue_receiver(q, session_id="s") as r:
        assert r.session is not None
        until = clock.now_ms + LOCK_MS
        assert r.session.locked_until_utc == utc(until)
        (m,) = r.receive_messages(1, max_wait_time=1)
        r.defer_message(m)
        clock.set(until)
        with pytest.raises(SessionCannotBeLockedError), client.get_queue_receiver(q, session_id="s"):
            pass  # still held at its last ms
        assert r.session.renew_lock() == utc(until + LOCK_MS)
        clock.set(until + LOCK_MS + 1)
        with pytest.raises(SessionLockLostError):
            r.session.renew_lock()
        with pytest.raises(SessionLockLostError):
            r.receive_deferred_messages([m.sequence_number])
    with client.get_queue_receiver(q, session_id="s") as again:
        (d,) = again.receive_deferred_messages([m.sequence_number])
        again.complete_message(d)


def test_a_deferred_message_expires_at_its_expires_at_ms(
    bus: tuple[Any, ServiceBusClient, ServerClock, str],
) -> None:
    admin, client, clock, q = bus
    admin.create_queue(q, dead_lettering_on_message_expiration=True, lock_duration=timedelta(milliseconds=LOCK_MS))
    client.get_queue_sender(q).send_messages(ServiceBusMessage("x", time_to_live=timedelta(milliseconds=5_000)))
    expires = clock.now_ms + 5_000
    with (
        client.get_queue_receiver(q) as r,
        client.get_queue_receiver(q, sub_queue=ServiceBusSubQueue.DEAD_LETTER) as dlq,
    ):
        (m,) = r.receive_messages(1, max_wait_time=2)
        assert m.expires_at_utc == utc(expires)
        r.defer_message(m)
        clock.set(expires - 1)
        assert dlq.receive_messages(1, wait=False) == []
        clock.set(expires)
        (dead,) = dlq.receive_messages(1, wait=False)
        assert (str(dead), dead.dead_letter_reason) == ("x", "TTLExpiredException")
        dlq.complete_message(dead)


def test_receive_deferred_hands_out_no_message_at_its_expires_at_ms(
    bus: tuple[Any, ServiceBusClient, ServerClock, str],
) -> None:
    admin, client, clock, q = bus
    admin.create_queue(q, dead_lettering_on_message_expiration=True, lock_duration=timedelta(milliseconds=LOCK_MS))
    client.get_queue_sender(q).send_messages(ServiceBusMessage("x", time_to_live=timedelta(milliseconds=5_000)))
    with client.get_queue_receiver(q) as r:
        (m,) = r.receive_messages(1, max_wait_time=2)
        r.defer_message(m)
        clock.set(clock.now_ms + 5_000)
        assert r.receive_deferred_messages([m.sequence_number]) == []  # no receive swept it first
    assert admin.get_queue_runtime_properties(q).dead_letter_message_count == 1


def test_a_receive_hands_out_no_message_at_its_expires_at_ms(
    bus: tuple[Any, ServiceBusClient, ServerClock, str],
) -> None:
    admin, client, clock, q = bus
    admin.create_queue(q)
    ttl = timedelta(milliseconds=5_000)
    # more expire at once than one receive sweeps (SWEEP_LIMIT, 100): the rest meet take()'s own check
    old = [ServiceBusMessage(f"old-{i}", time_to_live=ttl) for i in range(SWEEP_LIMIT + 1)]
    client.get_queue_sender(q).send_messages([*old, ServiceBusMessage("live")])
    clock.set(clock.now_ms + 5_000)
    with client.get_queue_receiver(q) as r:
        got = r.receive_messages(1, wait=False)
        assert [str(m) for m in got] == ["live"]
        r.complete_messages(got)


def test_a_receive_behind_more_than_one_sweep_of_expiries_hands_out_none_at_its_expires_at_ms(
    bus: tuple[Any, ServiceBusClient, ServerClock, str],
) -> None:
    admin, client, clock, q = bus
    admin.create_queue(q, default_message_time_to_live=timedelta(milliseconds=5_000))
    # more expire at once than one receive's sweep expires (5,000: EXPIRE_BUDGET in
    # includes/messages.lua): the read behind it meets the rest and must expire them at this ms too
    with client.get_queue_sender(q) as s:
        for i in range(0, 5_500, 500):
            s.send_messages([ServiceBusMessage(f"old-{j}") for j in range(i, i + 500)])
        expires = clock.now_ms + 5_000
        clock.advance(1)
        s.send_messages(ServiceBusMessage("live"))
    clock.set(expires)
    with client.get_queue_receiver(q) as r:
        got = r.receive_messages(1, max_wait_time=5)
        assert [str(m) for m in got] == ["live"]
        r.complete_messages(got)


def test_a_message_abandoned_at_its_expires_at_ms_expires_at_once(
    bus: tuple[Any, ServiceBusClient, ServerClock, str],
) -> None:
    admin, client, clock, q = bus
    admin.create_queue(q, dead_lettering_on_message_expiration=True, lock_duration=timedelta(milliseconds=LOCK_MS))
    client.get_queue_sender(q).send_messages(ServiceBusMessage("x", time_to_live=timedelta(milliseconds=5_000)))
    with client.get_queue_receiver(q) as r:
        (m,) = r.receive_messages(1, max_wait_time=2)
        clock.set(clock.now_ms + 5_000)
        r.abandon_message(m)
    # no receive has swept since: the abandon itself dead-lettered it (the counts read without a sweep)
    props = admin.get_queue_runtime_properties(q)
    assert (props.active_message_count, props.dead_letter_message_count) == (0, 1)


def test_a_session_message_is_due_at_its_scheduled_ms(bus: tuple[Any, ServiceBusClient, ServerClock, str]) -> None:
    admin, client, clock, q = bus
    admin.create_queue(q, requires_session=True, lock_duration=timedelta(milliseconds=LOCK_MS))
    at = clock.now_ms + 5_000
    client.get_queue_sender(q).schedule_messages(ServiceBusMessage("later", session_id="s"), utc(at))
    with client.get_queue_receiver(q, session_id="s") as r:
        clock.set(at - 1)
        assert r.receive_messages(1, wait=False) == []
        clock.set(at)
        (m,) = r.receive_messages(1, wait=False)
        assert str(m) == "later"
        r.complete_message(m)


def test_a_duplicate_detection_window_ends_at_its_ms(bus: tuple[Any, ServiceBusClient, ServerClock, str]) -> None:
    admin, client, clock, q = bus
    window = 30_000
    admin.create_queue(
        q, requires_duplicate_detection=True, duplicate_detection_history_time_window=timedelta(milliseconds=window)
    )
    start = clock.now_ms
    with client.get_queue_sender(q) as s:
        s.send_messages(ServiceBusMessage("first", message_id="id"))
        clock.set(start + window - 1)
        s.send_messages(ServiceBusMessage("dropped", message_id="id"))  # inside the window
        clock.set(start + window)
        s.send_messages(ServiceBusMessage("second", message_id="id"))  # the window has ended
    with client.get_queue_receiver(q) as r:
        got = r.receive_messages(5, max_wait_time=1)
        assert [str(m) for m in got] == ["first", "second"]
        r.complete_messages(got)
