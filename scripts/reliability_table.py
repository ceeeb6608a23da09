"""The results table of docs/reliability.md, made from bench/results/reliability/*.full.json (the
reports the fault tests write with SBREDIS_BATTERY_SCALE=full). `python scripts/reliability_table.py`
rewrites the table between its markers; tests/reliability/test_docs_table.py checks it is current.
"""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "reliability.md"
START, END = "<!-- reliability-table -->", "<!-- /reliability-table -->"
COLUMNS = ("sent", "acknowledged", "completed", "lost", "duplicated", "dead_lettered", "kills")


def render() -> str:
    lines = [
        "| run | setup | " + " | ".join(c.replace("_", "-") for c in COLUMNS) + " | seed |",
        "| --- | --- | " + " | ".join("---:" for _ in COLUMNS) + " | ---: |",
    ]
    for path in sorted((ROOT / "bench" / "results" / "reliability").glob("*.full.json")):
        r = json.loads(path.read_text())
        setup = r.get("redis", "")
        if "wait_for_replicas" in r:
            setup += f", wait_for_replicas={r['wait_for_replicas']}"
        if "workers" in r:
            setup = f"{r['workers']} workers x {r['concurrency']}, prefetch {r['prefetch']}"
            setup += f", lock {r['lock_duration_s']} s"
        cells = [f"{r[c]:,}" if isinstance(r[c], int) else str(r[c]) for c in COLUMNS]
        lines.append(f"| `{path.name}` | {setup} | " + " | ".join(cells) + f" | {r['seed']} |")
    return "\n".join(lines)


def rewrite() -> None:
    text = DOC.read_text()
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    DOC.write_text(f"{head}{START}\n{render()}\n{END}{tail}")


if __name__ == "__main__":
    rewrite()
