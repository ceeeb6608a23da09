"""AutoLockRenewer (asyncio): renews registered message locks from one background task."""

from __future__ import annotations

import asyncio
import inspect
import logging
from types import TracebackType
from typing import Any

from .._core.renewal import FailureCallback, Schedule, describe

log = logging.getLogger("sbredis")


class AutoLockRenewer:
    """Keeps message locks alive while they are processed, as ``azure.servicebus.aio.AutoLockRenewer``.

    ``register(receiver, message)`` (or ``get_queue_receiver(..., auto_lock_renewer=renewer)``)
    starts renewing; settling the message, closing its receiver or the renewer, a failed renewal,
    or ``max_lock_renewal_duration`` seconds stop it. ``on_lock_renew_failure(message, error)`` may
    be a function or a coroutine function. Must be used inside a running event loop.
    """

    def __init__(
        self, max_lock_renewal_duration: float = 300, on_lock_renew_failure: FailureCallback | None = None
    ) -> None:
        self._schedule = Schedule(max_lock_renewal_duration, on_lock_renew_failure)
        self._wake: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None

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
        self._schedule.add(receiver, renewable, max_lock_renewal_duration, on_lock_renew_failure)
        if self._task is None or self._task.done():
            self._wake = asyncio.Event()
            self._task = asyncio.get_running_loop().create_task(self._run())
        else:
            assert self._wake is not None
            self._wake.set()

    async def _run(self) -> None:
        wake = self._wake
        assert wake is not None
        schedule = self._schedule
        while not schedule.closed:
            due, wait = schedule.due()
            for receiver, regs in due.items():
                outcomes = await receiver._renew_each([r.message for r in regs])
                for reg, outcome in zip(regs, outcomes, strict=True):
                    if isinstance(outcome, BaseException) and not reg.message._settled:
                        await self._failed(reg, outcome)
            if not due:
                wake.clear()
                try:
                    await asyncio.wait_for(wake.wait(), wait)
                except TimeoutError:
                    pass

    async def _failed(self, reg: Any, error: BaseException) -> None:
        callback, wrapped = self._schedule.failed(reg, error)
        log.warning("auto lock renewal of %s stopped: %s", describe(reg.message), error)
        if callback is not None:
            try:
                result = callback(reg.message, wrapped)
                if inspect.isawaitable(result):
                    await result
            except Exception:
                log.exception("on_lock_renew_failure raised")

    async def close(self) -> None:
        """Stop renewing everything (locks then elapse as usual)."""
        self._schedule.closed = True
        self._schedule.regs.clear()
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass

    async def __aenter__(self) -> AutoLockRenewer:
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"AutoLockRenewer(registered={len(self._schedule.regs)})"
