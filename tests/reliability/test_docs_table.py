"""docs/reliability.md's results table is what scripts/reliability_table.py makes of the full-size
reports in bench/results/reliability/, so the page cannot drift from the measured runs."""

from __future__ import annotations

import runpy
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
table: dict[str, Any] = runpy.run_path(str(ROOT / "scripts" / "reliability_table.py"))


def test_results_table_is_generated_from_the_reports() -> None:
    doc = (ROOT / "docs" / "reliability.md").read_text()
    current = doc.split(table["START"], 1)[1].split(table["END"], 1)[0].strip()
    assert current == table["render"](), "docs/reliability.md is stale: run python scripts/reliability_table.py"


def test_every_full_report_is_in_the_table() -> None:
    doc = (ROOT / "docs" / "reliability.md").read_text()
    for path in (ROOT / "bench" / "results" / "reliability").glob("*.full.json"):
        assert f"`{path.name}`" in doc, path.name
