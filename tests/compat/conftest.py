"""The live run of azure-servicebus's tests spends most of its time waiting on the clock (messages
scheduled minutes ahead, idle links): it starts in the background as early as it can, so that the
waiting overlaps the rest of the suite.

In one process (``-n0``) that is as soon as the suite is collected. Under xdist every worker
collects the whole suite, but only the worker that runs tests/compat/test_live.py may start the run:
there the module fixture ``live_results`` starts it, and tests/parallel.py sends that file first.
"""

from __future__ import annotations

import pytest


def pytest_collection_finish(session: pytest.Session) -> None:
    if hasattr(session.config, "workerinput") or session.config.getoption("dist", "no") != "no":
        return  # an xdist worker or controller
    if any(item.nodeid.startswith("tests/compat/test_live.py::test_live_file") for item in session.items):
        from tests.compat.test_live import start_live_run

        start_live_run()


def pytest_sessionfinish(session: pytest.Session) -> None:
    from tests.compat.live import BACKGROUND

    BACKGROUND.stop()
