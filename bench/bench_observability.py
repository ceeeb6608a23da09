#!/usr/bin/env python
"""What observability costs the client: CPU per message with nothing enabled, with Prometheus
client metrics, and with OpenTelemetry tracing (the SDK with a BatchSpanProcessor).

    python bench/bench_observability.py [--url redis://host:port/db] [--rounds 3] [--base PATH]

Each mode runs in a fresh process (instrumentation is process-wide), rounds alternate between
modes, and the median of the rounds is reported. A mode's loop: N single send + receive +
complete round trips, then batches of 100 (send a list, receive them, complete_messages), 1 KiB
bodies; measured in client CPU time (time.process_time), which noise on a shared machine moves
less than wall time. ``--base PATH`` adds a mode "base": the same loop run on another checkout of
sbredis (e.g. ``git archive <commit> | tar -x -C /tmp/base``, one without the seam).
The no-op seam's own cost per operation is timed with timeit. Results go to
bench/results/observability.json.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import subprocess
import sys
import timeit
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "observability.json"
SINGLE, BATCHES, BATCH = 3000, 60, 100

LOOP = r"""
import json, os, sys, time
repo, mode, url, single, batches, batch = sys.argv[1], sys.argv[2], sys.argv[3], *map(int, sys.argv[4:7])
sys.path.insert(0, repo)
from sbredis import ServiceBusClient, ServiceBusMessage
from sbredis.management import ServiceBusAdministrationClient
if mode == "prometheus":
    from prometheus_client import CollectorRegistry
    from sbredis.observability import prometheus
    prometheus.enable(CollectorRegistry())
elif mode == "otel":
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from sbredis.observability import otel
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(InMemorySpanExporter()))
    otel.enable(provider)
q = f"bench-obs-{os.getpid()}"
body = os.urandom(1024)
out = {}
with ServiceBusAdministrationClient.from_connection_string(url) as admin:
    admin.create_queue(q)
    try:
        with ServiceBusClient.from_connection_string(url) as c:
            s, r = c.get_queue_sender(q), c.get_queue_receiver(q, max_wait_time=5)
            for label, n, size in (("single", single, 1), ("batch", batches, batch)):
                cpu0 = time.process_time()
                for _ in range(n):
                    s.send_messages([ServiceBusMessage(body) for _ in range(size)])
                    got = []
                    while len(got) < size:
                        got += r.receive_messages(size - len(got))
                    if size == 1:
                        r.complete_message(got[0])
                    else:
                        r.complete_messages(got)
                out[label] = (time.process_time() - cpu0) / (n * size) * 1e6
    finally:
        admin.delete_queue(q)
print(json.dumps(out))
"""


def noop_seam_ns() -> float:
    """The disabled seam per operation (``with instrument.operation(...) as op: op.done(...)``)."""
    sys.path.insert(0, str(ROOT))
    from sbredis._core import instrument

    assert not instrument.enabled
    messages = [object()]

    def op() -> None:
        with instrument.operation("send", "q", messages) as o:
            o.done(None)

    n = 1_000_000
    base = min(timeit.repeat(lambda: None, number=n, repeat=5))
    return (min(timeit.repeat(op, number=n, repeat=5)) - base) / n * 1e9


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", help="Redis URL (default: start a private redis-server)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--base", type=Path, help="another sbredis checkout to run as mode 'base'")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from tests.redis_server import RedisServer

    server = None if args.url else RedisServer().start()
    url = args.url or server.url  # type: ignore[union-attr]
    modes = [("base", args.base)] if args.base else []
    modes += [("off", ROOT), ("prometheus", ROOT), ("otel", ROOT)]
    runs: dict[str, list[dict[str, float]]] = {m: [] for m, _ in modes}
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    try:
        for rnd in range(args.rounds):
            for mode, repo in modes:
                cmd = [sys.executable, "-c", LOOP, str(repo), "otel" if mode == "otel" else mode, url]
                cmd += [str(SINGLE), str(BATCHES), str(BATCH)]
                done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
                runs[mode].append(json.loads(done.stdout))
                print(f"round {rnd + 1} {mode:<10} {runs[mode][-1]}", flush=True)
    finally:
        if server is not None:
            server.stop()
    rows = []
    for mode, _ in modes:
        single = statistics.median(r["single"] for r in runs[mode])
        batch = statistics.median(r["batch"] for r in runs[mode])
        rows.append({"mode": mode, "single_cpu_us_per_msg": round(single, 1), "batch_cpu_us_per_msg": round(batch, 2)})
    seam = noop_seam_ns()
    print(f"\n{'mode':<12}| single (us CPU/msg) | batch of {BATCH} (us CPU/msg)")
    for row in rows:
        print(f"{row['mode']:<12}| {row['single_cpu_us_per_msg']:>19} | {row['batch_cpu_us_per_msg']:>24}")
    print(f"disabled seam: {seam:.0f} ns per operation (timeit)")
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout.strip()
    result: dict[str, Any] = {
        "machine": {
            "platform": platform.platform(),
            "python": platform.python_version(),
            "cpu_count": os.cpu_count(),
            "git_commit": commit,
            "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        },
        "settings": {"single": SINGLE, "batches": BATCHES, "batch": BATCH, "rounds": args.rounds, "body_bytes": 1024},
        "rows": rows,
        "noop_seam_ns_per_operation": round(seam),
        "runs": runs,
    }
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
