"""The AutoLockRenewer's bookkeeping, without I/O: which locks to renew when, and what ends a renewal.

A lock is renewed when a third of its span (the lock duration) is left, by the server's clock as the
receiver last saw it. All due locks of one receiver renew together (one script call per
partition); a registered session (``receiver.session``) renews the session lock, which covers its
messages. Renewal of a message ends when it is settled, its receiver closes, the renewer closes,
a renewal fails (the on_lock_renew_failure callback gets the message and an AutoLockRenewFailed),
or its max_lock_renewal_duration passes (AutoLockRenewTimeout is set on the message's
``auto_renew_error``; the lock then elapses as usual, and no callback runs, as in the Azure SDK).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .._message import ServiceBusReceivedMessage
from ..exceptions import (
    AutoLockRenewFailed,
    AutoLockRenewTimeout,
    InvalidArgumentError,
    InvalidOperationError,
)

MIN_WAIT = 0.005  # seconds between passes at least (a lock elapsing that soon is renewed in this pass)
IDLE_WAIT = 1.0  # seconds to sleep with nothing registered (register() wakes the renewer anyway)

FailureCallback = Callable[[Any, Exception | None], Any]


def check_duration(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (0 < value < math.inf):
        raise InvalidArgumentError("max_lock_renewal_duration must be a positive number of seconds")
    return float(value)


@dataclass(eq=False)
class Registration:
    receiver: Any
    message: ServiceBusReceivedMessage
    stop_at: float  # time.monotonic()
    span_ms: int
    on_failure: FailureCallback | None
    stopped: bool = False  # stop(): its lock is left to elapse


def _is_session(renewable: Any) -> bool:
    return bool(getattr(renewable, "_is_session", False))


def describe(renewable: Any) -> str:
    """How a log line names a registered message or session."""
    if _is_session(renewable):
        return f"session {renewable.session_id}"
    return f"message {renewable.sequence_number}"


def server_now_ms(receiver: Any) -> int:
    offset: int = receiver.clock_offset_ms
    return int(time.time() * 1000) + offset


class Schedule:
    """The registrations of one AutoLockRenewer."""

    def __init__(self, max_lock_renewal_duration: float, on_lock_renew_failure: FailureCallback | None) -> None:
        self.max_duration = check_duration(max_lock_renewal_duration)
        if on_lock_renew_failure is not None and not callable(on_lock_renew_failure):
            raise InvalidArgumentError("on_lock_renew_failure must be callable")
        self.on_failure = on_lock_renew_failure
        self.regs: list[Registration] = []
        self.closed = False
        self.next_pass = 0.0  # time.monotonic() of the renewer's next pass, as due() last planned it

    def add(
        self,
        receiver: Any,
        message: Any,
        max_lock_renewal_duration: float | None,
        on_lock_renew_failure: FailureCallback | None,
    ) -> bool:
        """Register; returns whether the renewer must wake for it (its renewal is due before the
        renewer's next pass). Waking it for every message would rescan every registration."""
        if self.closed:
            raise InvalidOperationError("The AutoLockRenewer is closed; it takes no new registrations.")
        if not isinstance(message, ServiceBusReceivedMessage) and not getattr(message, "_is_session", False):
            raise InvalidArgumentError(
                f"register takes a received message or a receiver's session, not {type(message).__name__}"
            )
        if not hasattr(receiver, "renew_each"):
            raise InvalidArgumentError("register takes the receiver the message came from")
        if message.settled or not (message.nonce if _is_session(message) else message.lock_ref.nonce):
            raise InvalidOperationError(
                "Only an unsettled message received in PEEK_LOCK mode, or an open session, holds a lock to renew."
            )
        if message.entity_name != receiver.entity_name:
            raise InvalidOperationError("The message was not received by this receiver.")
        duration = self.max_duration if max_lock_renewal_duration is None else check_duration(max_lock_renewal_duration)
        if on_lock_renew_failure is not None and not callable(on_lock_renew_failure):
            raise InvalidArgumentError("on_lock_renew_failure must be callable")
        span = max(1, message.locked_until_ms - server_now_ms(receiver))
        mono = time.monotonic()
        on_failure = on_lock_renew_failure or self.on_failure
        self.regs.append(Registration(receiver, message, mono + duration, span, on_failure))
        return bool(mono + (span - span // 3) / 1000 - MIN_WAIT < self.next_pass)

    def due(self) -> tuple[dict[Any, list[Registration]], float]:
        """Registrations to renew now, by receiver, and the seconds until the next one is due.

        Drops the finished ones (settled, receiver closed, past their max duration)."""
        mono = time.monotonic()
        due: dict[Any, list[Registration]] = {}
        keep: list[Registration] = []
        wait = IDLE_WAIT
        for reg in self.regs:
            m = reg.message
            if m.settled or reg.receiver.closed or reg.stopped:
                continue
            if mono >= reg.stop_at:
                m.auto_renew_error = AutoLockRenewTimeout(
                    "The auto-renew period for the message's lock elapsed; the lock was left to expire."
                )
                continue
            keep.append(reg)
            left_ms = m.locked_until_ms - server_now_ms(reg.receiver) - reg.span_ms // 3
            if left_ms <= MIN_WAIT * 1000:
                due.setdefault(reg.receiver, []).append(reg)
            else:
                wait = min(wait, left_ms / 1000, reg.stop_at - mono)
        self.regs = keep
        wait = max(wait, MIN_WAIT)
        self.next_pass = mono + wait
        return due, wait

    def stop(self, message: Any) -> None:
        """Renew `message`'s lock no more (due() drops it): a flag, not a list change, so a pass
        running on the renewer's thread keeps it dropped."""
        for reg in list(self.regs):
            if reg.message is message:
                reg.stopped = True

    def failed(self, reg: Registration, error: BaseException) -> tuple[FailureCallback | None, AutoLockRenewFailed]:
        """Stop renewing `reg` after `error`; returns the callback to run and its error argument."""
        if reg in self.regs:
            self.regs.remove(reg)
        wrapped = AutoLockRenewFailed("Failed to auto-renew the lock.", error=error)
        reg.message.auto_renew_error = wrapped
        return reg.on_failure, wrapped
