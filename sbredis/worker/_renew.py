"""The one place the workers get a lock renewer from.

``sbredis.AutoLockRenewer`` (threads) and ``sbredis.aio.AutoLockRenewer`` (asyncio) are the
renewers, with the azure-servicebus shape: ``AutoLockRenewer(max_lock_renewal_duration=..,
on_lock_renew_failure=..)``, ``.register(receiver, message, max_lock_renewal_duration=..,
on_lock_renew_failure=..)`` and ``.close()``. Until they are in the package, the small stand-ins
below (same constructor, ``register`` and ``close``, nothing else) keep the workers' locks alive;
they go away when the real ones land, and nothing else in the workers changes.

Both stand-ins renew a lock when half of what was left of it at the last renewal has passed, stop
when the message is settled, its lock is lost, or ``max_lock_renewal_duration`` has passed, and
call ``on_lock_renew_failure(message, error)`` when a renewal fails.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

log = logging.getLogger("sbredis.worker")

FailureCallback = Callable[[Any, Exception | None], Any]
_TICK = 0.05


def _renew_at(message: Any) -> float:
    """Monotonic time at which to renew: halfway to the lock's end (by the wall clock)."""
    until: datetime | None = message.locked_until_utc
    left = 0.0 if until is None else (until - datetime.now(UTC)).total_seconds()
    return time.monotonic() + max(0.0, left / 2)


def _done(message: Any) -> bool:
    return bool(getattr(message, "_settled", False))


class _Entry:
    __slots__ = ("deadline", "message", "next_at", "on_failure", "receiver")

    def __init__(self, receiver: Any, message: Any, duration: float, on_failure: FailureCallback | None) -> None:
        self.receiver = receiver
        self.message = message
        self.deadline = time.monotonic() + duration
        self.next_at = _renew_at(message)
        self.on_failure = on_failure


class _ThreadRenewer:
    """Stand-in for ``sbredis.AutoLockRenewer``: one daemon thread renews every registered lock."""

    def __init__(
        self, max_lock_renewal_duration: float = 300, on_lock_renew_failure: FailureCallback | None = None
    ) -> None:
        self._duration = max_lock_renewal_duration
        self._on_failure = on_lock_renew_failure
        self._entries: list[_Entry] = []
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._closed = False
        self._thread: threading.Thread | None = None

    def register(
        self,
        receiver: Any,
        renewable: Any,
        max_lock_renewal_duration: float | None = None,
        on_lock_renew_failure: FailureCallback | None = None,
    ) -> None:
        duration = self._duration if max_lock_renewal_duration is None else max_lock_renewal_duration
        entry = _Entry(receiver, renewable, duration, on_lock_renew_failure or self._on_failure)
        with self._lock:
            if self._closed:
                raise RuntimeError("the lock renewer is closed")
            self._entries.append(entry)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="sbredis-lock-renewer", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while not self._closed:
            now = time.monotonic()
            with self._lock:
                due = [e for e in self._entries if e.next_at <= now or _done(e.message) or e.deadline <= now]
            for e in due:
                self._renew(e, now)
            self._wake.wait(_TICK)

    def _renew(self, e: _Entry, now: float) -> None:
        keep = False
        if not _done(e.message) and e.deadline > now:
            try:
                e.receiver.renew_message_lock(e.message)
                e.next_at = _renew_at(e.message)
                keep = True
            except Exception as exc:
                if not _done(e.message) and e.on_failure is not None:
                    try:
                        e.on_failure(e.message, exc)
                    except Exception:
                        log.exception("on_lock_renew_failure raised")
        if not keep:
            with self._lock:
                if e in self._entries:
                    self._entries.remove(e)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._entries.clear()
            thread, self._thread = self._thread, None
        self._wake.set()
        if thread is not None and thread is not threading.current_thread():
            thread.join(5)

    def __enter__(self) -> _ThreadRenewer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _AsyncRenewer:
    """Stand-in for ``sbredis.aio.AutoLockRenewer``: one task renews every registered lock."""

    def __init__(
        self, max_lock_renewal_duration: float = 300, on_lock_renew_failure: FailureCallback | None = None
    ) -> None:
        self._duration = max_lock_renewal_duration
        self._on_failure = on_lock_renew_failure
        self._entries: list[_Entry] = []
        self._task: asyncio.Task[None] | None = None
        self._closed = False

    def register(
        self,
        receiver: Any,
        renewable: Any,
        max_lock_renewal_duration: float | None = None,
        on_lock_renew_failure: FailureCallback | None = None,
    ) -> None:
        if self._closed:
            raise RuntimeError("the lock renewer is closed")
        duration = self._duration if max_lock_renewal_duration is None else max_lock_renewal_duration
        self._entries.append(_Entry(receiver, renewable, duration, on_lock_renew_failure or self._on_failure))
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        while not self._closed:
            now = time.monotonic()
            for e in [e for e in self._entries if e.next_at <= now or _done(e.message) or e.deadline <= now]:
                await self._renew(e, now)
            await asyncio.sleep(_TICK)

    async def _renew(self, e: _Entry, now: float) -> None:
        keep = False
        if not _done(e.message) and e.deadline > now:
            try:
                await e.receiver.renew_message_lock(e.message)
                e.next_at = _renew_at(e.message)
                keep = True
            except Exception as exc:
                if not _done(e.message) and e.on_failure is not None:
                    try:
                        r = e.on_failure(e.message, exc)
                        if asyncio.iscoroutine(r):
                            await r
                    except Exception:
                        log.exception("on_lock_renew_failure raised")
        if not keep and e in self._entries:
            self._entries.remove(e)

    async def close(self) -> None:
        self._closed = True
        self._entries.clear()
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass

    async def __aenter__(self) -> _AsyncRenewer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def sync_renewer(max_lock_renewal_duration: float, on_lock_renew_failure: FailureCallback | None = None) -> Any:
    """``sbredis.AutoLockRenewer`` when the package has it, else the stand-in."""
    cls: Any
    try:
        from sbredis import AutoLockRenewer

        cls = AutoLockRenewer
    except ImportError:
        cls = _ThreadRenewer
    return cls(max_lock_renewal_duration=max_lock_renewal_duration, on_lock_renew_failure=on_lock_renew_failure)


def async_renewer(max_lock_renewal_duration: float, on_lock_renew_failure: FailureCallback | None = None) -> Any:
    """``sbredis.aio.AutoLockRenewer`` when the package has it, else the stand-in."""
    cls: Any
    try:
        from sbredis.aio import AutoLockRenewer

        cls = AutoLockRenewer
    except ImportError:
        cls = _AsyncRenewer
    return cls(max_lock_renewal_duration=max_lock_renewal_duration, on_lock_renew_failure=on_lock_renew_failure)
