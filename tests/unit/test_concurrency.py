"""sbredis/_concurrency.py: each async primitive and its sync twin keep the same public names and
signatures (what scripts/unasync.py's mapping relies on), and both renewers survive a renewal that
fails unexpectedly."""

from __future__ import annotations

import asyncio
import inspect
import logging
import threading
import time
from typing import Any

import pytest

from sbredis import _concurrency as c


@pytest.mark.parametrize(("a", "s"), sorted(c.UNASYNC.items()))
def test_pair_exists_with_the_same_shape(a: str, s: str) -> None:
    async_obj, sync_obj = getattr(c, a), getattr(c, s)
    assert inspect.isclass(async_obj) == inspect.isclass(sync_obj)
    if not inspect.isclass(async_obj):
        assert _params(async_obj) == _params(sync_obj)
        return
    async_names = {n for n in dir(async_obj) if not n.startswith("_")}
    sync_names = {n for n in dir(sync_obj) if not n.startswith("_")}
    assert async_names == sync_names
    for n in async_names | {"__init__"}:
        am, sm = getattr(async_obj, n), getattr(sync_obj, n)
        if callable(am):
            assert _params(am) == _params(sm), n
    aenter = {"__aenter__", "__aexit__"} & set(vars(async_obj))
    assert {n.replace("__a", "__") for n in aenter} == {"__enter__", "__exit__"} & set(vars(sync_obj))


def _params(fn: Any) -> list[tuple[str, Any]]:
    """Parameter names and defaults (annotations differ: Awaitable vs. the value)."""
    return [(p.name, p.default) for p in inspect.signature(fn).parameters.values()]


class _Broken:
    """A receiver whose renewal raises what no Redis error becomes (a bug)."""

    closed = False
    clock_offset_ms = 0

    def __init__(self) -> None:
        self.calls = 0

    def renew_each(self, messages: list[Any]) -> list[Any]:
        self.calls += 1
        raise RuntimeError("bug")


class _Message:
    settled = False
    locked_until_ms = 0  # due at once
    sequence_number = 1
    auto_renew_error: Any = None


def _register(renewer: Any, receiver: Any, failures: list[Any]) -> None:
    from sbredis._core.renewal import Registration

    reg = Registration(receiver, _Message(), time.monotonic() + 60, 1000, lambda m, e: failures.append(e))  # type: ignore[arg-type]
    renewer._schedule.regs.append(reg)


def test_sync_renewer_logs_and_reports_an_unexpected_error(caplog: pytest.LogCaptureFixture) -> None:
    renewer = c.SyncAutoLockRenewer()
    failures: list[Any] = []
    _register(renewer, _Broken(), failures)
    with caplog.at_level(logging.ERROR, "sbredis"):
        renewer._thread = threading.Thread(target=renewer._run, daemon=True)
        renewer._thread.start()
        deadline = time.monotonic() + 5
        while not failures and time.monotonic() < deadline:
            time.sleep(0.01)
        renewer.close()
    assert failures and "bug" in str(failures[0].error)
    assert "auto lock renewal failed unexpectedly" in caplog.text


def test_async_renewer_logs_and_reports_an_unexpected_error(caplog: pytest.LogCaptureFixture) -> None:
    class AsyncBroken(_Broken):
        async def renew_each(self, messages: list[Any]) -> list[Any]:  # type: ignore[override]
            raise RuntimeError("bug")

    async def run() -> list[Any]:
        renewer = c.AsyncAutoLockRenewer()
        failures: list[Any] = []
        _register(renewer, AsyncBroken(), failures)
        renewer._wake = asyncio.Event()
        renewer._task = asyncio.get_running_loop().create_task(renewer._run())
        deadline = time.monotonic() + 5
        while not failures and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        assert not renewer._task.done(), "the renewal task must survive an unexpected error"
        await renewer.close()
        return failures

    with caplog.at_level(logging.ERROR, "sbredis"):
        failures = asyncio.run(run())
    assert failures and "bug" in str(failures[0].error)
    assert "auto lock renewal failed unexpectedly" in caplog.text


# ----------------------------------------------------------------------------- the coalescer
# The runner stands for a script call at Redis: it holds a batch until the test lets it go.
class _Runner:
    def __init__(self, fail: BaseException | None = None, hold_each: bool = True) -> None:
        self.batches: list[list[list[Any]]] = []
        self.release = asyncio.Event()
        self.fail = fail
        self.hold_each = hold_each

    async def __call__(self, key: Any, entries: list[list[Any]]) -> list[Any]:
        self.batches.append(entries)
        await self.release.wait()
        if self.hold_each:
            self.release.clear()  # the next batch waits for its own release
        if self.fail is not None:
            raise self.fail
        return [f"{key}:{','.join(map(str, items))}" for items in entries]


async def _until(check: Any) -> None:
    deadline = time.monotonic() + 5
    while not check():
        assert time.monotonic() < deadline, "condition not met within 5 s"
        await asyncio.sleep(0.001)


