"""Coalesce concurrent calls: what many tasks submit at once runs as one batch per key.

A sender (or a receiver's settlements) submits a list of items under a key; while a batch for that
key is at Redis, new submissions wait in a queue and go together in the next batch, so N concurrent
awaited sends cost about one round trip per batch instead of N. The number of items submitted and
not yet done is bounded: past the limit, submitters wait for room (memory stays bounded and every
outcome reaches its submitter).

The sync shell has the same interface without concurrency (``sbredis/_sync/_coalesce.py``).
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Hashable
from typing import Any

from ..exceptions import ServiceBusError

log = logging.getLogger("sbredis")

# run(key, entries) -> one outcome per entry: a result, or an exception to raise in its submitter
Runner = Callable[[Any, list[list[Any]]], Awaitable[list[Any]]]


class Coalescer:
    def __init__(self, run: Runner, limit: int, max_batch: int = 5000) -> None:
        self._run = run
        self._limit = limit
        self._max_batch = max_batch
        self._load = 0  # items submitted and not done
        self._room: deque[asyncio.Future[None]] = deque()
        self._queues: dict[Hashable, deque[tuple[list[Any], asyncio.Future[Any]]]] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def pending(self) -> int:
        """Items submitted and not done yet."""
        return self._load

    async def submit(self, key: Hashable, items: list[Any]) -> Any:
        """Queue `items` under `key` and wait for their outcome (raises the entry's exception)."""
        return await (await self.enqueue(key, items))

    async def enqueue(self, key: Hashable, items: list[Any]) -> asyncio.Future[Any]:
        """Queue `items` once there is room; returns the future of their outcome."""
        n = min(len(items), self._limit)
        loop = asyncio.get_running_loop()
        while self._load and self._load + n > self._limit:
            waiter: asyncio.Future[None] = loop.create_future()
            self._room.append(waiter)
            await waiter
        self._load += n
        fut: asyncio.Future[Any] = loop.create_future()
        fut.add_done_callback(lambda _: self._release(n))
        queue = self._queues.get(key)
        if queue is None:
            queue = self._queues[key] = deque()
            task = loop.create_task(self._flush(key, queue))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        queue.append((items, fut))
        return fut

    def _release(self, n: int) -> None:
        self._load -= n
        while self._room:  # wake the waiters; each checks for room again
            waiter = self._room.popleft()
            if not waiter.done():
                waiter.set_result(None)

    async def _flush(self, key: Hashable, queue: deque[tuple[list[Any], asyncio.Future[Any]]]) -> None:
        """Run the queue of `key` batch after batch until it is empty."""
        try:
            while queue:
                batch = [queue.popleft()]
                size = len(batch[0][0])
                while queue and size + len(queue[0][0]) <= self._max_batch:
                    size += len(queue[0][0])
                    batch.append(queue.popleft())
                try:
                    outcomes = await self._run(key, [items for items, _ in batch])
                except BaseException as e:
                    for _, fut in batch:
                        if fut.done():
                            continue
                        if isinstance(e, asyncio.CancelledError):
                            fut.cancel()
                        else:
                            fut.set_exception(e)
                    raise
                for (_, fut), outcome in zip(batch, outcomes, strict=True):
                    if fut.done():
                        continue
                    if isinstance(outcome, BaseException):
                        fut.set_exception(outcome)
                    else:
                        fut.set_result(outcome)
        finally:
            del self._queues[key]
            while queue:  # only when the flush itself was cancelled (the loop is closing)
                _, fut = queue.popleft()
                if not fut.done():
                    fut.set_exception(ServiceBusError("The client closed before the operation ran."))

    async def drain(self) -> None:
        """Wait until everything queued so far is done."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)


def log_failure(what: str) -> Callable[[asyncio.Future[Any]], None]:
    """A done-callback for work nobody awaits (pre-settled sends): log its error."""

    def done(fut: asyncio.Future[Any]) -> None:
        if fut.cancelled():
            return
        e = fut.exception()
        if e is not None:
            log.warning("a pre-settled %s failed and was not reported to its caller: %s", what, e)

    return done


async def gather(awaitables: list[Awaitable[Any]]) -> list[Any]:
    """Run awaitables concurrently (the sync twin receives results already computed in order)."""
    return list(await asyncio.gather(*awaitables))
