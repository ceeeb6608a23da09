#!/usr/bin/env python
"""Paired namespaces: what failover and the syphon cost (docs/paired-namespaces.md).

    python bench/bench_paired.py [--messages 20000] [--quick]

Starts a private primary and secondary redis-server (tests/redis_server.py), kills the primary,
and measures with the sync client:
  * backlog send     messages/s into a backlog queue (batches of 100, 200-byte bodies, 8 sessions)
  * syphon           messages/s the syphon moves to the primary once it is back (one syphon)
  * idle syphon      script calls/s an idle syphon makes on the secondary and on the primary
                     (10 backlog queues, the default 1 s poll)
Results go to bench/results/paired.json. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for path in (ROOT, ROOT / "bench"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

import redis  # noqa: E402
from bench_core import machine_info  # noqa: E402

from sbredis import SendAvailabilityPairedNamespaceOptions, ServiceBusClient, ServiceBusMessage  # noqa: E402
from sbredis.management import ServiceBusAdministrationClient  # noqa: E402
from tests.redis_server import RedisServer  # noqa: E402


def script_calls(url: str) -> int:
    stats = redis.Redis.from_url(url).info("commandstats")
    return sum(int(v["calls"]) for k, v in stats.items() if k in ("cmdstat_evalsha", "cmdstat_eval"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--messages", type=int, default=20000)
    ap.add_argument("--quick", action="store_true", help="2,000 messages, 3 s idle window")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "paired.json"))
    args = ap.parse_args()
    n = 2000 if args.quick else args.messages
    idle_window = 3.0 if args.quick else 10.0
    primary, secondary = RedisServer("--appendonly", "yes").start(), RedisServer().start()
    try:
        with ServiceBusAdministrationClient(primary.url) as a:
            a.create_queue("orders")
        opts = SendAvailabilityPairedNamespaceOptions(
            secondary=secondary.url, failover_interval=0, ping_primary_interval=3600
        )
        c = ServiceBusClient(primary.url, paired_namespace=opts, retry_total=0)
        with c, c.get_queue_sender("orders") as s:
            s.send_messages(ServiceBusMessage("warm"))
            primary.kill()
            start = time.perf_counter()
            for i in range(0, n, 100):
                s.send_messages([ServiceBusMessage(b"x" * 200, session_id=f"s{j % 8}") for j in range(i, i + 100)])
            backlog_rate = n / (time.perf_counter() - start)
        primary.start()
        opts = SendAvailabilityPairedNamespaceOptions(secondary=secondary.url, enable_syphon=True)
        c = ServiceBusClient(primary.url, paired_namespace=opts)
        with c, ServiceBusAdministrationClient(primary.url) as a:
            start = time.perf_counter()
            c.start_syphon()
            while a.get_queue_runtime_properties("orders").active_message_count < n + 1:
                time.sleep(0.02)
            syphon_rate = n / (time.perf_counter() - start)
            time.sleep(2)
            before = script_calls(secondary.url), script_calls(primary.url)
            time.sleep(idle_window)
            after = script_calls(secondary.url), script_calls(primary.url)
            idle = [(x - b) / idle_window for x, b in zip(after, before, strict=True)]
            assert c.paired_namespace is not None
            metrics = c.paired_namespace.metrics.as_dict()
            info = machine_info(redis.Redis.from_url(primary.url))
    finally:
        primary.stop()
        secondary.stop()
    result = {
        "messages": n,
        "backlog_send_msgs_per_s": round(backlog_rate),
        # the result keys keep the spelling of the stored results (bench/results/paired.json)
        "siphon_msgs_per_s": round(syphon_rate),
        "idle_siphon_calls_per_s": {"secondary": idle[0], "primary": idle[1]},
        "siphon_metrics": metrics,
        "settings": {"body_bytes": 200, "batch": 100, "backlog_queue_count": 10, "poll_interval_s": 1.0},
        "machine": info,
    }
    print(f"backlog send: {result['backlog_send_msgs_per_s']} msgs/s (batches of 100)")
    print(f"syphon:       {result['siphon_msgs_per_s']} msgs/s")
    print(f"idle syphon:  {idle[0]:.1f} script calls/s on the secondary, {idle[1]:.1f} on the primary")
    if not args.quick:
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
