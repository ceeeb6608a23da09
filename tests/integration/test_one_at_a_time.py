"""Settling one message per call (the SDK's sample loop) behaves as settling a batch does:
complete.lua settles one message under one lock on a short path of its own (see its header)."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from sbredis import ServiceBusMessage, ServiceBusSubQueue
from sbredis._core.keys import PARTITION_KEY_NAMES, partition_keys
from sbredis.aio import ServiceBusClient as AsyncClient
from sbredis.exceptions import MessageAlreadySettled, MessageLockLostError

pytestmark = [pytest.mark.integration, pytest.mark.conformance]


def test_a_loop_completes_redelivered_and_dead_lettered_messages(
    client: Any, admin: Any, make_queue: Any, raw_redis: Any
) -> None:
    q = make_queue()
    with client.get_queue_sender(q) as s:
        s.send_messages([ServiceBusMessage(f"m{i}") for i in range(6)])
    with client.get_queue_receiver(q, max_wait_time=1) as r:
        first = r.receive_messages(6, max_wait_time=1)
        for m in first[:2]:
            r.abandon_message(m)  # delivered again below with delivery_count 1
        r.dead_letter_message(first[2], "why")
        rest = first[3:]
        again = r.receive_messages(2, max_wait_time=1)
        assert sorted(m.delivery_count for m in again) == [1, 1]
        for m in [*again, *rest]:
            r.complete_message(m)
            with pytest.raises(MessageAlreadySettled):
                r.complete_message(m)
    with client.get_queue_receiver(q, sub_queue=ServiceBusSubQueue.DEAD_LETTER, max_wait_time=1) as d:
        for m in d:
            assert str(m) == "m2"
            d.complete_message(m)
    props = admin.get_queue_runtime_properties(q)
    assert props.total_message_count == 0 and props.size_in_bytes == 0
    # nothing of the completed messages is left behind: no lock, no delivery count
    names = dict(zip(PARTITION_KEY_NAMES, partition_keys(q, 0), strict=True))
    assert raw_redis.exists(*(names[k] for k in ("lk", "locked", "dc", "d:lk", "d:locked", "d:dc"))) == 0


def test_async_completes_queued_behind_one_in_flight_each_get_their_outcome(url: str, make_queue: Any) -> None:
    q = make_queue()

    async def main() -> list[Any]:
        async with AsyncClient.from_connection_string(url) as c:
            await c.get_queue_sender(q).send_messages([ServiceBusMessage(str(i)) for i in range(20)])
            async with c.get_queue_receiver(q) as r:
                got: list[Any] = []
                while len(got) < 20:
                    got += await r.receive_messages(20, max_wait_time=1)
                # the first runs at once, the rest (one of them twice) wait and go together next
                calls = [r.complete_message(m) for m in got] + [r.complete_message(got[5])]
                outcomes = await asyncio.gather(*calls, return_exceptions=True)
                left = await r.receive_messages(1, max_wait_time=0.05)
                return [outcomes, left]

    outcomes, left = asyncio.run(main())
    assert outcomes[:20] == [None] * 20
    assert isinstance(outcomes[20], MessageAlreadySettled)
    assert left == []


def test_deferred_messages_completed_one_at_a_time_leave_no_delivery_count(
    client: Any, admin: Any, make_queue: Any, raw_redis: Any
) -> None:
    """A deferred message keeps its delivery count while set aside; received again by sequence
    number and completed alone, nothing of it is left (as when a batch completes it)."""
    q = make_queue()
    with client.get_queue_sender(q) as s:
        s.send_messages([ServiceBusMessage(f"m{i}") for i in range(3)])
    with client.get_queue_receiver(q, max_wait_time=1) as r:
        got = r.receive_messages(3, max_wait_time=1)
        for m in got:
            r.defer_message(m)
        again = r.receive_deferred_messages([m.sequence_number for m in got])
        assert [m.delivery_count for m in again] == [1, 1, 1]
        for m in again:
            r.complete_message(m)
    assert admin.get_queue_runtime_properties(q).total_message_count == 0
    names = dict(zip(PARTITION_KEY_NAMES, partition_keys(q, 0), strict=True))
    assert raw_redis.exists(*(names[k] for k in ("lk", "locked", "dc", "deferred"))) == 0


def test_receiving_one_at_a_time_sees_what_a_batch_receive_sees(client: Any, make_queue: Any) -> None:
    """receive.lua hands out one message on a short path of its own (see its header): order,
    delivery counts and locks as a batch receive gives them; a pending schedule and an expired
    message are not handed out."""
    q = make_queue(lock_duration=timedelta(seconds=30))
    with client.get_queue_sender(q) as s:
        s.schedule_messages(ServiceBusMessage("later"), datetime.now(UTC) + timedelta(hours=1))
        s.send_messages([ServiceBusMessage(f"m{i}") for i in range(2)])
        s.send_messages(ServiceBusMessage("short", time_to_live=timedelta(milliseconds=1)))
        s.send_messages(ServiceBusMessage("m2"))
    # a few fast round trips can all fall in the millisecond "short" was enqueued in, before its
    # 1 ms TTL has passed
    time.sleep(0.005)
    with client.get_queue_receiver(q, max_wait_time=1) as r:
        first = r.receive_messages(1, max_wait_time=1)
        r.abandon_message(first[0])  # back at the front, delivered again with delivery_count 1
        got = []
        for _ in range(3):
            got += r.receive_messages(1, max_wait_time=1)
        assert [str(m) for m in got] == ["m0", "m1", "m2"]
        assert [m.delivery_count for m in got] == [1, 0, 0]
        for m in got:
            assert m.locked_until_utc is not None
            assert m.locked_until_utc > datetime.now(UTC) + timedelta(seconds=20)
            r.complete_message(m)
        assert r.receive_messages(1, max_wait_time=0.05) == []
        assert [str(m) for m in r.peek_messages(5)] == ["later"]


def test_locks_recorded_in_the_older_form_still_settle(
    client: Any, admin: Any, make_queue: Any, raw_redis: Any
) -> None:
    """An upgrade on a live Redis: lock records written before records carried their lock's end
    (``nonce|home|expires|size|delivery count``) are completed, renewed and abandoned as before,
    and their lock's end is still the locked set's."""
    q = make_queue()
    names = dict(zip(PARTITION_KEY_NAMES, partition_keys(q, 0), strict=True))
    with client.get_queue_sender(q) as s:
        s.send_messages([ServiceBusMessage(f"m{i}") for i in range(4)])
    with client.get_queue_receiver(q, max_wait_time=1) as r:
        got = r.receive_messages(4, max_wait_time=1)
        assert len(got) == 4
        for field, rec in raw_redis.hgetall(names["lk"]).items():
            nonce, until, *rest = rec.decode().split("|")
            assert int(until) == int(raw_redis.zscore(names["locked"], field))  # the newer form
            raw_redis.hset(names["lk"], field, "|".join([nonce, *rest]))
        r.complete_message(got[0])
        new_until = r.renew_message_lock(got[1])
        assert new_until == got[1].locked_until_utc
        r.abandon_message(got[2])
        # the older form's lock end is the locked set's: moved into the past, the lock is lost
        raw_redis.zadd(names["locked"], {str(got[3].sequence_number): 1})
        with pytest.raises(MessageLockLostError):
            r.complete_message(got[3])
        r.complete_message(got[1])
        [again] = r.receive_messages(1, max_wait_time=1)
        assert str(again) == "m2" and again.delivery_count == 1
        r.complete_message(again)
    props = admin.get_queue_runtime_properties(q)
    assert props.total_message_count == 1  # m3, whose lock elapsed


def test_a_renewal_moves_the_lock_end_a_complete_checks(client: Any, make_queue: Any, raw_redis: Any) -> None:
    """The lock's end is in the lock record and in the locked set; a renewal moves both, so a
    message completed alone after its first lock's end but within the renewed one is completed."""
    q = make_queue(lock_duration=timedelta(milliseconds=400))
    names = dict(zip(PARTITION_KEY_NAMES, partition_keys(q, 0), strict=True))
    with client.get_queue_sender(q) as s:
        s.send_messages(ServiceBusMessage("x"))
    with client.get_queue_receiver(q, max_wait_time=1) as r:
        [m] = r.receive_messages(1, max_wait_time=1)
        first = m.locked_until_utc
        time.sleep(0.2)
        r.renew_message_lock(m)
        [rec] = raw_redis.hvals(names["lk"])
        until = int(rec.decode().split("|")[1])
        assert until == int(raw_redis.zscore(names["locked"], str(m.sequence_number)))
        assert datetime.fromtimestamp(until / 1000, UTC) == m.locked_until_utc > first
        while datetime.now(UTC) <= first + timedelta(milliseconds=20):
            time.sleep(0.02)
        r.complete_message(m)
    assert raw_redis.exists(names["lk"], names["locked"]) == 0


def test_a_complete_long_after_its_receive_marks_the_queue_used(
    client: Any, admin: Any, make_queue: Any, raw_redis: Any
) -> None:
    """A complete soon after its receive leaves the last use the receive wrote; later, it writes
    its own (auto-delete on idle and accessed_at read it)."""
    q = make_queue()
    st = dict(zip(PARTITION_KEY_NAMES, partition_keys(q, 0), strict=True))["st"]
    with client.get_queue_sender(q) as s:
        s.send_messages([ServiceBusMessage("a"), ServiceBusMessage("b")])
    with client.get_queue_receiver(q, max_wait_time=1) as r:
        a, b = r.receive_messages(2, max_wait_time=1)
        received = int(raw_redis.hget(st, "acc"))
        r.complete_message(a)
        deadline = time.monotonic() + 5
        while (lambda t: int(t[0]) * 1000 + int(t[1]) // 1000)(raw_redis.time()) < received + 150:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        r.complete_message(b)
        assert int(raw_redis.hget(st, "acc")) >= received + 150
