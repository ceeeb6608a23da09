"""When a script call polls its connection for the reply instead of sleeping until it arrives.

A one-message script call is answered in tens of µs. A thread or event loop that sleeps until the
reply arrives pays for being woken up as well: on virtual machines, where an idle CPU halts and is
woken by the hypervisor, that is 20 to 40 µs each time, more than the script took
(docs/benchmarks.md, "Waiting for a reply"). So a single script call polls its socket for up to
``reply_poll_time`` seconds (``ServiceBusClient(..., reply_poll_time=...)``, else the
``SBREDIS_REPLY_POLL_TIME`` environment variable, else 0.0002; 0 turns it off) and only then
sleeps; the sync shell polls the socket, the async shell keeps the event loop turning (other tasks
run meanwhile). Polling costs CPU and is worth it only when replies come within the limit, so each
kind of call (script and number of arguments) polls only while its last reply came within the
limit: a call whose reply came later (a large batch, a busy server, a machine with no CPU to
spare) makes the next one of its kind sleep at once, and a reply that comes in time again turns
polling back on.

Polling also stops while the calling thread has been waiting for a CPU (CpuWait): on a machine
with no core to spare, a polling client takes one the server or its own work needs.

This module keeps that decision (its one read is the thread's scheduler statistics); the
transports time their calls and do the polling.
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Hashable
from typing import Any

from ..exceptions import InvalidArgumentError

DEFAULT_REPLY_POLL_TIME = 0.0002  # seconds
MAX_REPLY_POLL_TIME = 0.01  # seconds: a poll is a busy wait, never longer than this
ENV = "SBREDIS_REPLY_POLL_TIME"


def reply_poll_limit(value: Any = None) -> float:
    """The poll limit a client uses: `value` (seconds), else the environment's, else the default;
    InvalidArgumentError unless it is a number of seconds from 0 to MAX_REPLY_POLL_TIME."""
    name = "reply_poll_time"
    if value is None:
        value = os.environ.get(ENV)
        if value is None:
            return DEFAULT_REPLY_POLL_TIME
        name = ENV
        try:
            value = float(value)
        except ValueError:
            raise InvalidArgumentError(f"{ENV} must be a number of seconds") from None
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or not 0 <= value <= MAX_REPLY_POLL_TIME
    ):
        raise InvalidArgumentError(f"{name} must be between 0 and {MAX_REPLY_POLL_TIME} seconds")
    return float(value)


class CpuWait:
    """Whether the calling thread has been waiting for a CPU: the share of the last WINDOW seconds
    it spent runnable but not running, from Linux's /proc/thread-self/schedstat (its run-queue
    wait), read once a window per thread. Where that file cannot be read, never."""

    WINDOW = 0.05  # seconds
    SHARE = 0.05  # of the window spent waiting for a CPU: past it, the thread is contended
    PATH = "/proc/thread-self/schedstat"

    def __init__(self) -> None:
        self._threads = threading.local()  # since, waited (ns), contended
        self.readable = True

    def _waited(self) -> int | None:
        """The thread's run-queue wait so far (ns), or None."""
        try:
            fd = os.open(self.PATH, os.O_RDONLY)
            try:
                return int(os.read(fd, 128).split()[1])
            finally:
                os.close(fd)
        except (OSError, ValueError, IndexError):
            self.readable = False
            return None

    def contended(self, now: float) -> bool:
        """True when the thread waited for a CPU for more than SHARE of the last window (`now`:
        time.monotonic())."""
        t = self._threads
        since = getattr(t, "since", None)
        if since is not None and now - since < self.WINDOW:
            return bool(t.contended)
        waited = self._waited() if self.readable else None
        if waited is None:
            return False
        t.contended = since is not None and (waited - t.waited) / 1e9 > self.SHARE * (now - since)
        t.since, t.waited = now, waited
        return bool(t.contended)


class ReplyPoll:
    """How long the next call of each kind polls for its reply: the limit; 0 after a reply of that
    kind came later than the limit (until one comes within it), and 0 while the calling thread has
    been waiting for a CPU (CpuWait): there a polling client takes a core the server or the
    client's own work needs, and its loops ran 10 to 20 % slower than sleeping ones."""

    __slots__ = ("_cpu", "_late", "limit")

    def __init__(self, limit: float, cpu: CpuWait | None = None) -> None:
        self.limit = limit
        self._late: set[Hashable] = set()
        self._cpu = cpu or CpuWait()

    def budget(self, kind: Hashable, now: float) -> float:
        """Seconds the next call of `kind` polls before it sleeps (0: it sleeps at once); `now`:
        time.monotonic()."""
        if not self.limit or kind in self._late or self._cpu.contended(now):
            return 0.0
        return self.limit

    def took(self, kind: Hashable, seconds: float) -> None:
        """A call of `kind` had its reply `seconds` after it was sent."""
        if seconds > self.limit:
            self._late.add(kind)
        elif self._late:
            self._late.discard(kind)
