"""Settling one message per call (the SDK's sample loop) behaves as settling a batch does:
complete.lua settles one message under one lock on a short path of its own (see its header)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from sbredis import ServiceBusMessage, ServiceBusSubQueue
from sbredis._core.keys import PARTITION_KEY_NAMES, partition_keys
from sbredis.aio import ServiceBusClient as AsyncClient
from sbredis.exceptions import MessageAlreadySettled

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
