"""Every observability test leaves the instrumentation seam off (a sink left installed would trace
or count every later test of the session)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sbredis._core import instrument


@pytest.fixture(autouse=True)
def seam_left_off() -> Iterator[None]:
    yield
    leftover = instrument.installed()
    for sink in leftover:
        instrument.uninstall(sink)
    assert not leftover, f"a test left sinks installed: {leftover}"
