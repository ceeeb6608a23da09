"""Fixtures and helpers of the reliability battery.

Sizes: reduced by default (CI); ``SBREDIS_BATTERY_SCALE=full`` runs the full sizes. Every fault
run writes a JSON report (counts, seed, fault times) to ``bench/results/reliability/<name>.<scale>.json``
or under ``$SBREDIS_BATTERY_REPORTS``; docs/reliability.md summarizes the full runs.
"""

from __future__ import annotations

import json
import os
import platform
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.redis_server import RedisServer
from tests.reliability.clock import ServerClock

T0 = 1_900_000_000_000  # a frozen server clock starts here (2030-03-17)
# The SLOWLOG checks: a script call slower than this fails the test. A capped call takes 2 to 4 ms;
# the limit is 50 ms, and 200 ms when the suite runs on parallel pytest-xdist workers, which share
# the CPUs with the test's redis-server (calls that lost the CPU for a time slice took 58 and 69 ms).
SLOW_SCRIPT_US = 200_000 if os.environ.get("PYTEST_XDIST_WORKER") else 50_000


def full_scale() -> bool:
    return os.environ.get("SBREDIS_BATTERY_SCALE", "") == "full"


def scaled(ci: int, full: int) -> int:
    return full if full_scale() else ci


def write_report(name: str, report: dict[str, Any]) -> Path:
    """Write one run's report; returns its path."""
    default = Path(__file__).resolve().parents[2] / "bench" / "results" / "reliability"
    folder = Path(os.environ.get("SBREDIS_BATTERY_REPORTS") or default)
    folder.mkdir(parents=True, exist_ok=True)
    scale = "full" if full_scale() else "ci"
    path = folder / f"{name}.{scale}.json"
    report = {
        "test": name,
        "scale": scale,
        "date": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        **report,
    }
    path.write_text(json.dumps(report, indent=2) + "\n")
    return path


@pytest.fixture(scope="module")
def clocked() -> Iterator[tuple[RedisServer, ServerClock]]:
    """A redis-server (AOF, fsync always) whose clock stands still until the test moves it."""
    clock = ServerClock(T0)
    server = RedisServer("--appendonly", "yes", "--appendfsync", "always", env=clock.env()).start()
    yield server, clock
    server.stop()
