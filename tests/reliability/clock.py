"""Clocks under the test's control, through libfaketime (the `libfaketime` package of the test
extra ships the preload library).

`ServerClock` stops a redis-server's wall clock at a time the test sets and moves it on demand, so
every TIME a script reads is known to the test (the model-based test predicts lock, expiry and
schedule times to the millisecond). The monotonic clock is left alone, so the server's event loop
runs as usual. `offset_env` shifts the clock of any process (a client an hour off).
"""

from __future__ import annotations

import importlib.util
import os
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path


def libfaketime() -> Path:
    """The preload library shipped by the `libfaketime` package (not imported: only its file)."""
    spec = importlib.util.find_spec("libfaketime")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the libfaketime package is not installed (it is in the test extra)")
    lib = Path(next(iter(spec.submodule_search_locations))) / "vendor" / "libfaketime" / "src" / "libfaketime.so.1"
    if not lib.is_file():
        raise RuntimeError(f"libfaketime's library is missing: {lib}")
    return lib


def _stamp(ms: int) -> str:
    # half a millisecond over: libfaketime parses the fraction as a double, and the scripts floor
    # microseconds to milliseconds
    when = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=ms, microseconds=500)
    return when.strftime("%Y-%m-%d %H:%M:%S.%f")


class ServerClock:
    """A wall clock that stands still at `now_ms` until the test moves it."""

    def __init__(self, start_ms: int) -> None:
        self.dir = tempfile.mkdtemp(prefix="sbredis-clock-")
        self.file = Path(self.dir) / "now"
        self.now_ms = 0
        self.set(start_ms)

    def env(self) -> dict[str, str]:
        """Environment for a process that should read this clock."""
        return {
            "LD_PRELOAD": str(libfaketime()),
            "FAKETIME_TIMESTAMP_FILE": str(self.file),
            "FAKETIME_NO_CACHE": "1",
            "DONT_FAKE_MONOTONIC": "1",
            "TZ": "UTC",
        }

    def set(self, ms: int) -> None:
        tmp = self.file.with_suffix(".tmp")
        tmp.write_text(_stamp(ms) + "\n")
        os.replace(tmp, self.file)
        self.now_ms = ms

    def advance(self, ms: int) -> None:
        self.set(self.now_ms + ms)


def offset_env(seconds: float) -> dict[str, str]:
    """Environment for a process whose wall clock runs `seconds` ahead (negative: behind)."""
    return {
        "LD_PRELOAD": str(libfaketime()),
        "FAKETIME": f"{seconds:+f}s",
        "DONT_FAKE_MONOTONIC": "1",
        "TZ": "UTC",
    }
