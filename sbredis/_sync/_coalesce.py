"""The sync shell's Coalescer: the interface of ``sbredis/aio/_coalesce.py`` without concurrency.

A sync call runs at once as its own batch (a thread blocks on its own round trip).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable
from typing import Any

log = logging.getLogger("sbredis")

Runner = Callable[[Any, list[list[Any]]], list[Any]]


class Done:
    """The already-known outcome of a call (what enqueue returns in the sync shell)."""

    __slots__ = ("outcome",)

    def __init__(self, outcome: Any) -> None:
        self.outcome = outcome

    def add_done_callback(self, fn: Callable[[Done], None]) -> None:
        fn(self)

    def cancelled(self) -> bool:
        return False

    def exception(self) -> BaseException | None:
        return self.outcome if isinstance(self.outcome, BaseException) else None


class Coalescer:
    def __init__(self, run: Runner, limit: int, max_batch: int = 5000) -> None:
        self._run = run

    @property
    def pending(self) -> int:
        return 0

    def submit(self, key: Hashable, items: list[Any]) -> Any:
        outcome = self._run(key, [items])[0]
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    def enqueue(self, key: Hashable, items: list[Any]) -> Done:
        return Done(self._run(key, [items])[0])

    def drain(self) -> None:
        """Nothing is ever queued."""


def log_failure(what: str) -> Callable[[Done], None]:
    def done(fut: Done) -> None:
        e = fut.exception()
        if e is not None:
            log.warning("a pre-settled %s failed and was not reported to its caller: %s", what, e)

    return done


def gather(results: list[Any]) -> list[Any]:
    """The sync twin of aio's gather: the calls already ran, one after another, in the list."""
    return results
