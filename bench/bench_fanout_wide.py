#!/usr/bin/env python
"""Server time of one publish to a topic with hundreds to thousands of subscriptions.

    python bench/bench_fanout_wide.py [--subs 100,500,1000,2000] [--rounds 7]

A publish is one script call per topic partition carrying 10 keys per subscription, and it reads
every subscription's settings, so its cost grows with the number of subscriptions whatever the
batch (docs/topics.md, Fan-out cost); a topic has at most 2,000 subscriptions. Per subscription
count (one topic partition, $Default rules, 100-byte bodies): the Redis-side EVALSHA time (INFO
commandstats: wall time, which includes time the server lost the CPU) and the server's main-thread
CPU time (INFO cpu, which moves far less with the machine's load) of a one-message publish and of a
ten-message one, medians of --rounds with their spread, and the same per copy stored. Results go
to bench/results/fanout_wide.json. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for path in (ROOT, ROOT / "bench"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

import redis  # noqa: E402
from bench_core import machine_info  # noqa: E402

from sbredis import ServiceBusClient, ServiceBusMessage  # noqa: E402
from sbredis.management import ServiceBusAdministrationClient  # noqa: E402
from tests.redis_server import RedisServer  # noqa: E402


def cpu_s(raw: redis.Redis) -> float:
    i = raw.info("cpu")
    return float(i["used_cpu_user_main_thread"]) + float(i["used_cpu_sys_main_thread"])


def server_us(raw: redis.Redis, send: Any) -> tuple[int, int]:
    """(EVALSHA wall µs, server main-thread CPU µs) of one send."""
    raw.config_resetstat()
    before = cpu_s(raw)
    send()
    cpu = cpu_s(raw) - before
    return sum(int(v["usec"]) for k, v in raw.info("commandstats").items() if "eval" in k), round(cpu * 1e6)


def spread(xs: list[int]) -> float:
    """(max - min) / median."""
    m = statistics.median(xs)
    return round((max(xs) - min(xs)) / m, 2) if m else 0.0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--subs", default="100,500,1000,2000")
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    srv = RedisServer().start()
    raw = redis.Redis.from_url(srv.url)
    info = machine_info(raw)
    rows = []
    try:
        admin = ServiceBusAdministrationClient.from_connection_string(srv.url)
        client = ServiceBusClient.from_connection_string(srv.url)
        for n in (int(x) for x in args.subs.split(",")):
            topic = f"wide-{n}"
            admin.create_topic(topic)
            for i in range(n):
                admin.create_subscription(topic, f"s{i}")
            with client.get_topic_sender(topic) as sender:
                sender.send_messages(ServiceBusMessage("warm"))
                one = [
                    server_us(raw, lambda: sender.send_messages(ServiceBusMessage("x" * 100)))
                    for _ in range(args.rounds)
                ]
                ten = [
                    server_us(raw, lambda: sender.send_messages([ServiceBusMessage("x" * 100) for _ in range(10)]))
                    for _ in range(args.rounds)
                ]
            admin.delete_topic(topic)
            one_wall, one_cpu = [w for w, _ in one], [c for _, c in one]
            ten_wall, ten_cpu = [w for w, _ in ten], [c for _, c in ten]
            row = {
                "subscriptions": n,
                "publish_1_us": statistics.median(one_wall),
                "publish_1_us_per_copy": round(statistics.median(one_wall) / n, 2),
                "publish_1_spread": spread(one_wall),
                "publish_1_cpu_us": statistics.median(one_cpu),
                "publish_1_cpu_spread": spread(one_cpu),
                "publish_10_us": statistics.median(ten_wall),
                "publish_10_us_per_copy": round(statistics.median(ten_wall) / (10 * n), 2),
                "publish_10_spread": spread(ten_wall),
                "publish_10_cpu_us": statistics.median(ten_cpu),
                "publish_10_cpu_spread": spread(ten_cpu),
            }
            rows.append(row)
            print(row, flush=True)
    finally:
        srv.stop()
    out = ROOT / "bench" / "results" / "fanout_wide.json"
    out.write_text(json.dumps({"machine": info, "rounds": args.rounds, "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
