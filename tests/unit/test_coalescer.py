"""AsyncCoalescer's contract, with a runner that records its batches (no Redis: the sender's and
the receiver's runners are exercised by tests/integration/test_pipelining.py).

Every submitter gets its own outcome or its batch's error, never a hang; what is submitted at
once shares a batch up to `max_batch` items; at most `limit` items wait (a bigger submission goes
alone); work still queued when the loop shuts down fails with a ServiceBusError instead of being
lost. Each test has a short deadline: a broken coalescer shows as a failure, not a stuck run.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from sbredis._concurrency import AsyncCoalescer
from sbredis.exceptions import ServiceBusError

pytestmark = pytest.mark.timeout(20)  # the signal method: a busy loop fails too

DEADLINE = 5.0


class Recorder:
    """A runner: one outcome per entry (the entry's sum), an exception for an entry holding -1."""

    def __init__(self) -> None:
        self.batches: list[list[list[int]]] = []
        self.keys: list[Any] = []

    async def __call__(self, key: Any, entries: list[list[int]]) -> list[Any]:
        self.batches.append(entries)
        self.keys.append(key)
        await asyncio.sleep(0)  # at Redis: later submissions queue meanwhile
        return [ValueError(f"bad entry of {key}") if -1 in e else (key, sum(e)) for e in entries]


async def queued(c: AsyncCoalescer, key: Any, items: list[int]) -> Any:
    """Queue, then wait for the outcome (what submit does when a batch of the key is in flight)."""
    return await (await c.enqueue(key, items))


def run(main: Any) -> Any:
    return asyncio.run(asyncio.wait_for(main, DEADLINE))


def test_concurrent_submissions_share_a_batch_and_each_gets_its_own_outcome() -> None:
    rec = Recorder()

    async def main() -> tuple[list[Any], list[Any], int]:
        c = AsyncCoalescer(rec, limit=10)
        together = await asyncio.gather(*(queued(c, "k", [i]) for i in range(10)))
        submitted = await asyncio.gather(*(c.submit("k", [i]) for i in range(10)))
        return together, submitted, c.pending

    together, submitted, pending = run(main())
    assert together == submitted == [("k", i) for i in range(10)]
    # the limit is reachable: ten single items queued at once with room for ten go together; ten
    # submitted at once take at most two batches (the first may run at once in its caller's task)
    assert [len(b) for b in rec.batches[:1]] == [10]
    assert len(rec.batches) <= 3 and sum(len(b) for b in rec.batches) == 20
    assert pending == 0


def test_an_entry_error_reaches_its_submitter_only() -> None:
    rec = Recorder()

    async def main() -> list[Any]:
        c = AsyncCoalescer(rec, limit=100)
        return await asyncio.gather(c.submit("k", [1]), c.submit("k", [-1]), c.submit("k", [2]), return_exceptions=True)

    first, bad, last = run(main())
    assert (first, last) == (("k", 1), ("k", 2))
    assert isinstance(bad, ValueError)


def test_keys_are_batched_apart() -> None:
    rec = Recorder()

    async def main() -> list[Any]:
        c = AsyncCoalescer(rec, limit=100)
        return await asyncio.gather(queued(c, "a", [1]), queued(c, "b", [2]), c.submit("a", [3]), c.submit("b", [4]))

    assert run(main()) == [("a", 1), ("b", 2), ("a", 3), ("b", 4)]
    mine = {"a": {1, 3}, "b": {2, 4}}
    assert all(sum(e) in mine[k] for k, b in zip(rec.keys, rec.batches, strict=True) for e in b)


def test_past_the_limit_submitters_wait_for_room_and_all_complete() -> None:
    rec = Recorder()

    async def main() -> tuple[list[Any], int]:
        c = AsyncCoalescer(rec, limit=3)
        peak = 0

        async def one(i: int) -> Any:
            nonlocal peak
            fut = await c.enqueue("k", [i])
            peak = max(peak, c.pending)
            return await fut

        outcomes = await asyncio.gather(*(one(i) for i in range(20)))
        return outcomes, peak

    outcomes, peak = run(main())
    assert outcomes == [("k", i) for i in range(20)]
    assert peak == 3
    assert all(len(b) <= 3 for b in rec.batches) and sum(len(b) for b in rec.batches) == 20


def test_a_submission_bigger_than_the_limit_goes_alone() -> None:
    rec = Recorder()

    async def main() -> list[Any]:
        c = AsyncCoalescer(rec, limit=2)
        big = await c.submit("k", [1, 2, 3])  # the first on an idle coalescer: no wait for room
        again = await asyncio.gather(c.submit("k", [4, 5, 6]), c.submit("k", [7]))
        return [big, *again]

    assert run(main()) == [("k", 6), ("k", 15), ("k", 7)]


def test_a_batch_carries_at_most_max_batch_items() -> None:
    rec = Recorder()

    async def main() -> list[asyncio.Future[Any]]:
        c = AsyncCoalescer(rec, limit=20_000)  # the default max_batch: 5,000 items
        futs = [await c.enqueue("k", [1]) for _ in range(10_001)]  # all queued before the flush runs
        await c.drain()
        return futs

    futs = run(main())
    assert all(f.result() == ("k", 1) for f in futs)
    assert [len(b) for b in rec.batches] == [5000, 5000, 1]

    rec.batches.clear()

    async def sized() -> None:
        c = AsyncCoalescer(rec, limit=100, max_batch=10)
        for n in (4, 6, 1, 9, 1):  # 4 + 6 fill a batch exactly; 1 + 9 too
            await c.enqueue("k", [1] * n)
        await c.drain()

    run(sized())
    assert [[len(e) for e in b] for b in rec.batches] == [[4, 6], [1, 9], [1]]


def test_a_runner_error_reaches_every_submitter_of_its_batch() -> None:
    calls = 0

    async def broken(key: Any, entries: list[list[int]]) -> list[Any]:
        nonlocal calls
        calls += 1
        await asyncio.sleep(0)
        if calls == 1:
            raise RuntimeError("bug in the runner")
        return [sum(e) for e in entries]

    async def main() -> tuple[list[Any], Any, int]:
        c = AsyncCoalescer(broken, limit=100)
        failed = await asyncio.gather(*(queued(c, "k", [i]) for i in range(3)), return_exceptions=True)
        after = await c.submit("k", [5])  # the coalescer still works
        return failed, after, c.pending

    failed, after, pending = run(main())
    assert [type(e) for e in failed] == [RuntimeError] * 3
    assert after == 5 and pending == 0


def test_a_cancelled_submitter_does_not_stop_the_others() -> None:
    rec = Recorder()

    async def main() -> tuple[list[Any], int]:
        c = AsyncCoalescer(rec, limit=100)
        tasks = [asyncio.ensure_future(c.submit("k", [i])) for i in range(3)]
        await asyncio.sleep(0)  # all three queued
        tasks[1].cancel()
        outcomes = await asyncio.gather(*tasks, return_exceptions=True)
        await c.drain()
        return outcomes, c.pending

    (first, cancelled, last), pending = run(main())
    assert (first, last) == (("k", 0), ("k", 2))
    assert isinstance(cancelled, asyncio.CancelledError)
    assert pending == 0


def test_work_queued_when_the_loop_shuts_down_fails_instead_of_vanishing() -> None:
    """As pre-settled sends left behind by ``asyncio.run``: the batch at the runner is cancelled,
    what waited behind it fails with a ServiceBusError (which the sender logs)."""

    async def main() -> list[asyncio.Future[Any]]:
        gate, release = asyncio.Event(), asyncio.Event()

        async def slow(key: Any, entries: list[list[int]]) -> list[Any]:
            gate.set()
            await release.wait()  # never set: the batch is at the runner when the loop shuts down
            return [sum(e) for e in entries]

        c = AsyncCoalescer(slow, limit=100)
        running = await c.enqueue("k", [1])
        await gate.wait()
        queued = [await c.enqueue("k", [2]), await c.enqueue("k", [3])]
        return [running, *queued]  # asyncio.run now cancels the flush

    running, *queued = asyncio.run(main())
    assert running.cancelled()
    for f in queued:
        assert isinstance(f.exception(), ServiceBusError)
        assert "closed before the operation ran" in str(f.exception())


def test_drain_waits_for_everything_queued_and_returns_when_idle() -> None:
    rec = Recorder()

    async def main() -> tuple[list[bool], list[bool]]:
        c = AsyncCoalescer(rec, limit=100)
        await c.drain()  # nothing queued: returns at once
        futs = [await c.enqueue(k, [1]) for k in ("a", "b", "a")]
        before = [f.done() for f in futs]
        await c.drain()
        return before, [f.done() for f in futs]

    before, after = run(main())
    assert before == [False] * 3 and after == [True] * 3


def test_a_submission_under_an_idle_key_waits_for_room_past_the_limit() -> None:
    """The limit holds across keys: with one key's batch at the runner holding most of it, a
    submission under another key does not run until that batch is done."""

    async def main() -> tuple[list[Any], list[str]]:
        order: list[str] = []
        release = asyncio.Event()

        async def runner(key: Any, entries: list[list[int]]) -> list[Any]:
            order.append(f"start {key}")
            if key == "a":
                await release.wait()
            order.append(f"end {key}")
            return [sum(e) for e in entries]

        c = AsyncCoalescer(runner, limit=10)
        a = asyncio.ensure_future(c.submit("a", [1] * 8))
        await asyncio.sleep(0)  # a's batch is at the runner: 8 of the 10 pending
        b = asyncio.ensure_future(c.submit("b", [1] * 5))  # 8 + 5 > 10: waits for room
        for _ in range(5):
            await asyncio.sleep(0)
        assert c.pending == 8 and order == ["start a"]
        release.set()
        return list(await asyncio.gather(a, b)), order

    outcomes, order = run(main())
    assert outcomes == [8, 5]
    assert order == ["start a", "end a", "start b", "end b"]


class Stop(BaseException):
    """Not an Exception (as KeyboardInterrupt or SystemExit are not), but one a task can hold."""


def test_a_runner_base_exception_reaches_every_submitter_of_its_batch() -> None:
    async def stopping(key: Any, entries: list[list[int]]) -> list[Any]:
        await asyncio.sleep(0)
        raise Stop()

    async def main() -> list[Any]:
        c = AsyncCoalescer(stopping, limit=100)
        futs = [await c.enqueue("k", [i]) for i in range(3)]
        return list(await asyncio.gather(*futs, return_exceptions=True))

    assert [type(e) for e in run(main())] == [Stop] * 3
