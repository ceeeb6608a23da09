"""Concurrent async sends and settlements coalesce; in-flight work is bounded; every outcome reaches its caller."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
import redis

from sbredis.aio import ServiceBusClient, ServiceBusMessage
from sbredis.exceptions import InvalidArgumentError, MessageAlreadySettled, MessageSizeExceededError

pytestmark = [pytest.mark.integration, pytest.mark.conformance]


def evalsha_calls(url: str) -> int:
    stats = redis.Redis.from_url(url).info("commandstats")
    return int(stats.get("cmdstat_evalsha", {}).get("calls", 0))


@pytest.mark.standalone  # counts script calls in INFO commandstats of one server
def test_concurrent_sends_coalesce_into_few_script_calls(url: str, make_queue: Any) -> None:
    q = make_queue(enable_partitioning=True, partition_count=4)

    async def main() -> list[Any]:
        async with ServiceBusClient.from_connection_string(url) as c:
            s = c.get_queue_sender(q)
            await s.send_messages(ServiceBusMessage("warm-up"))
            before = evalsha_calls(url)
            results = await asyncio.gather(*(s.send_messages(ServiceBusMessage(str(i))) for i in range(500)))
            calls = evalsha_calls(url) - before
            async with c.get_queue_receiver(q, max_wait_time=0.5) as r:
                bodies = []
                while batch := await r.receive_messages(500, max_wait_time=0.2):
                    bodies += [str(m) for m in batch]
                    await r.complete_messages(batch)
            return [results, calls, bodies]

    results, calls, bodies = asyncio.run(main())
    assert results == [None] * 500
    assert calls <= 20, f"500 concurrent sends took {calls} script calls"
    assert sorted(bodies) == sorted(["warm-up", *map(str, range(500))])


def test_pending_sends_are_bounded_and_all_complete(url: str, make_queue: Any) -> None:
    q = make_queue()

    async def main() -> tuple[int, int]:
        async with ServiceBusClient.from_connection_string(url) as c:
            s = c.get_queue_sender(q, max_pending_sends=10)
            peak = 0
            done = asyncio.Event()

            async def watch() -> None:
                nonlocal peak
                while not done.is_set():
                    peak = max(peak, s._pipe.pending)
                    await asyncio.sleep(0)

            watcher = asyncio.create_task(watch())
            await asyncio.gather(*(s.send_messages(ServiceBusMessage(str(i))) for i in range(300)))
            done.set()
            await watcher
            async with c.get_queue_receiver(q) as r:
                n = len(await r.peek_messages(1000, sequence_number=1))
            return peak, n

    peak, stored = asyncio.run(main())
    assert 1 <= peak <= 10
    assert stored == 300


def test_each_caller_gets_its_own_outcome(url: str, make_queue: Any) -> None:
    q = make_queue(max_message_size_in_kilobytes=1)

    async def main() -> list[Any]:
        async with ServiceBusClient.from_connection_string(url) as c:
            s = c.get_queue_sender(q)
            sends = [s.send_messages(ServiceBusMessage("ok-" + str(i))) for i in range(20)]
            sends.insert(7, s.send_messages(ServiceBusMessage(b"x" * 5000)))
            outcomes = await asyncio.gather(*sends, return_exceptions=True)
            async with c.get_queue_receiver(q) as r:
                stored = [str(m) for m in await r.peek_messages(100, sequence_number=1)]
            return [outcomes, stored]

    outcomes, stored = asyncio.run(main())
    assert isinstance(outcomes[7], MessageSizeExceededError)
    assert [o for i, o in enumerate(outcomes) if i != 7] == [None] * 20
    assert sorted(stored) == sorted("ok-" + str(i) for i in range(20))


def test_presettled_sends_return_before_storing_and_close_waits(url: str, make_queue: Any) -> None:
    q = make_queue()

    async def main() -> tuple[int, int]:
        async with ServiceBusClient.from_connection_string(url) as c:
            s = c.get_queue_sender(q)
            for i in range(200):
                await s.send_messages(ServiceBusMessage(str(i)), presettled=True)
            queued = s._pipe.pending
            await s.close()
            async with c.get_queue_receiver(q) as r:
                return queued, len(await r.peek_messages(500, sequence_number=1))

    queued, stored = asyncio.run(main())
    assert queued > 0  # returned before the messages were stored
    assert stored == 200


def test_presettled_failures_are_logged_not_raised(url: str, caplog: Any) -> None:
    async def main() -> None:
        async with ServiceBusClient.from_connection_string(url, retry_total=0) as c:
            s = c.get_queue_sender("no-such-queue")
            await s.send_messages(ServiceBusMessage("x"), presettled=True)
            await s.close()

    with caplog.at_level(logging.WARNING, logger="sbredis"):
        asyncio.run(main())
    assert any("pre-settled send failed" in r.getMessage() and "not found" in r.getMessage() for r in caplog.records)


def test_presettled_sends_through_either_api_are_stored_by_close_and_failures_logged(
    client: Any, make_queue: Any, caplog: Any
) -> None:
    """What a pre-settled send promises through the sync API and the async one: the call returns
    without an outcome, the sender's close leaves every message stored, and a failure is logged."""
    q = make_queue()
    sender = client.get_queue_sender(q)
    for i in range(30):
        assert sender.send_messages(ServiceBusMessage(str(i)), presettled=True) is None
    sender.close()
    with client.get_queue_receiver(q) as r:
        stored = sorted(str(m) for m in r.peek_messages(100, sequence_number=1))
    assert stored == sorted(str(i) for i in range(30))

    lost = client.get_queue_sender("no-such-queue")
    with caplog.at_level(logging.WARNING, logger="sbredis"):
        lost.send_messages(ServiceBusMessage("x"), presettled=True)  # not raised to the caller
        lost.close()
    assert any("pre-settled send failed" in r.getMessage() and "not found" in r.getMessage() for r in caplog.records)


