"""The per-module coverage floors of ``tests/coverage_floors.txt``, checked at the end of a whole-suite run.

pytest-cov measures ``sbredis/`` on every run (``addopts`` in pyproject.toml) and prints its report;
this plugin then reads the combined data and fails the run if a module's line coverage is under its
floor: 90 % unless ``tests/coverage_floors.txt`` names a lower ratchet for it.

Under pytest-xdist the check runs in the controller only, after pytest-cov has combined the
workers' data.

A floor only means something for the whole suite, so the check runs when pytest was given no test
arguments (or only the ``tests`` folder) and selected everything it collected: running one file, a
``-k``/``-m`` expression or ``--lf`` prints the report but never fails on a floor.
``SBREDIS_COVERAGE_FLOORS=1`` forces the check (a run that adds to data of earlier runs with
``--cov-append``), ``SBREDIS_COVERAGE_FLOORS=0`` turns it off.
"""

from __future__ import annotations

import math
import os
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
FLOORS_FILE = ROOT / "tests" / "coverage_floors.txt"
PACKAGE = ROOT / "sbredis"
TARGET = 90.0
MARGIN = 2  # points a floor stays under the measured figure (run-to-run variation; see the floors file)
ENV = "SBREDIS_COVERAGE_FLOORS"


def read_floors(path: Path = FLOORS_FILE) -> dict[str, float]:
    """``module percent`` per line (module relative to the repository root); ``#`` starts a comment."""
    floors: dict[str, float] = {}
    for number, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        try:
            module, figure = line.split()
            floors[module] = float(figure)
        except ValueError:
            raise pytest.UsageError(f"{path}:{number}: expected 'sbredis/<module>.py <percent>', got {raw!r}") from None
    return floors


def whole_suite(config: pytest.Config, deselected: int) -> tuple[bool, str]:
    """Whether this run is the whole suite, and if not, why not (for the note in the summary)."""
    forced = os.environ.get(ENV, "")
    if forced == "0":
        return False, f"{ENV}=0"
    if forced == "1":
        return True, ""
    tests_root = (ROOT / "tests").resolve()
    for arg in config.args:
        if "::" in arg or Path(arg).resolve() not in (tests_root, ROOT):
            return False, f"a subset of the suite ({arg})"
    # under xdist the workers deselect, so the controller sees the options, not pytest_deselected
    if config.option.keyword or config.option.markexpr or deselected or getattr(config.option, "deselect", None):
        return False, "tests deselected (-k, -m or --deselect)"
    if getattr(config.option, "lf", False) or getattr(config.option, "failedfirst", False):
        return False, "--lf/--ff"
    if getattr(config.option, "exitfirst", False) or getattr(config.option, "maxfail", 0):
        return False, "-x/--maxfail may stop the run early"
    return True, ""


def module_coverage(cov: Any) -> dict[str, tuple[int, int]]:
    """(statements, missing) per module of sbredis/, counting modules no test imported."""
    result: dict[str, tuple[int, int]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        _, statements, _, missing, _ = cov.analysis2(str(path))
        result[path.relative_to(ROOT).as_posix()] = (len(statements), len(missing))
    return result


def percent(statements: int, missing: int) -> float:
    return 100.0 if statements == 0 else 100.0 * (statements - missing) / statements


class FloorsPlugin:
    def __init__(self) -> None:
        self.deselected = 0
        self.lines: list[tuple[str, dict[str, bool]]] = []

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        self.deselected += len(items)

    # after pytest-cov's own wrapper has stopped coverage and combined the subprocesses' data
    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, object, object]:
        result = yield
        if hasattr(session.config, "workerinput"):
            return result  # an xdist worker: its data is a part; the controller checks the combined data
        cov_plugin = session.config.pluginmanager.getplugin("_cov")
        controller = getattr(cov_plugin, "cov_controller", None)
        if controller is None or session.config.option.collectonly:
            return result
        check, why = whole_suite(session.config, self.deselected)
        if not check:
            self.lines.append((f"coverage floors not checked: {why}", {"yellow": True}))
            return result
        floors = read_floors()
        under, above = [], []
        for module, (statements, missing) in module_coverage(controller.cov).items():
            got = percent(statements, missing)
            floor = floors.pop(module, TARGET)
            if got + 1e-9 < floor:
                under.append(f"  {module}: {got:.1f} % < floor {floor:g} %")
            elif floor < TARGET and min(math.floor(got) - MARGIN, TARGET) > floor:
                raised = min(math.floor(got) - MARGIN, TARGET)
                above.append(f"  {module}: {got:.1f} % (floor {floor:g} %: raise it to {raised:g})")
        for module in floors:
            self.lines.append((f"{FLOORS_FILE.name}: {module} is not a module of sbredis/ any more", {"yellow": True}))
        if above:
            self.lines.append((f"coverage rose above these floors; raise them in {FLOORS_FILE.name}:", {}))
            self.lines.extend((line, {}) for line in above)
        if under:
            self.lines.append((f"FAIL coverage under the floor ({FLOORS_FILE.name}):", {"red": True, "bold": True}))
            self.lines.extend((line, {"red": True}) for line in under)
            session.testsfailed += 1
        else:
            self.lines.append((f"coverage floors reached (target {TARGET:g} %, {FLOORS_FILE.name})", {"green": True}))
        return result

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        for line, markup in self.lines:
            terminalreporter.write_line(line, **markup)


def pytest_configure(config: pytest.Config) -> None:
    if config.pluginmanager.hasplugin("_cov"):
        config.pluginmanager.register(FloorsPlugin(), "sbredis_coverage_floors")
