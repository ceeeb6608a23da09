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
