#!/usr/bin/env python
"""The seeds' latency example: 100 sends through a proxy that adds a 70 ms round trip.

    python bench/bench_latency.py [--rtt-ms 70] [--count 100]

Prints three figures (sequential awaited sends, concurrent sends, concurrent with 10 in flight) and
writes bench/results/latency.json. The proxy is tests/latency_proxy.py on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from sbredis.management import ServiceBusAdministrationClient  # noqa: E402
from tests.integration.test_latency import timed_sends  # noqa: E402
from tests.latency_proxy import LatencyProxy  # noqa: E402
from tests.redis_server import RedisServer  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "latency.json"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rtt-ms", type=float, default=70.0)
    ap.add_argument("--count", type=int, default=100)
    ap.add_argument("--limit", type=int, default=10)
    args = ap.parse_args()
    srv = RedisServer().start()
    try:
        ServiceBusAdministrationClient.from_connection_string(srv.url).create_queue("latency")
        with LatencyProxy(srv.port, args.rtt_ms / 2000) as proxy:
            url, n = proxy.url(), args.count
            rows = {
                f"{n} sequential awaited sends": asyncio.run(timed_sends(url, "latency", n, concurrent=False)),
                f"{n} concurrent sends": asyncio.run(timed_sends(url, "latency", n, concurrent=True)),
                f"{n} concurrent, {args.limit} in flight": asyncio.run(
                    timed_sends(url, "latency", n, concurrent=True, limit=args.limit)
                ),
            }
    finally:
        srv.stop()
    print(f"round trip {args.rtt_ms:.0f} ms (TCP proxy on 127.0.0.1)")
    for name, seconds in rows.items():
        print(f"  {name:<34} {seconds:6.2f} s")
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(
        json.dumps(
            {
                "rtt_ms": args.rtt_ms,
                "seconds": rows,
                "python": platform.python_version(),
                "machine": platform.machine(),
            },
            indent=2,
        )
        + "\n"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
