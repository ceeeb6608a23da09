"""Races: many receivers on one message; renew, complete, abandon and a competing receive at the
same server instant, on and just past a lock's end.

The receivers are threads with a connection each (the script calls race inside Redis exactly as
they would from processes). For the lock-boundary races the server's clock stands still
(tests/reliability/clock.py), so "the same instant" is exact: every racer's script reads the same
TIME, and only their order at Redis varies from round to round.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

import pytest

from sbredis import ServiceBusClient, ServiceBusMessage
from sbredis.exceptions import MessageLockLostError
from sbredis.management import ServiceBusAdministrationClient
from tests.redis_server import RedisServer
from tests.reliability.clock import ServerClock
from tests.reliability.conftest import scaled

pytestmark = [pytest.mark.integration, pytest.mark.reliability]

RECEIVERS = 32


def _race(fns: list[Callable[[], Any]]) -> list[Any]:
    """Run the callables at once (released by one barrier); each result or raised exception."""
    gate = threading.Barrier(len(fns))

    def go(fn: Callable[[], Any]) -> Any:
        gate.wait()
        try:
            return fn()
        except Exception as e:
            return e

    with ThreadPoolExecutor(len(fns)) as pool:
        return list(pool.map(go, fns))


@pytest.fixture()
def clients(redis_server: RedisServer) -> Iterator[list[ServiceBusClient]]:
    cs = [ServiceBusClient.from_connection_string(redis_server.url) for _ in range(RECEIVERS)]
    yield cs
    for c in cs:
        c.close()


@pytest.mark.parametrize("partitions", [1, 4])
def test_32_receivers_one_message_exactly_one_gets_it(
    clients: list[ServiceBusClient], admin: Any, queue_name: str, partitions: int
) -> None:
    admin.create_queue(queue_name, enable_partitioning=partitions > 1, partition_count=partitions)
    receivers = [c.get_queue_receiver(queue_name) for c in clients]
    sender = clients[0].get_queue_sender(queue_name)
    rounds = scaled(15, 100)
    for i in range(rounds):
        sender.send_messages(ServiceBusMessage(f"m{i}"))
        results = _race([lambda r=r: r.receive_messages(1, max_wait_time=0.3) for r in receivers])
        errors = [x for x in results if isinstance(x, Exception)]
        assert not errors, errors
        winners = [x[0] for x in results if x]
        assert len(winners) == 1, f"round {i}: {len(winners)} receivers got the message"
        assert str(winners[0]) == f"m{i}" and winners[0].delivery_count == 0
        receivers[0].complete_message(winners[0])
    for r in receivers:
        r.close()
    props = admin.get_queue_runtime_properties(queue_name)
    assert (props.active_message_count, props.dead_letter_message_count) == (0, 0)


def test_32_receivers_20_messages_each_handed_out_once(
    clients: list[ServiceBusClient], admin: Any, queue_name: str
) -> None:
    admin.create_queue(queue_name, enable_partitioning=True, partition_count=4)
    receivers = [c.get_queue_receiver(queue_name) for c in clients]
    clients[0].get_queue_sender(queue_name).send_messages([ServiceBusMessage(f"m{i}") for i in range(20)])
    results = _race([lambda r=r: r.receive_messages(3, max_wait_time=0.5) for r in receivers])
    got = [str(m) for batch in results for m in batch]
    assert sorted(got) == sorted(f"m{i}" for i in range(20)), "a message was handed out twice or not at all"
    for r in receivers:
        r.close()


LOCK_MS = 5_000


@pytest.fixture()
def boundary_queue(clocked: tuple[RedisServer, ServerClock], queue_name: str) -> Iterator[tuple[Any, ...]]:
    server, clock = clocked
    with ServiceBusAdministrationClient.from_connection_string(server.url) as admin:
        admin.create_queue(queue_name, lock_duration=timedelta(milliseconds=LOCK_MS), max_delivery_count=100)
        cs = [ServiceBusClient.from_connection_string(server.url) for _ in range(4)]
        yield clock, admin, queue_name, cs
        for c in cs:
            c.close()
        admin.delete_queue(queue_name)


@pytest.mark.parametrize("past_the_end", [0, 1], ids=["on-the-lock-end", "1ms-past-the-end"])
def test_renew_complete_and_a_competing_receive_at_the_same_instant(
    boundary_queue: tuple[Any, ...], past_the_end: int
) -> None:
    """On the last millisecond of a lock it is held: complete wins in any order, renew succeeds only
    if it ran first, nobody else gets the message. One millisecond later the lock is gone: renew and
    complete both fail, the competing receiver gets it (delivery count 2), in any order."""
    clock, admin, q, (c1, c2, c3, c4) = boundary_queue
    holder, renewer, completer, rival = (c.get_queue_receiver(q) for c in (c1, c2, c3, c4))
    sender = c1.get_queue_sender(q)
    outcomes: set[tuple[str, ...]] = set()
    for i in range(scaled(20, 200)):
        sender.send_messages(ServiceBusMessage(f"m{i}"))
        [m] = holder.receive_messages(1, max_wait_time=1)
        until = clock.now_ms + LOCK_MS
        clock.set(until + past_the_end)
        renewed, completed, taken = _race(
            [
                lambda m=m: renewer.renew_message_lock(copy.copy(m)),
                lambda m=m: completer.complete_message(copy.copy(m)),
                lambda: rival.receive_messages(1, wait=False),
            ]
        )
        if past_the_end:
            assert isinstance(renewed, MessageLockLostError), renewed
            assert isinstance(completed, MessageLockLostError), completed
            assert [str(x) for x in taken] == [f"m{i}"] and taken[0].delivery_count == 1
            rival.complete_message(taken[0])
        else:
            assert completed is None, completed
            assert taken == [], "a held lock was handed to another receiver"
            assert isinstance(renewed, MessageLockLostError) or renewed.timestamp() * 1000 == until + LOCK_MS, renewed
        outcomes.add(("renew " + type(renewed).__name__, "complete " + type(completed).__name__))
        props = admin.get_queue_runtime_properties(q)
        assert props.total_message_count == 0, f"round {i}: {props.total_message_count} left"
    assert len(outcomes) <= 2  # at most: renew first, or complete first


def test_abandon_and_complete_race_one_wins(boundary_queue: tuple[Any, ...]) -> None:
    clock, admin, q, (c1, c2, c3, _) = boundary_queue
    holder, a, b = (c.get_queue_receiver(q) for c in (c1, c2, c3))
    sender = c1.get_queue_sender(q)
    for i in range(scaled(20, 200)):
        sender.send_messages(ServiceBusMessage(f"m{i}"))
        [m] = holder.receive_messages(1, max_wait_time=1)
        abandoned, completed = _race(
            [lambda m=m: a.abandon_message(copy.copy(m)), lambda m=m: b.complete_message(copy.copy(m))]
        )
        assert (abandoned is None) != (completed is None), (abandoned, completed)
        left = admin.get_queue_runtime_properties(q).active_message_count
        if abandoned is None:  # abandoned first: back in the queue, then complete found no lock
            assert isinstance(completed, MessageLockLostError) and left == 1
            [again] = holder.receive_messages(1, max_wait_time=1)
            assert again.delivery_count == 1
            holder.complete_message(again)
        else:
            assert isinstance(abandoned, MessageLockLostError) and left == 0
        clock.advance(1)
