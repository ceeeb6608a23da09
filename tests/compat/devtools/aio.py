"""Async recording decorators: pass-throughs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def recorded_by_proxy_async(fn: Callable[..., Any]) -> Callable[..., Any]:
    return fn
