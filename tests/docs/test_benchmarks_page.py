"""docs/benchmarks.md is what scripts/bench_page.py makes of bench/results/*.json, so the page's
figures cannot drift from the measured ones."""

from __future__ import annotations

import json
import runpy
from pathlib import Path
from typing import Any

from tests.docs.samples import ROOT

bench_page: dict[str, Any] = runpy.run_path(str(ROOT / "scripts" / "bench_page.py"))


def test_page_is_generated_from_the_results() -> None:
    page = (ROOT / "docs" / "benchmarks.md").read_text()
    assert page == bench_page["render"](), "docs/benchmarks.md is stale: run python scripts/bench_page.py"


def test_every_result_file_is_on_the_page() -> None:
    page = (ROOT / "docs" / "benchmarks.md").read_text()
    for path in (ROOT / "bench" / "results").glob("*.json"):
        assert f"`{path.name}`" in page, path.name


def test_core_figures_are_the_json_figures() -> None:
    core = json.loads((ROOT / "bench" / "results" / "core.json").read_text())
    page = (ROOT / "docs" / "benchmarks.md").read_text()
    send = core["rows"][0]
    row = next(line for line in page.splitlines() if line.startswith(f"| {send['operation']} |"))
    assert f"| {send['sbredis'] / 1000:.1f}k |" in row
    assert f"| {send['ratio']:.2f}x |" in row
    assert core["machine"]["redis_server_version"] in page


def test_a_new_result_file_gets_a_section(tmp_path: Path) -> None:
    for path in (ROOT / "bench" / "results").glob("*.json"):
        (tmp_path / path.name).write_text(path.read_text())
    new = {"machine": {"python": "3.11.7", "cpu_count": 2}, "rate": {"median": 1234.5678}, "note": "a | b"}
    (tmp_path / "zz_new.json").write_text(json.dumps(new))
    page = bench_page["render"](tmp_path)
    assert "## `zz_new.json`" in page
    assert "| `rate.median` | 1235 |" in page
    assert "| `note` | a \\| b |" in page
