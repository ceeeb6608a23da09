"""AutoLockRenewer (threads): renews registered message locks from one background thread."""

from __future__ import annotations

import logging
import threading
from types import TracebackType
from typing import Any

from .._core.renewal import FailureCallback, Registration, Schedule, describe

log = logging.getLogger("sbredis")


class AutoLockRenewer:
    """Keeps message locks alive while they are processed, as ``azure.servicebus.AutoLockRenewer``.

    ``register(receiver, message)`` (or ``get_queue_receiver(..., auto_lock_renewer=renewer)``)
    starts renewing; settling the message, closing its receiver or the renewer, a failed renewal,
    or ``max_lock_renewal_duration`` seconds stop it. One daemon thread renews every registered
    lock (all due locks of a receiver in one script call per partition); ``on_lock_renew_failure``
    runs on that thread.
    """

    def __init__(
        self, max_lock_renewal_duration: float = 300, on_lock_renew_failure: FailureCallback | None = None
    ) -> None:
        self._schedule = Schedule(max_lock_renewal_duration, on_lock_renew_failure)
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    def register(
        self,
        receiver: Any,
        renewable: Any,
        max_lock_renewal_duration: float | None = None,
        on_lock_renew_failure: FailureCallback | None = None,
    ) -> None:
        """Renew `renewable`'s lock (a message `receiver` handed out) until it is settled.

        Raises:
            InvalidOperationError: the renewer is closed, or the message holds no lock.
            InvalidArgumentError: not a received message, or bad options.
        """
        with self._lock:
            self._schedule.add(receiver, renewable, max_lock_renewal_duration, on_lock_renew_failure)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="sbredis-lock-renewer", daemon=True)
                self._thread.start()
        self._wake.set()

    def _run(self) -> None:
        schedule = self._schedule
        while not schedule.closed:
            with self._lock:
                due, wait = schedule.due()
            for receiver, regs in due.items():
                try:
                    outcomes = receiver._renew_each([r.message for r in regs])
                except Exception as e:  # a bug, not a Redis error (those come back as outcomes)
                    outcomes = [e] * len(regs)
                for reg, outcome in zip(regs, outcomes, strict=True):
                    if isinstance(outcome, BaseException) and not reg.message._settled:
                        self._failed(reg, outcome)
            if not due:
                self._wake.wait(wait)
                self._wake.clear()

    def _failed(self, reg: Registration, error: BaseException) -> None:
        with self._lock:
            callback, wrapped = self._schedule.failed(reg, error)
        log.warning("auto lock renewal of %s stopped: %s", describe(reg.message), error)
        if callback is not None:
            try:
                callback(reg.message, wrapped)
            except Exception:
                log.exception("on_lock_renew_failure raised")

    def close(self, wait: bool = True) -> None:
        """Stop renewing everything (locks then elapse as usual); `wait` joins the thread."""
        with self._lock:
            self._schedule.closed = True
            self._schedule.regs.clear()
            thread, self._thread = self._thread, None
        self._wake.set()
        if wait and thread is not None and thread is not threading.current_thread():
            thread.join()

    def __enter__(self) -> AutoLockRenewer:
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"AutoLockRenewer(registered={len(self._schedule.regs)})"
