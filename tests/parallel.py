"""How the suite runs across pytest-xdist workers (``-n auto`` in ``addopts``; ``-n0`` runs it in one
process).

Workers: ``-n auto`` starts one more worker than the machine has CPUs, since one worker spends the
run waiting on the azure-servicebus live run (tests/compat/test_live.py), whose pytest processes do
the work. ``PYTEST_XDIST_AUTO_NUM_WORKERS`` sets the number instead.

Scheduling (``--dist load``, the default with ``-n``): xdist's LoadScopeScheduling with these
scopes, each run whole by one worker:

* tests/compat/test_live.py: one scope, sent first: its first test waits for the whole live run
  (the SDK's tests wait minutes on the clock), which should overlap everything else;
* tests/spark/: one scope, so that one worker starts a Spark session (a JVM) and not every worker;
* a file with module- or class-scoped fixtures (its own, or its conftest.py's that it uses): one
  scope per file, so that a fixture that starts servers or fills a namespace runs once, not once
  per worker that gets one of its tests;
* any other test: a scope of its own.

Workers take the scopes largest first (live, Spark, then the grouped files by test count), single
tests last, so that the long ones do not start at the end of the run. (xdist's ``--dist loadgroup``
is not used: on pytest 9.2 it ignores the group suffix of node ids.)
"""

from __future__ import annotations

import os
import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
LIVE = "tests/compat/test_live.py"
SPARK = "tests/spark/"
ENV = "PYTEST_XDIST_AUTO_NUM_WORKERS"

_WIDE_SCOPE = re.compile(r"""scope\s*=\s*["'](module|class|package)["']""")
_WIDE_FIXTURE = re.compile(
    r"""@pytest\.fixture\(\s*scope\s*=\s*["'](?:module|class|package)["'][^)]*\)\s*\n(?:@.*\n)*\s*def\s+(\w+)"""
)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    explicit = os.environ.get(ENV, "").strip()
    if explicit:
        try:
            return max(0, int(explicit))
        except ValueError:
            raise pytest.UsageError(f"{ENV} must be a whole number, got {explicit!r}") from None
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = os.cpu_count() or 1
    return cpus + 1


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    if config.getoption("dist") not in ("load", "loadscope"):
        return None  # an explicit other --dist mode (each, loadfile, worksteal...) is xdist's own
    return _scheduling_class()(config, log)


@cache
def _wide_fixtures(conftest: Path) -> frozenset[str]:
    """Names of the module-, class- or package-scoped fixtures a conftest.py defines."""
    try:
        return frozenset(_WIDE_FIXTURE.findall(conftest.read_text()))
    except OSError:
        return frozenset()


@cache
def grouped_by_file(path: str) -> bool:
    """Whether the test file (relative to the repository) runs as one scope: it declares module- or
    class-scoped fixtures, or uses one that a conftest.py above it declares."""
    file = ROOT / path
    try:
        text = file.read_text()
    except OSError:
        return False
    if _WIDE_SCOPE.search(text):
        return True
    folder = file.parent
    while folder == ROOT / "tests" or ROOT / "tests" in folder.parents:
        for name in _wide_fixtures(folder / "conftest.py"):
            if re.search(rf"\b{re.escape(name)}\b", text):
                return True
        folder = folder.parent
    return False


def scope_of(nodeid: str) -> str:
    path = nodeid.split("::", 1)[0]
    if path == LIVE:
        return LIVE
    if path.startswith(SPARK):
        return SPARK
    if grouped_by_file(path):
        return path
    return nodeid


def rank(scope: str, size: int) -> tuple[int, int]:
    """Sort key of a scope: live first, Spark next, grouped files by size, single tests last."""
    if scope == LIVE:
        return (0, 0)
    if scope == SPARK:
        return (1, 0)
    if "::" not in scope:
        return (2, -size)
    return (3, 0)


@cache
def _scheduling_class() -> type:
    from xdist.scheduler import LoadScopeScheduling

    class SuiteScheduling(LoadScopeScheduling):  # type: ignore[misc]
        _ordered = False

        def _split_scope(self, nodeid: str) -> str:
            return scope_of(nodeid)

        def _assign_work_unit(self, node: Any) -> None:
            # the work queue is complete by the first assignment: put the long scopes first
            if not self._ordered:
                self._ordered = True
                units = sorted(self.workqueue.items(), key=lambda unit: rank(unit[0], len(unit[1])))
                self.workqueue.clear()
                self.workqueue.update(units)
            super()._assign_work_unit(node)

    return SuiteScheduling
