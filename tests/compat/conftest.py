"""The live run of azure-servicebus's tests spends most of its time waiting on the clock (messages
scheduled minutes ahead, idle links): it starts as soon as the suite is collected, in the
background, so that the waiting overlaps the rest of the suite."""

from __future__ import annotations

import pytest


def pytest_collection_finish(session: pytest.Session) -> None:
    if any(item.nodeid.startswith("tests/compat/test_live.py::test_live_file") for item in session.items):
        from tests.compat.test_live import start_live_run

        start_live_run()


def pytest_sessionfinish(session: pytest.Session) -> None:
    from tests.compat.live import BACKGROUND

    BACKGROUND.stop()
