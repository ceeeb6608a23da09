"""pytest plugin for the ported azure-servicebus tests (loaded in their run by tests/compat/live.py).

It supplies the fixtures Azure's test tooling would (``test_proxy``: nothing to record here) and
writes each test's outcome to $SBREDIS_COMPAT_RESULTS as JSON, marking the failures that came from
reading the SDK's internals (a ReadsSdkInternalsError from tests/compat/sdk_internals.py, or a missing
private attribute ``_name`` on an sbredis object): those tests do not apply to sbredis.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.compat.sdk_internals import ReadsSdkInternalsError

RESULTS: dict[str, dict[str, Any]] = {}
_PRIVATE_ATTRIBUTE = re.compile(r"has no attribute '_[a-z]\w*'")


@pytest.fixture(scope="session")
def test_proxy() -> None:
    return None


def _reads_internals(excinfo: Any) -> bool:
    err: BaseException | None = excinfo.value
    while err is not None:
        if isinstance(err, ReadsSdkInternalsError):
            return True
        if isinstance(err, AttributeError) and _PRIVATE_ATTRIBUTE.search(str(err)):
            return True
        err = err.__cause__ or err.__context__
    return False


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    entry = RESULTS.setdefault(item.nodeid, {"outcome": "passed", "internals": False, "message": ""})
    if report.failed:
        entry["outcome"] = "failed" if report.when == "call" else "error"
        entry["internals"] = entry["internals"] or (call.excinfo is not None and _reads_internals(call.excinfo))
        if call.excinfo is not None and not entry["message"]:
            text = str(call.excinfo.value)
            entry["message"] = f"{call.excinfo.typename}: {text.splitlines()[0][:300] if text else ''}"
    elif report.skipped and entry["outcome"] == "passed":
        entry["outcome"] = "skipped"
        entry["message"] = str(report.longrepr)[-300:]


def pytest_collectreport(report: pytest.CollectReport) -> None:
    if report.failed:
        RESULTS[report.nodeid or "<collection>"] = {
            "outcome": "error",
            "internals": False,
            "message": "collection: " + str(report.longrepr).strip().splitlines()[-1][:300],
        }


def pytest_sessionfinish(session: pytest.Session) -> None:
    path = os.environ.get("SBREDIS_COMPAT_RESULTS")
    if path:
        with open(path, "w") as f:
            json.dump(RESULTS, f, indent=1, sort_keys=True)
