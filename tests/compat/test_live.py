"""Microsoft's azure-servicebus 7.15.0 live tests, ported mechanically, each file run against its
own redis-server (tests/compat/live.py), and compared with the lists:

* live_slow.txt names the tests that wait on the clock for minutes: each runs in a process of its own;

* a test that fails by reading the SDK's internals does not apply (counted, not run again);
* not_applicable.txt names the rest that cannot apply, with the reason;
* live_known_gaps.txt names the tests that apply and do not pass yet. A failure not listed there
  fails this suite at once; a listed test that passes is reported (a warning naming the line to
  remove), since the SDK's tests wait on real time and a gap near its deadline may pass on a quiet
  machine.
"""

from __future__ import annotations

import collections
import json
import os
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

from tests.compat.live import BACKGROUND
from tests.compat.test_samples import listed

pytestmark = pytest.mark.compat

# The behaviour suites of the SDK (its unit tests of AMQP framing and its mocks are not among them).
FILES = [
    "test_queues.py",
    "test_sessions.py",
    "test_subscriptions.py",
    "test_topic.py",
    "test_list_sessions.py",
    "mgmt_tests/test_mgmt_queues.py",
    "mgmt_tests/test_mgmt_topics.py",
    "mgmt_tests/test_mgmt_subscriptions.py",
    "mgmt_tests/test_mgmt_rules.py",
    "async_tests/test_queues_async.py",
    "async_tests/test_sessions_async.py",
    "async_tests/test_subscriptions_async.py",
    "async_tests/test_topic_async.py",
    "async_tests/test_list_sessions_async.py",
    "mgmt_tests/async/test_mgmt_queues_async.py",
    "mgmt_tests/async/test_mgmt_topics_async.py",
    "mgmt_tests/async/test_mgmt_subscriptions_async.py",
    "mgmt_tests/async/test_mgmt_rules_async.py",
]
NOT_APPLICABLE = listed("not_applicable.txt")
KNOWN_GAPS = listed("live_known_gaps.txt")
SLOW = listed("live_slow.txt")
# The run starts as soon as the suite is collected (tests/compat/conftest.py) and shares the machine
# with the rest of the suite: few files at a time (the slow tests wait apart from these).
PARALLEL = int(os.environ.get("SBREDIS_COMPAT_PARALLEL", "3"))


def start_live_run() -> None:
    BACKGROUND.start(FILES, PARALLEL, SLOW)


@pytest.fixture(scope="module")
def live_results() -> Iterator[dict[str, dict[str, Any]]]:
    """Every file's results."""
    results, work = BACKGROUND.results(FILES, PARALLEL, SLOW)
    summary = _summary(results)
    (work / "summary.json").write_text(json.dumps(summary, indent=1))
    print("\nazure-servicebus live tests on sbredis:", json.dumps(summary["totals"]))
    yield results


def _key(relative: str, nodeid: str) -> str:
    return nodeid if nodeid.startswith(relative) else f"{relative}::{nodeid}"


def _summary(results: dict[str, dict[str, Any]]) -> dict[str, Any]:
    totals: collections.Counter[str] = collections.Counter()
    for relative, tests in results.items():
        for nodeid, r in tests.items():
            key = _key(relative, nodeid)
            if r["internals"]:
                totals["reads SDK internals"] += 1
            elif key in NOT_APPLICABLE:
                totals["not applicable"] += 1
            elif r["outcome"] == "skipped":
                totals["skipped by the SDK's own marks"] += 1
            else:
                totals["applies"] += 1
                totals["passed" if r["outcome"] == "passed" else "known gap"] += 1
    return {"totals": dict(totals)}


@pytest.mark.timeout(3600)  # the first test waits for the whole run (started at collection)
@pytest.mark.parametrize("relative", FILES)
def test_live_file(relative: str, live_results: dict[str, dict[str, Any]]) -> None:
    tests = live_results[relative]
    assert tests, f"{relative}: no test ran"
    failing = {
        _key(relative, nodeid): r["message"]
        for nodeid, r in tests.items()
        if r["outcome"] in ("failed", "error") and not r["internals"] and _key(relative, nodeid) not in NOT_APPLICABLE
    }
    unrun = [k for k in SLOW if k.split("::", 1)[0] == relative and k not in tests]
    assert not unrun, f"live_slow.txt names tests that did not run: {unrun}"
    mine = {k for k in KNOWN_GAPS if k.split("::", 1)[0] == relative}
    new = {k: v for k, v in failing.items() if k not in KNOWN_GAPS}
    fixed = sorted(mine - set(failing))
    assert not new, "new failures (fix them, or list them in live_known_gaps.txt):\n" + "\n".join(
        f"{k}: {v}" for k, v in sorted(new.items())
    )
    if fixed:
        warnings.warn("these pass now: remove them from live_known_gaps.txt:\n" + "\n".join(fixed), stacklevel=1)
