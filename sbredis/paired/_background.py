"""Background loops of a paired namespace (ping, syphon, fault watch): asyncio tasks for the async
client (``AsyncBackground``), daemon threads for the sync one (``Background``).

The two are written by hand, side by side, because concurrency itself differs; everything else of
a pairing is written once (``_aio.py``, converted to ``_sync.py`` by scripts/unasync.py, which
renames ``AsyncBackground`` to ``Background``). tests/unit/test_paired.py keeps their interfaces in
step. A loop runs ``step()`` again after the delay it returns, and ends when it returns None or the
loops are stopped; ``ensure`` starts a loop unless one of that name is running.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Awaitable, Callable

log = logging.getLogger("sbredis")

AsyncStep = Callable[[], Awaitable[float | None]]
Step = Callable[[], float | None]
STOP_TIMEOUT = 10.0  # seconds a stop waits for a step in progress (the async one then cancels it)


class AsyncBackground:
    """The loops as asyncio tasks of the running event loop."""

    def __init__(self) -> None:
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._stop = asyncio.Event()

    def ensure(self, name: str, step: AsyncStep) -> None:
        """Run `step` in a loop unless a loop called `name` runs already (or the loops were stopped)."""
        task = self._tasks.get(name)
        if self._stop.is_set() or (task is not None and not task.done()):
            return
        self._tasks[name] = asyncio.get_running_loop().create_task(self._loop(name, step), name=f"sbredis-{name}")

    def running(self, name: str) -> bool:
        task = self._tasks.get(name)
        return task is not None and not task.done()

    async def _loop(self, name: str, step: AsyncStep) -> None:
        while not self._stop.is_set():
            try:
                delay = await step()
            except Exception:  # a bug: say so, keep the loop alive
                log.exception("the paired namespace's %s loop failed; it goes on", name)
                delay = 1.0
            if delay is None:
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), delay)

    async def stop(self) -> None:
        """End every loop: a step in progress may finish (up to STOP_TIMEOUT), then it is cancelled."""
        self._stop.set()
        tasks = [t for t in self._tasks.values() if not t.done()]
        if not tasks:
            return
        _, pending = await asyncio.wait(tasks, timeout=STOP_TIMEOUT)
        for t in pending:
            t.cancel()
        if pending:
            await asyncio.wait(pending)


class Background:
    """The loops as daemon threads (the sync client's senders may call from several threads)."""

    def __init__(self) -> None:
        self._threads: dict[str, threading.Thread] = {}
        self._stop = threading.Event()
        self._lock = threading.Lock()

    def ensure(self, name: str, step: Step) -> None:
        """Run `step` in a loop unless a loop called `name` runs already (or the loops were stopped)."""
        with self._lock:
            thread = self._threads.get(name)
            if self._stop.is_set() or (thread is not None and thread.is_alive()):
                return
            thread = threading.Thread(target=self._loop, args=(name, step), name=f"sbredis-{name}", daemon=True)
            self._threads[name] = thread
            thread.start()

    def running(self, name: str) -> bool:
        thread = self._threads.get(name)
        return thread is not None and thread.is_alive()

    def _loop(self, name: str, step: Step) -> None:
        while not self._stop.is_set():
            try:
                delay = step()
            except Exception:  # a bug: say so, keep the loop alive
                log.exception("the paired namespace's %s loop failed; it goes on", name)
                delay = 1.0
            if delay is None:
                return
            self._stop.wait(delay)

    def stop(self) -> None:
        """End every loop, waiting up to STOP_TIMEOUT for a step in progress."""
        self._stop.set()
        current = threading.current_thread()
        for thread in list(self._threads.values()):
            if thread is not current:
                thread.join(STOP_TIMEOUT)