def test_a_batch_that_fails_raises_in_each_submitter_still_waiting() -> None:
    async def run() -> tuple[list[Any], Any, int]:
        runner = _Runner(fail=RuntimeError("lost"), hold_each=False)
        co = c.AsyncCoalescer(runner, limit=100)
        first = asyncio.ensure_future(co.submit("k", [1]))
        await _until(lambda: runner.batches)
        rest = [asyncio.ensure_future(co.submit("k", [i])) for i in (2, 3)]  # queued behind the first
        await _until(lambda: co.pending == 3)
        rest[0].cancel()  # gave up waiting (a timeout around the send): the others still get the error
        await asyncio.sleep(0)
        runner.release.set()
        outcomes = await asyncio.gather(first, *rest, return_exceptions=True)
        runner.fail = None  # the coalescer keeps working after failed batches
        return outcomes, await co.submit("k", [4]), co.pending

    outcomes, again, pending = asyncio.run(run())
    assert isinstance(outcomes[1], asyncio.CancelledError)
    assert all(isinstance(o, RuntimeError) and str(o) == "lost" for o in (outcomes[0], outcomes[2]))
    assert (again, pending) == ("k:4", 0)


def test_the_batches_queued_behind_a_failed_one_still_run() -> None:
    """A batch whose script call fails fails its own callers only: the flush goes on with the next."""

    async def run() -> tuple[list[Any], list[list[list[Any]]], int]:
        batches: list[list[list[Any]]] = []
        gate = asyncio.Event()

        async def runner(key: Any, entries: list[list[Any]]) -> list[Any]:
            batches.append(entries)
            await gate.wait()
            if entries[0] == [1]:
                raise RuntimeError("lost")
            return [f"ok{items[0]}" for items in entries]

        co = c.AsyncCoalescer(runner, limit=100, max_batch=1)  # one entry per batch
        futs = [await co.enqueue("k", [i]) for i in (1, 2, 3)]
        gate.set()
        outcomes = await asyncio.gather(*futs, return_exceptions=True)
        await co.drain()
        return outcomes, batches, co.pending

    outcomes, batches, pending = asyncio.run(run())
    assert isinstance(outcomes[0], RuntimeError) and outcomes[1:] == ["ok2", "ok3"]
    assert batches == [[[1]], [[2]], [[3]]] and pending == 0


def test_a_submitter_that_gives_up_does_not_disturb_its_batch() -> None:
    async def run() -> tuple[list[Any], int, list[list[list[Any]]]]:
        runner = _Runner()
        co = c.AsyncCoalescer(runner, limit=100)
        first = asyncio.ensure_future(co.submit("k", [1]))
        await _until(lambda: runner.batches)
        rest = [asyncio.ensure_future(co.submit("k", [i])) for i in (2, 3)]
        await _until(lambda: co.pending == 3)
        runner.release.set()
        await _until(lambda: len(runner.batches) == 2)  # 2 and 3 went together, at Redis now
        rest[0].cancel()
        await asyncio.sleep(0)
        runner.release.set()
        outcomes = await asyncio.gather(first, *rest, return_exceptions=True)
        return outcomes, co.pending, runner.batches

    outcomes, pending, batches = asyncio.run(run())
    assert outcomes[0] == "k:1" and isinstance(outcomes[1], asyncio.CancelledError) and outcomes[2] == "k:3"
    assert batches == [[[1]], [[2], [3]]] and pending == 0


def test_work_still_queued_when_the_loop_closes_fails_with_a_typed_error() -> None:
    async def run() -> tuple[Any, Any]:
        runner = _Runner()
        co = c.AsyncCoalescer(runner, limit=100, max_batch=1)  # one entry per batch: the second waits
        first = await co.enqueue("k", [1])
        second = await co.enqueue("k", [2])
        await _until(lambda: runner.batches)
        for task in list(co._tasks):  # what closing the event loop does to the flush task
            task.cancel()
        await co.drain()
        return first, second

    first, second = asyncio.run(run())
    assert first.cancelled()
    assert isinstance(second.exception(), c.ServiceBusError)
    assert "closed before the operation ran" in str(second.exception())


def test_the_failure_loggers_ignore_a_cancelled_send_and_log_a_failed_one(caplog: pytest.LogCaptureFixture) -> None:
    async def run() -> None:
        loop = asyncio.get_running_loop()
        cancelled, failed = loop.create_future(), loop.create_future()
        for fut in (cancelled, failed):
            fut.add_done_callback(c.async_log_failure("send"))
        cancelled.cancel()
        failed.set_exception(RuntimeError("async lost"))
        await asyncio.sleep(0)

    with caplog.at_level(logging.WARNING, "sbredis"):
        asyncio.run(run())
        done = c.SyncCoalescer(lambda key, entries: [RuntimeError("sync lost")], limit=1).enqueue("k", [1])
        assert not done.cancelled() and isinstance(done.exception(), RuntimeError)
        done.add_done_callback(c.sync_log_failure("send"))
    assert [r.getMessage() for r in caplog.records] == [
        "a pre-settled send failed and was not reported to its caller: async lost",
        "a pre-settled send failed and was not reported to its caller: sync lost",
    ]


def test_the_sync_coalescer_runs_each_call_at_once() -> None:
    runs: list[list[list[Any]]] = []

    def run(key: Any, entries: list[list[Any]]) -> list[Any]:
        runs.append(entries)
        return [ValueError("bad") if items == ["bad"] else len(items) for items in entries]

    co = c.SyncCoalescer(run, limit=1)
    assert co.submit("k", [1, 2]) == 2 and co.pending == 0
    with pytest.raises(ValueError, match="bad"):
        co.submit("k", ["bad"])
    co.drain()
    assert runs == [[[1, 2]], [["bad"]]]
