"""Fixtures of the worker tests: `start` runs a Worker on a thread and stops it in teardown."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from sbredis.worker import Worker


class Running:
    """A worker on a thread (its own event loop), stopped in teardown."""

    def __init__(self, worker: Worker) -> None:
        self.worker = worker
        self.code: int | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        self.code = self.worker.run(handle_signals=False)

    def stop(self, force: bool = False, timeout: float = 15.0) -> int | None:
        self.worker.stop(force)
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "the worker did not stop"
        return self.code


@pytest.fixture()
def start(url: str) -> Iterator[Callable[..., Running]]:
    running: list[Running] = []

    def make(handler: Any, entity: str, **options: Any) -> Running:
        options.setdefault("poll_interval", 0.2)
        r = Running(Worker(url, handler, entity=entity, **options))
        running.append(r)
        return r

    yield make
    for r in running:
        if r.thread.is_alive():
            r.stop(force=True)
