"""Retries with backoff: a failed message comes back after a delay that grows with each delivery.

The retry is the abandon itself: ``abandon_message(m, delay=...)`` releases the lock and makes the
message a scheduled one due after the delay, in one script call per partition, so the message's
delivery_count carries on (it is the attempt number) and the entity's max_delivery_count still
dead-letters it (reason ``MaxDeliveryCountExceeded``). ``max_retries`` dead-letters it sooner,
with reason ``MaxRetriesExceeded``.

The delay before retry n (the message failed on delivery n) is
``min(max_backoff, backoff * factor ** (n - 1))``, then with ``jitter`` j drawn uniformly from
``[d * (1 - j), d]``: j = 1 is Celery's full jitter, 0 (the default) none. The shapes of Celery's
``retry_backoff``/``retry_backoff_max``/``retry_jitter``/``max_retries`` and Dramatiq's
``min_backoff``/``max_backoff``/``max_retries``, in seconds.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from sbredis.exceptions import InvalidArgumentError

MAX_DELAY = 366 * 86400.0  # seconds; the abandon script's limit (settlement.MAX_ABANDON_DELAY)


class RetryAfter(Exception):  # noqa: N818 - an instruction, not an error
    """Raise from a handler to abandon the message with a delay of `seconds` (the entity's
    max_delivery_count still applies). App tasks with a ``retry`` policy raise it for you."""

    def __init__(self, seconds: float, description: str | None = None) -> None:
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 <= seconds <= MAX_DELAY:
            raise InvalidArgumentError(f"RetryAfter takes a number of seconds between 0 and {MAX_DELAY:.0f}")
        super().__init__(f"retry after {seconds:g} s" + (f": {description}" if description else ""))
        self.seconds = float(seconds)


@dataclass(frozen=True)
class Retry:
    """A retry policy: for a worker (``Worker(retry=...)``) or a task (``@app.task(retry=...)``).

    Raises:
        InvalidArgumentError: a negative or non-numeric field, factor below 1, jitter outside 0..1.
    """

    backoff: float = 1.0
    """Seconds before the first retry."""
    factor: float = 2.0
    """Each retry waits this many times longer than the one before (1: a fixed delay)."""
    max_backoff: float = 600.0
    """The longest delay, before jitter."""
    jitter: float = 0.0
    """0 to 1: the share of the delay drawn at random (the delay lies in [d * (1 - jitter), d])."""
    max_retries: int | None = None
    """Retries before the message is dead-lettered (reason MaxRetriesExceeded); None: only the
    entity's max_delivery_count limits them."""

    def __post_init__(self) -> None:
        for name in ("backoff", "factor", "max_backoff", "jitter"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                raise InvalidArgumentError(f"Retry {name} must be a non-negative number")
        if self.factor < 1:
            raise InvalidArgumentError("Retry factor must be at least 1")
        if self.jitter > 1:
            raise InvalidArgumentError("Retry jitter must be between 0 and 1")
        if self.backoff > MAX_DELAY or self.max_backoff > MAX_DELAY:
            raise InvalidArgumentError(f"Retry delays must not pass {MAX_DELAY:.0f} s")
        m = self.max_retries
        if m is not None and (isinstance(m, bool) or not isinstance(m, int) or m < 0):
            raise InvalidArgumentError("Retry max_retries must be None or a non-negative int")

    def delay(self, delivery_count: int) -> float:
        """Seconds to wait before the next delivery of a message that failed on `delivery_count`."""
        n = max(delivery_count, 1) - 1
        try:
            d = self.backoff * self.factor**n
        except OverflowError:
            d = math.inf
        d = min(d, self.max_backoff)
        if self.jitter:
            d -= d * self.jitter * random.random()
        return d

    def exhausted(self, delivery_count: int) -> bool:
        """Whether a message that failed on `delivery_count` has used up its retries."""
        return self.max_retries is not None and delivery_count > self.max_retries
