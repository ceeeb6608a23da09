"""A single script call polls for its reply before it sleeps (_core/reply_poll.py): the sync client
polls its socket, the asyncio client keeps its event loop turning. A call whose reply came later
than the poll makes the next call of its kind sleep at once; a reply in time turns polling on
again. The server answers late while CLIENT PAUSE holds it; every message sent arrives. A client
whose thread waits for a CPU does not poll: tests/unit/test_reply_poll.py."""

from __future__ import annotations

import asyncio
import select
import selectors
import time
from collections.abc import Callable
from typing import Any

import pytest
import redis

import sbredis._concurrency
from sbredis import ServiceBusClient, ServiceBusMessage
from sbredis._core.reply_poll import CpuWait
from sbredis.aio import ServiceBusClient as AsyncServiceBusClient
from sbredis.management import ServiceBusAdministrationClient
from tests.redis_server import RedisServer

pytestmark = [pytest.mark.integration, pytest.mark.standalone]


@pytest.fixture(autouse=True)
def _polling_on_a_busy_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    """Poll even when the test's thread waited for a CPU (the suite runs beside others): that
    rule has its own test (tests/unit/test_reply_poll.py)."""
    monkeypatch.setattr(CpuWait, "SHARE", 2.0)


LIMIT = 0.01  # the largest poll: a reply on an unpaused server comes well within it
PAUSE_MS = 200


def in_time(send: Callable[[str], Any], body: str) -> None:
    """Sends until one is answered within LIMIT (by this clock, which spans the transport's), so
    the next send of its kind polls; a loaded machine may answer an unpaused call late too."""
    for _ in range(20):
        t0 = time.monotonic()
        send(body)
        if time.monotonic() - t0 < LIMIT:
            return
    raise AssertionError(f"none of 20 sends was answered within {LIMIT} s")


def sends(server: RedisServer, queue: str, send: Callable[[str], Any], polled: Callable[[], int]) -> list[int]:
    """How much each of four sends polled: paused, paused, the first unpaused one, paused (after an
    unpaused one answered in time)."""
    raw = redis.Redis.from_url(server.url)
    in_time(send, "warm-up")  # connects and loads the script
    seen = []
    for step in ("late", "late again", "in time", "late once more"):
        before = polled()
        if step == "in time":
            send(step)  # after a late reply: sleeps at once
            seen.append(polled() - before)
            in_time(send, step)
            continue
        raw.execute_command("CLIENT", "PAUSE", PAUSE_MS)
        t0 = time.monotonic()
        send(step)
        assert time.monotonic() - t0 >= PAUSE_MS / 2000  # the reply did come late
        seen.append(polled() - before)
    with ServiceBusClient.from_connection_string(server.url) as c, c.get_queue_receiver(queue) as r:
        bodies = {str(m) for m in r.peek_messages(50)}
    assert {"warm-up", "late", "late again", "in time", "late once more"} <= bodies
    return seen


def test_sync_calls_poll_their_socket_while_replies_come_in_time(
    redis_server: RedisServer, queue_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    polls = [0]

    class CountingPoll:  # select.poll, counting its polls
        def __init__(self) -> None:
            self.poller = select.poll()

        def register(self, *args: Any) -> None:
            self.poller.register(*args)

        def poll(self, timeout: float | None = None) -> list[tuple[int, int]]:
            polls[0] += 1
            return self.poller.poll(timeout)

    monkeypatch.setattr(sbredis._concurrency, "POLL", CountingPoll)
    with ServiceBusAdministrationClient.from_connection_string(redis_server.url) as admin:
        admin.create_queue(queue_name)
    with (
        ServiceBusClient.from_connection_string(redis_server.url, reply_poll_time=LIMIT) as c,
        c.get_queue_sender(queue_name) as s,
    ):
        late, late_again, in_time, late_once_more = sends(
            redis_server, queue_name, lambda body: s.send_messages(ServiceBusMessage(body)), lambda: polls[0]
        )
    assert late >= 2  # polled, then slept: the reply came after the poll
    assert late_again == 0  # the last reply came late: sleeps at once
    assert in_time == 0
    assert late_once_more >= 2  # a reply in time turned polling on again


class CountingSelector(selectors.DefaultSelector):  # type: ignore[misc,valid-type]
    """The event loop's selector, counting the checks that did not wait."""

    def __init__(self) -> None:
        super().__init__()
        self.no_wait = 0

    def select(self, timeout: float | None = None) -> list[Any]:
        if timeout is not None and timeout <= 0:
            self.no_wait += 1
        return super().select(timeout)  # type: ignore[no-any-return]


def test_async_calls_keep_the_event_loop_turning_while_replies_come_in_time(
    redis_server: RedisServer, queue_name: str
) -> None:
    selector = CountingSelector()

    async def main() -> list[int]:
        loop = asyncio.get_running_loop()
        async with (
            AsyncServiceBusClient.from_connection_string(redis_server.url, reply_poll_time=LIMIT) as c,
            c.get_queue_sender(queue_name) as s,
        ):

            def send(body: str) -> None:  # from the executor's thread, on the loop
                asyncio.run_coroutine_threadsafe(s.send_messages(ServiceBusMessage(body)), loop).result()

            return await loop.run_in_executor(
                None, lambda: sends(redis_server, queue_name, send, lambda: selector.no_wait)
            )

    with ServiceBusAdministrationClient.from_connection_string(redis_server.url) as admin:
        admin.create_queue(queue_name)
    with asyncio.Runner(loop_factory=lambda: asyncio.SelectorEventLoop(selector)) as runner:
        late, late_again, in_time, late_once_more = runner.run(main())
    # the loop kept turning for the poll (thousands of checks in 10 ms), then slept; after a late
    # reply it sleeps at once (a few checks come from the sends handed to the loop)
    assert late >= 100
    assert late_again <= 10 and in_time <= 10
    assert late_once_more >= 100
