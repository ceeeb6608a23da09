"""The adaptive prefetch of a Worker without `prefetch` (sbredis.worker._pace), on a fake clock."""

from __future__ import annotations

from typing import Any

import pytest

from sbredis.worker import _pace
from sbredis.worker._pace import MAX_AHEAD, Pace


@pytest.fixture()
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    now = [100.0]
    monkeypatch.setattr(_pace.time, "monotonic", lambda: now[0])
    return now


def run(pace: Pace, clock: list[float], per_second: float, seconds: float) -> int:
    """Handlers finishing at `per_second` for `seconds`, asked for the prefetch every 0.05 s."""
    steps = int(seconds / 0.05)
    carry = 0.0
    for _ in range(steps):
        clock[0] += 0.05
        carry += per_second * 0.05
        while carry >= 1:
            pace.handled()
            carry -= 1
        pace.prefetch()
    return pace.prefetch()


def test_it_starts_where_told_and_keeps_that_until_it_measured(clock: Any) -> None:
    pace = Pace(8)
    assert pace.prefetch() == 8
    clock[0] += 0.1
    assert pace.prefetch() == 8


def test_about_a_second_of_work_ahead(clock: Any) -> None:
    assert 18 <= run(Pace(8), clock, 20, 3) <= 22  # (the pace is counted over 0.25 s spans)
    assert 3 <= run(Pace(8), clock, 4, 3) <= 5


def test_fast_handlers_get_the_cap_and_slow_ones_none(clock: Any) -> None:
    assert run(Pace(8), clock, 10_000, 2) == MAX_AHEAD
    assert run(Pace(8), clock, 0.5, 3) == 0


def test_no_more_than_a_quarter_of_a_lock_of_work(clock: Any) -> None:
    pace = Pace(8)
    pace.saw_lock(2.0)  # half a second of work at most
    assert 45 <= run(pace, clock, 100, 3) <= 55


def test_it_follows_a_change_of_pace(clock: Any) -> None:
    pace = Pace(8)
    assert run(pace, clock, 1000, 2) == MAX_AHEAD
    assert 8 <= run(pace, clock, 10, 3) <= 12
