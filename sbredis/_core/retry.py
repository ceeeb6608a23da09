"""The client's retry policy (the Azure SDK's keyword names), as tenacity settings.

Only errors marked ``retryable`` are tried again (a lost connection, a timeout, a busy or loading
server). A retried call repeats the same script call with the same arguments: a send repeats its
message ids, so duplicate detection drops a copy whose first attempt was stored but whose reply was
lost. Without duplicate detection such a send can be stored twice (at-least-once).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tenacity import retry_if_exception, stop_after_attempt, wait_exponential, wait_fixed

from ..exceptions import InvalidArgumentError, ServiceBusError

MAX_BACKOFF = 86_400  # seconds; NaN fails the bound check too (a sleep of NaN or of 1e300 s raises)
RETRY_OPTIONS = ("retry_total", "retry_backoff_factor", "retry_backoff_max", "retry_mode")


def is_retryable(e: BaseException) -> bool:
    return isinstance(e, ServiceBusError) and e.retryable


@dataclass(frozen=True)
class RetryPolicy:
    """retry_total: attempts after the first (0 = none); backoff in seconds."""

    retry_total: int = 3
    retry_backoff_factor: float = 0.8
    retry_backoff_max: float = 120.0
    retry_mode: str = "exponential"

    @classmethod
    def from_options(cls, options: dict[str, Any]) -> RetryPolicy:
        """Take the retry keywords out of `options` (the rest are connection options)."""
        given = {k: options.pop(k) for k in RETRY_OPTIONS if k in options}
        policy = cls(**given)
        total = policy.retry_total
        if isinstance(total, bool) or not isinstance(total, int) or not 0 <= total <= 100:
            raise InvalidArgumentError("retry_total must be an int between 0 and 100")
        for name in ("retry_backoff_factor", "retry_backoff_max"):
            value = getattr(policy, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= MAX_BACKOFF:
                raise InvalidArgumentError(f"{name} must be between 0 and {MAX_BACKOFF} seconds")
        mode = getattr(policy.retry_mode, "value", policy.retry_mode)
        if mode not in ("exponential", "fixed"):
            raise InvalidArgumentError("retry_mode must be 'exponential' or 'fixed'")
        return cls(total, float(policy.retry_backoff_factor), float(policy.retry_backoff_max), mode)

    def tenacity_options(self) -> dict[str, Any]:
        """Keyword arguments for tenacity's Retrying / AsyncRetrying."""
        if self.retry_mode == "fixed":
            wait: Any = wait_fixed(self.retry_backoff_factor)
        else:  # factor, 2*factor, 4*factor, ... up to retry_backoff_max
            wait = wait_exponential(multiplier=self.retry_backoff_factor, max=self.retry_backoff_max)
        return {
            "stop": stop_after_attempt(self.retry_total + 1),
            "wait": wait,
            "retry": retry_if_exception(is_retryable),
            "reraise": True,
        }
