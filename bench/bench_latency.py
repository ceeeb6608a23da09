#!/usr/bin/env python
"""The seeds' latency example: 100 sends through a proxy that adds a 70 ms round trip.

    python bench/bench_latency.py [--rtt-ms 70] [--count 100]

Prints three figures (sequential awaited sends, concurrent sends, concurrent with 10 in flight), then
the seeds' claims about them, each with whether this run holds it, and writes bench/results/latency.json.
The proxy is tests/latency_proxy.py on 127.0.0.1. tests/integration/test_latency.py checks the
behaviour behind the figures (script calls per send), not the times.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from sbredis.aio import ServiceBusClient, ServiceBusMessage  # noqa: E402
from sbredis.management import ServiceBusAdministrationClient  # noqa: E402
from tests.latency_proxy import LatencyProxy  # noqa: E402
from tests.redis_server import RedisServer  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "latency.json"


async def timed_sends(url: str, queue: str, n: int, concurrent: bool, limit: int = 1000) -> float:
    """Seconds for `n` sends after a warm-up send, awaited one by one or all at once."""
    async with ServiceBusClient.from_connection_string(url) as c:
        s = c.get_queue_sender(queue, max_pending_sends=limit)
        await s.send_messages(ServiceBusMessage("warm-up"))  # reads the entity once
        t = time.perf_counter()
        if concurrent:
            await asyncio.gather(*(s.send_messages(ServiceBusMessage(str(i))) for i in range(n)))
        else:
            for i in range(n):
                await s.send_messages(ServiceBusMessage(str(i)))
        return time.perf_counter() - t


def claims(
    rtt: float, n: int, limit: int, sequential: float, concurrent: float, limited: float
) -> list[dict[str, object]]:
    """The seeds' claims about the three figures, and whether this run holds each."""
    return [
        {"claim": f"sequential >= {n} round trips ({n * rtt:.2f} s)", "holds": sequential >= n * rtt},
        {"claim": f"{n} concurrent sends in well under a second (< 1 s)", "holds": concurrent < 1.0},
        {
            "claim": f"{limit} in flight: between {n // limit} and {n} round trips "
            f"({n // limit * rtt:.2f}-{n * rtt:.2f} s)",
            "holds": n // limit * rtt <= limited < n * rtt,
        },
        {"claim": "a limit of in-flight sends costs time", "holds": concurrent < limited},
    ]


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
    sequential, concurrent, limited = rows.values()
    judged = claims(args.rtt_ms / 1000, args.count, args.limit, sequential, concurrent, limited)
    print()
    for c in judged:
        print(f"  {c['claim']:<60} {'holds' if c['holds'] else 'MISSED'}")
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(
        json.dumps(
            {
                "rtt_ms": args.rtt_ms,
                "seconds": rows,
                "claims": judged,
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
