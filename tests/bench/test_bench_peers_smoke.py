"""Smoke test of bench/bench_peers.py: its quick mode for the raw redis-py and sbredis rows only.

The peers (Celery, Dramatiq, RQ, saq, BullMQ) are optional and not run here; the script starts its
own redis-server, so this needs only what the test extra installs.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "bench_peers.py"


@pytest.mark.timeout(360)  # under a parallel run the quick bench can take minutes
def test_quick_raw_and_sbredis(tmp_path: Path) -> None:
    out = tmp_path / "peers.json"
    cmd = [sys.executable, str(SCRIPT), "--quick", "--only", "raw,sbredis", "--payloads", "256", "--out", str(out)]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "end to end" in proc.stdout

    doc = json.loads(out.read_text())
    assert doc["mode"] == "quick"
    assert doc["machine"]["cpu_count"] >= 1 and doc["versions"]["redis_server"]
    assert set(doc["systems"]) == {"raw", "sbredis"}
    for name, system in doc["systems"].items():
        assert "error" not in system, system.get("error")
        for row in ("batched_send", "async_concurrent_sends", "receive_complete"):
            comp = system["components"]["256"][row]
            assert comp["median"] > 0 and comp["cmds_per_msg"] > 0, (name, row, comp)
        e2e = system["e2e"]["256"]
        assert e2e["e2e_median"] > 0 and e2e["enqueue_median"] > 0, (name, e2e)
        assert 0 < e2e["p50_ms"] <= e2e["p99_ms"], (name, e2e)
        assert e2e["cmds_per_msg"] > 0 and e2e["cpu_us_per_msg"] > 0, (name, e2e)
    assert doc["ratios_sbredis_over"]["raw"]["256"] > 0
    by_target = {t["target"]: t for t in doc["targets"]}
    sb = doc["systems"]["sbredis"]
    # each target is judged from the figures the same document reports, and printed with its verdict
    p99 = by_target["sbredis e2e p99 <= 5 ms at 50 % load"]
    e2e = sb["e2e"]["256"]
    assert p99["payload"] == 256 and p99["measured"].startswith(f"p99 {e2e['p99_ms']:.2f} ms")
    assert p99["pass"] is (e2e["p99_ms"] <= 5)
    [sends] = [t for t in doc["targets"] if t["target"].startswith("async concurrent single sends >= ")]
    floor = int(re.search(r">= (\d+)k msgs/s", sends["target"]).group(1)) * 1000  # type: ignore[union-attr]
    assert sends["pass"] is (sb["components"]["256"]["async_concurrent_sends"]["median"] >= floor)
    celery = by_target["sbredis e2e >= 5x celery"]
    assert celery["pass"] is None and celery["measured"] == "not run"  # not run: reported, not judged
    verdict = {True: "PASS", False: "MISS", None: "n/a"}
    for t in (p99, sends, celery):
        row = next(line for line in proc.stdout.splitlines() if line.lstrip().startswith(t["target"]))
        assert row.rstrip().endswith(verdict[t["pass"]]), row
