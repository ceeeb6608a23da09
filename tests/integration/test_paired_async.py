"""Paired namespaces on the asyncio client, on two real redis-server processes: failover of
concurrent (coalesced) sends, the backlog rotation, pings, the syphon back to the primary, and the
leases a closing client gives up (docs/paired-namespaces.md). The sync client runs the same
scenarios in test_paired.py; ``Pair`` there starts the servers.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest

from sbredis import ServiceBusMessage
from sbredis.aio import ServiceBusClient
from sbredis.exceptions import MessageSizeExceededError, ServiceBusConnectionError
from sbredis.paired import PATH, SESSION_ID, TIME_TO_LIVE, run_syphon
from tests.integration.test_paired import FAST, Pair


@pytest.fixture()
def pair() -> Iterator[Pair]:
    p = Pair()
    yield p
    p.stop()


async def until(check: Callable[[], Any], timeout: float = 10.0) -> None:
    """Poll `check` on the event loop (the pairing's tasks run meanwhile) until it is truthy."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        await asyncio.sleep(0.02)


def client(pair: Pair, **options: Any) -> ServiceBusClient:
    return ServiceBusClient(pair.primary.url, paired_namespace=pair.options(**options), **FAST)


async def drain(url: str, queue: str, expected: int, timeout: float = 20.0) -> list[Any]:
    got: list[Any] = []
    deadline = time.monotonic() + timeout
    async with ServiceBusClient(url) as c, c.get_queue_receiver(queue) as r:
        while len(got) < expected and time.monotonic() < deadline:
            batch = await r.receive_messages(100, max_wait_time=0.5)
            got += batch
            if batch:
                await r.complete_messages(batch)
        got += await r.receive_messages(100, max_wait_time=0.5)  # nothing beyond what was sent
    return got


def run(scenario: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(scenario())


def test_concurrent_sends_fail_over_together_and_the_syphon_moves_them_back_restored(pair: Pair) -> None:
    with pair.admin() as a:
        a.create_queue("orders", requires_session=True)

    async def scenario() -> None:
        async with client(pair) as c:
            paired = c.paired_namespace
            assert paired is not None
            s = c.get_queue_sender("orders")
            await s.send_messages(ServiceBusMessage("warm", session_id="s0"))
            pair.primary.kill()

            def message(i: int) -> ServiceBusMessage:
                return ServiceBusMessage(
                    str(i),
                    session_id=f"s{i % 2}",
                    message_id=f"m{i}",
                    time_to_live=timedelta(minutes=5),
                    application_properties={"i": i},
                )

            # concurrent sends are coalesced: one flush carries many callers' entries to the backlog
            await asyncio.gather(*(s.send_messages(message(i)) for i in range(60)))
            assert paired.unavailable_entities == ["orders"]
            metrics = paired.metrics
            assert metrics.failovers == 1 and metrics.backlog_messages_sent == 60
            assert metrics.backlog_sends < 60  # batched, not one call per send
            assert sum(pair.backlog_counts()) == 60
            async with ServiceBusClient(pair.secondary.url) as sc:
                backlog = next(i for i, n in enumerate(pair.backlog_counts()) if n)
                async with sc.get_queue_receiver(f"x-servicebus-transfer/{backlog}") as r:
                    peeked = await r.peek_messages(1)
            waiting = peeked[0]
            assert waiting.session_id is None and waiting.message_id == "m0"
            props = waiting.sent_application_properties or {}
            assert props[PATH] == "orders" and props[SESSION_ID] == "s0" and props["i"] == 0
            assert props[TIME_TO_LIVE] == timedelta(minutes=5)

            pair.primary.start()
            await until(lambda: paired.unavailable_entities == [])
            assert paired.metrics.failbacks == 1
            await s.send_messages(ServiceBusMessage("back", session_id="s1"))
            assert paired.metrics.backlog_messages_sent == 60  # the primary took it
            await c.start_syphon()
            assert paired.syphon_running
            await until(lambda: paired.metrics.siphon_messages_sent == 60)
            await s.close()

        got: list[Any] = []
        async with ServiceBusClient(pair.primary.url) as c:
            for sid in ("s0", "s1"):
                async with c.get_queue_receiver("orders", session_id=sid) as r:
                    while batch := await r.receive_messages(100, max_wait_time=0.5):
                        got += batch
                        await r.complete_messages(batch)
        bodies = [str(m) for m in got]
        assert sorted(bodies) == sorted(["warm", "back", *map(str, range(60))])
        for m in got:
            if str(m) in ("warm", "back"):
                continue
            i = int(str(m))
            assert m.session_id == f"s{i % 2}" and m.message_id == f"m{i}"
            assert m.sent_application_properties == {"i": i}  # the moved properties are gone again
            assert m.time_to_live == timedelta(minutes=5)
        for sid in ("s0", "s1"):  # one sender, one backlog queue: each session in send order
            order = [int(str(m)) for m in got if m.session_id == sid and str(m) not in ("warm", "back")]
            assert order == sorted(order)
        assert pair.backlog_counts() == [0, 0]

    run(scenario)


def test_sends_fail_until_the_failover_interval_passes_and_own_errors_never_fail_over(pair: Pair) -> None:
    with pair.admin() as a:
        a.create_queue("orders", max_message_size_in_kilobytes=1)

    async def scenario() -> None:
        async with client(pair, failover_interval=0.6) as c:
            paired = c.paired_namespace
            assert paired is not None
            s = c.get_queue_sender("orders")
            await s.send_messages(ServiceBusMessage("warm"))
            pair.primary.kill()
            with pytest.raises(MessageSizeExceededError):  # checked before Redis is asked
                await s.send_messages(ServiceBusMessage(b"x" * 2048))
            assert paired.unavailable_entities == []
            start = time.monotonic()
            with pytest.raises(ServiceBusConnectionError):
                await s.send_messages(ServiceBusMessage("first"))
            while True:
                try:
                    await s.send_messages(ServiceBusMessage("later"))
                    break
                except ServiceBusConnectionError:
                    assert time.monotonic() - start < 5
                    await asyncio.sleep(0.05)
            assert time.monotonic() - start >= 0.6
            assert paired.metrics.backlog_messages_sent == 1 and paired.metrics.failovers == 1
            await s.close()

    run(scenario)


def test_a_failing_backlog_queue_leaves_the_rotation_for_every_sender(pair: Pair) -> None:
    with pair.admin() as a:
        a.create_queue("orders")

    async def scenario() -> None:
        async with client(pair) as c:
            paired = c.paired_namespace
            assert paired is not None
            await paired.create_backlog_queues()
            with pair.admin("secondary") as a:
                a.update_queue(a.get_queue("x-servicebus-transfer/0"), status="SendDisabled")
            senders = [c.get_queue_sender("orders") for _ in range(20)]
            await senders[0].send_messages(ServiceBusMessage("warm"))
            pair.primary.kill()
            await asyncio.gather(*(s.send_messages(ServiceBusMessage(str(k))) for k, s in enumerate(senders)))
            assert paired.metrics.backlog_send_failures == 1
            assert paired.metrics.backlog_messages_sent == 20
            assert pair.backlog_counts() == [0, 20]
            for s in senders:
                await s.close()

    run(scenario)


def test_a_syphon_started_by_the_first_send_gives_up_its_leases_when_its_client_closes(pair: Pair) -> None:
    with pair.admin() as a:
        a.create_queue("orders")

    async def scenario() -> None:
        first = client(pair, enable_syphon=True)
        paired = first.paired_namespace
        assert paired is not None and not paired.syphon_running
        s = first.get_queue_sender("orders")
        await s.send_messages(ServiceBusMessage("warm"))  # enable_syphon: the first send starts it
        await until(lambda: paired.syphon_running and paired.metrics.lease_calls >= 2)
        pair.primary.kill()
        await s.send_messages([ServiceBusMessage(str(i)) for i in range(10)])
        assert paired.metrics.backlog_messages_sent == 10
        await first.close()  # stops the syphon before the primary is back: the messages wait
        assert not paired.syphon_running
        assert (paired.primary_state, paired.secondary_state) == ("closed", "closed")
        pair.primary.start()
        # the leases were given up: another syphon takes the queues at once, not after their
        # 65-second lease ran out
        async with client(pair) as second:
            other = second.paired_namespace
            assert other is not None
            await second.start_syphon()
            await until(lambda: other.metrics.siphon_messages_sent == 10)
        got = await drain(pair.primary.url, "orders", 11)
        assert sorted(str(m) for m in got) == sorted(["warm", *map(str, range(10))])

    run(scenario)


def test_the_syphon_retries_while_the_primary_is_away_and_dead_letters_what_it_can_never_deliver(
    pair: Pair,
) -> None:
    with pair.admin() as a:
        a.create_queue("orders")

    async def scenario() -> None:
        async with client(pair, backlog_queue_count=1) as c:
            paired = c.paired_namespace
            assert paired is not None
            await paired.create_backlog_queues()
            async with ServiceBusClient(pair.secondary.url) as sc, sc.get_queue_sender("x-servicebus-transfer/0") as s:
                await s.send_messages(
                    [
                        ServiceBusMessage("orphan"),  # no destination
                        ServiceBusMessage("gone", application_properties={PATH: "missing"}),
                        ServiceBusMessage("ok", application_properties={PATH: "orders"}),
                    ]
                )
            pair.primary.kill()
            await c.start_syphon()
            # the primary is away: nothing is delivered or dead-lettered yet, the batch is abandoned
            await until(lambda: paired.metrics.backlog_receives >= 3)
            assert paired.metrics.siphon_messages_sent == 0
            pair.primary.start()
            await until(lambda: paired.metrics.siphon_messages_sent == 1 and paired.metrics.siphon_dead_lettered == 2)

        async with ServiceBusClient(pair.secondary.url) as sc:
            async with sc.get_queue_receiver("x-servicebus-transfer/0", sub_queue="deadletter") as r:
                dead = await r.receive_messages(10, max_wait_time=0.5)
            assert sorted((str(m), m.dead_letter_reason) for m in dead) == [
                ("gone", "MessagingEntityNotFoundError"),
                ("orphan", "InvalidOperationError"),
            ]
            assert all(m.delivery_count >= 1 for m in dead)  # abandoned while the primary was away
        got = await drain(pair.primary.url, "orders", 1)
        assert [str(m) for m in got] == ["ok"] and got[0].sent_application_properties is None

    run(scenario)


def test_two_syphons_share_the_backlog_by_lease_and_move_each_message_once(pair: Pair) -> None:
    with pair.admin() as a:
        a.create_queue("orders")

    async def scenario() -> None:
        async with client(pair) as c:
            s = c.get_queue_sender("orders")
            await s.send_messages(ServiceBusMessage("warm"))
            pair.primary.kill()
            await asyncio.gather(*(s.send_messages(ServiceBusMessage(str(i))) for i in range(100)))
            await s.close()
        pair.primary.start()
        syphons = [client(pair), client(pair)]
        try:
            for sc in syphons:
                await sc.start_syphon()

            def moved() -> int:
                return sum(sc.paired_namespace.metrics.siphon_messages_sent for sc in syphons if sc.paired_namespace)

            await until(lambda: moved() >= 100)
            await asyncio.sleep(0.3)  # more polls: nothing is moved twice
            assert moved() == 100
            metrics = [sc.paired_namespace.metrics for sc in syphons if sc.paired_namespace]
            assert all(m.lease_calls >= 1 for m in metrics)  # both asked; one held the queue
        finally:
            for sc in syphons:
                await sc.close()
        got = await drain(pair.primary.url, "orders", 101)
        assert sorted(str(m) for m in got if str(m) != "warm") == sorted(map(str, range(100)))

    run(scenario)


def test_closing_the_secondary_of_a_syphon_hosting_client_faults_the_primary_after_5_s(pair: Pair) -> None:
    async def scenario() -> None:
        async with client(pair) as c:
            paired = c.paired_namespace
            assert paired is not None
            await c.start_syphon()
            await paired.secondary.close()
            closed_at = time.monotonic()
            await until(lambda: paired.primary_state == "faulted", 8)
            assert time.monotonic() - closed_at >= 4.9
            assert not paired.syphon_running  # its sides are not both open: the syphon stopped

    run(scenario)


def test_run_syphon_moves_the_backlog_and_returns_its_metrics(pair: Pair) -> None:
    with pair.admin() as a:
        a.create_queue("orders")
    with pair.client() as c, c.get_queue_sender("orders") as s:
        s.send_messages(ServiceBusMessage("warm"))
        pair.primary.kill()
        s.send_messages([ServiceBusMessage(str(i)) for i in range(5)])
    pair.primary.start()
    started: list[bool] = []
    metrics = run_syphon(
        pair.primary.url, pair.secondary.url, 2, poll_interval=0.05, duration=1.5, on_start=lambda: started.append(True)
    )
    assert started == [True] and metrics.siphon_messages_sent == 5
    got = asyncio.run(drain(pair.primary.url, "orders", 6))
    assert sorted(str(m) for m in got) == sorted(["warm", *map(str, range(5))])
