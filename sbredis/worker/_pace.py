"""How many messages a worker keeps locked ahead of its handlers when ``prefetch`` is not set.

Messages fetched ahead wait in the receiver's buffer, locked (so no other worker can take them)
and not renewed (a lock that elapses there costs the message a delivery). Few of them make the
worker go to Redis for every handful of messages (a no-op handler at threads x8 costs about a
quarter more CPU per message at a prefetch of 16 than at 64); many of them hold messages back
from other workers, and with slow handlers let locks elapse before a handler gets to them. So the
worker keeps about AHEAD_SECONDS of its handlers' work ahead, as measured (handlers finished per
second), and never more than the work of LOCK_SHARE of a lock or MAX_AHEAD messages: thousands
of no-op messages a second get MAX_AHEAD, eight one-second handlers get 8, handlers slower than
a lock's share get none (the SDK receiver's default).
"""

from __future__ import annotations

import time

AHEAD_SECONDS = 1.0  # the handlers' work kept ahead
LOCK_SHARE = 0.25  # at most the work of this share of the lock duration
MAX_AHEAD = 256
SAMPLE_SECONDS = 0.25  # the pace is measured over spans at least this long


class Pace:
    """The handlers' pace and the prefetch it calls for (see the module docstring)."""

    def __init__(self, start: int) -> None:
        self.ahead = start
        self.lock_seconds: float | None = None  # the longest lock seen on a received message
        self._done = 0
        self._since = time.monotonic()
        self._rate: float | None = None

    def handled(self) -> None:
        """A handler finished."""
        self._done += 1

    def saw_lock(self, seconds: float) -> None:
        """A message was received with `seconds` of lock left."""
        if self.lock_seconds is None or seconds > self.lock_seconds:
            self.lock_seconds = seconds

    def prefetch(self) -> int:
        """Messages to keep ahead now."""
        now = time.monotonic()
        span = now - self._since
        if span >= SAMPLE_SECONDS:
            rate = self._done / span
            self._rate = rate if self._rate is None else (self._rate + rate) / 2
            self._done, self._since = 0, now
            horizon = AHEAD_SECONDS
            if self.lock_seconds is not None:
                horizon = min(horizon, self.lock_seconds * LOCK_SHARE)
            self.ahead = max(0, min(MAX_AHEAD, int(self._rate * horizon)))
        return self.ahead