@pytest.mark.standalone  # counts script calls in INFO commandstats of one server
def test_concurrent_settlements_coalesce(url: str, make_queue: Any) -> None:
    q = make_queue(enable_partitioning=True, partition_count=2)

    async def main() -> tuple[int, int, list[Any]]:
        async with ServiceBusClient.from_connection_string(url) as c:
            await c.get_queue_sender(q).send_messages([ServiceBusMessage(str(i)) for i in range(300)])
            async with c.get_queue_receiver(q) as r:
                got = []
                while len(got) < 300:
                    got += await r.receive_messages(300, max_wait_time=1)
                before = evalsha_calls(url)
                await asyncio.gather(*(r.complete_message(m) for m in got))
                calls = evalsha_calls(url) - before
                dup = await r.receive_messages(1, max_wait_time=0.05)
                peeked = await r.peek_messages(1, sequence_number=1)  # completed: gone, not just locked
                return calls, len(got), dup + peeked

    calls, n, left = asyncio.run(main())
    assert n == 300 and left == []
    assert calls <= 8, f"300 concurrent completions took {calls} script calls"


def test_the_same_message_settled_twice_at_once(url: str, make_queue: Any) -> None:
    q = make_queue()

    async def main() -> list[Any]:
        async with ServiceBusClient.from_connection_string(url) as c:
            await c.get_queue_sender(q).send_messages(ServiceBusMessage("x"))
            async with c.get_queue_receiver(q) as r:
                (m,) = await r.receive_messages(1, max_wait_time=2)
                # both pass the checks before either is sent, so they meet in one batch
                both = asyncio.gather(r.complete_message(m), r.complete_message(m), return_exceptions=True)
                return list(await asyncio.wait_for(both, 10))  # each caller gets an outcome: no hang

    first, second = asyncio.run(main())
    assert first is None
    assert isinstance(second, MessageAlreadySettled)


def test_a_send_bigger_than_max_pending_sends_is_stored(url: str, make_queue: Any) -> None:
    """The limit bounds what waits, not one send: a send of more messages goes alone."""
    q = make_queue()

    async def main() -> list[str]:
        async with ServiceBusClient.from_connection_string(url) as c:
            s = c.get_queue_sender(q, max_pending_sends=2)
            await asyncio.wait_for(s.send_messages([ServiceBusMessage(str(i)) for i in range(3)]), 10)
            await asyncio.wait_for(asyncio.gather(*(s.send_messages(ServiceBusMessage(str(i))) for i in (3, 4))), 10)
            async with c.get_queue_receiver(q) as r:
                return [str(m) for m in await r.peek_messages(10, sequence_number=1)]

    assert asyncio.run(main()) == ["0", "1", "2", "3", "4"]


def test_bad_pending_limit_is_rejected(url: str) -> None:
    async def main() -> None:
        async with ServiceBusClient.from_connection_string(url) as c:
            with pytest.raises(InvalidArgumentError):
                c.get_queue_sender("q", max_pending_sends=0)

    asyncio.run(main())
