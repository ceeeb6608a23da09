#!/usr/bin/env python
"""How long the dashboard's overview takes with many partitioned entities.

    python bench/bench_dashboard.py [--url redis://host:port/db] [--entities 1000] [--partitions 16] [--rounds 7]

Creates N queues (a tenth of them topics with two subscriptions, so every kind is counted) of P
partitions each on a fresh redis-server (or --url, whose database it fills: use a scratch one),
then times, median of --rounds:

  * read         sbredis.dashboard.counts.Reader.read: the registry and every partition's counts
                 (dashboard_counts.lua: one call per entity on a standalone server, per partition on a cluster;
                 one pipeline per node)
  * page         GET / from the dashboard served by uvicorn (read + rates + HTML), what a browser
                 waits for before it can draw the page
  * json         GET /api/overview (what the charts poll every two seconds)

The target: the overview renders in under 300 ms with 1,000 entities of 16 partitions.
Results: bench/results/dashboard.json, with the machine's load average (1, 5, 15 min) before the
timed rounds and after them: the machine may be shared, and a loaded one reads slower.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def populate(url: str, entities: int, partitions: int) -> int:
    from sbredis import ServiceBusClient, ServiceBusMessage
    from sbredis.management import ServiceBusAdministrationClient

    made = 0
    with (
        ServiceBusAdministrationClient.from_connection_string(url) as admin,
        ServiceBusClient.from_connection_string(url) as client,
    ):
        topics = entities // 10
        for i in range(entities - topics * 3):
            name = f"bench-q{i:05d}"
            admin.create_queue(name, enable_partitioning=True, partition_count=partitions)
            made += 1
            if i % 50 == 0:
                with client.get_queue_sender(name) as s:
                    s.send_messages([ServiceBusMessage(f"m{j}") for j in range(20)])
        for i in range(topics):
            name = f"bench-t{i:05d}"
            admin.create_topic(name, enable_partitioning=True, partition_count=partitions)
            for sub in ("a", "b"):
                admin.create_subscription(name, sub)
            made += 3
    return made


def machine(url: str) -> dict[str, Any]:
    """Where and with what the figures were taken (scripts/bench_page.py lists it on docs/benchmarks.md)."""
    import subprocess
    from datetime import UTC, datetime

    import redis

    import sbredis

    info = redis.Redis.from_url(url).info("server")

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True).stdout.strip()

    return {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpu_count": os.cpu_count(),
        "redis_server_version": info.get("redis_version"),
        "redis_py_version": redis.__version__,
        "sbredis_version": sbredis.__version__,
        "git_commit": git("rev-parse", "HEAD"),
        "git_dirty": bool(git("status", "--porcelain")),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def timed(fn: Any, rounds: int) -> list[float]:
    out = []
    for _ in range(rounds):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1000)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url")
    ap.add_argument("--entities", type=int, default=1000)
    ap.add_argument("--partitions", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "dashboard.json"))
    args = ap.parse_args()

    import http.client

    from sbredis._sync._transport import Transport
    from sbredis.dashboard.app import Settings
    from sbredis.dashboard.counts import Reader
    from sbredis.dashboard.server import start
    from tests.redis_server import RedisServer

    server = None
    url = args.url
    if url is None:
        server = RedisServer().start()
        url = server.url
    url_used = url
    try:
        t = time.perf_counter()
        made = populate(url, args.entities, args.partitions)
        setup = time.perf_counter() - t
        load_before = os.getloadavg()
        transport = Transport(url)
        reader = Reader(transport)
        reader.read()  # builds the calls once; later reads reuse them while the registry is unchanged
        read = timed(reader.read, args.rounds)
        transport.close()
        running = start(Settings.make(url))
        conn = http.client.HTTPConnection("127.0.0.1", running.port, timeout=60)

        def get(path: str) -> bytes:
            conn.request("GET", path)
            r = conn.getresponse()
            body = r.read()
            assert r.status == 200, r.status
            return body

        try:
            get("/")
            page = timed(lambda: get("/"), args.rounds)
            api = timed(lambda: get("/api/overview"), args.rounds)
            html_bytes = len(get("/"))
        finally:
            conn.close()
            running.stop()
        where = {**machine(url_used), "load_average_before": load_before, "load_average_after": os.getloadavg()}
    finally:
        if server is not None:
            server.stop()
    rows = [("read", read), ("page", page), ("json", api)]
    print(f"{made} entities x {args.partitions} partitions (set up in {setup:.1f} s); ms, {args.rounds} rounds")
    print(f"{'what':<6} {'median':>8} {'min':>8} {'max':>8}")
    for name, values in rows:
        print(f"{name:<6} {statistics.median(values):8.1f} {min(values):8.1f} {max(values):8.1f}")
    print(f"overview page: {html_bytes / 1024:.0f} KiB of HTML")
    before, after = where["load_average_before"], where["load_average_after"]
    print(f"load average (1, 5, 15 min): {before} before the rounds, {after} after")
    result = {
        "entities": made,
        "partitions": args.partitions,
        "rounds": args.rounds,
        "html_bytes": html_bytes,
        "ms": {name: {"median": statistics.median(v), "min": min(v), "max": max(v)} for name, v in rows},
        "machine": where,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
