"""Background loops of a paired namespace (ping, siphon, fault watch) as asyncio tasks.

The sync shell has the same interface on daemon threads (``sbredis/_sync/_paired_tasks.py``).
A loop runs ``step()`` again after the delay it returns, and ends when it returns None or the
loops are stopped; ``ensure`` starts a loop unless one of that name is running.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

log = logging.getLogger("sbredis")

Step = Callable[[], Awaitable[float | None]]
STOP_TIMEOUT = 10.0  # seconds a stop waits for a step in progress before cancelling it


class Background:
    def __init__(self) -> None:
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._stop = asyncio.Event()

    def ensure(self, name: str, step: Step) -> None:
        """Run `step` in a loop unless a loop called `name` runs already (or the loops were stopped)."""
        task = self._tasks.get(name)
        if self._stop.is_set() or (task is not None and not task.done()):
            return
        self._tasks[name] = asyncio.get_running_loop().create_task(self._loop(name, step), name=f"sbredis-{name}")

    def running(self, name: str) -> bool:
        task = self._tasks.get(name)
        return task is not None and not task.done()

    async def _loop(self, name: str, step: Step) -> None:
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
