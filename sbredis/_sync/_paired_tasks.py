"""Background loops of a paired namespace (ping, siphon, fault watch) on daemon threads.

The interface of ``sbredis/aio/_paired_tasks.py``: a loop runs ``step()`` again after the delay
it returns, and ends when it returns None or the loops are stopped; ``ensure`` starts a loop
unless one of that name is running.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger("sbredis")

Step = Callable[[], float | None]
STOP_TIMEOUT = 10.0  # seconds a stop waits for a step in progress


class Background:
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
