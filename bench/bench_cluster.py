#!/usr/bin/env python
"""sbredis on one redis-server vs a local 3-primary Redis Cluster, same machine, same run.

    python bench/bench_cluster.py [--messages 20000] [--rounds 3]

Rows: batched send (100 x 1 KiB per call), receive + complete (100 per call), single send latency
(p50, the per-call overhead of routing). Queues have 16 partitions in both setups. Figures are
medians of --rounds rounds; standalone and cluster rounds alternate. Writes bench/results/cluster.json.
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

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from sbredis import ServiceBusClient, ServiceBusMessage  # noqa: E402
from sbredis.management import ServiceBusAdministrationClient  # noqa: E402
from tests.redis_cluster import RedisCluster  # noqa: E402
from tests.redis_server import RedisServer, server_binary  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "cluster.json"
BODY = os.urandom(1024)


def one_round(url: str, n: int, name: str) -> dict[str, float]:
    with ServiceBusAdministrationClient.from_connection_string(url) as admin:
        admin.create_queue(name, enable_partitioning=True, partition_count=16, max_size_in_megabytes=5120)
    out: dict[str, float] = {}
    with ServiceBusClient.from_connection_string(url) as c:
        s = c.get_queue_sender(name)
        batch = [ServiceBusMessage(BODY) for _ in range(100)]
        t = time.perf_counter()
        for _ in range(n // 100):
            s.send_messages(batch)
        out["send_msgs_s"] = n / (time.perf_counter() - t)
        with c.get_queue_receiver(name) as r:
            t = time.perf_counter()
            got = 0
            while got < n:
                msgs = r.receive_messages(100, max_wait_time=1)
                r.complete_messages(msgs)
                got += len(msgs)
            out["recv_complete_msgs_s"] = n / (time.perf_counter() - t)
        lat = []
        m = ServiceBusMessage(BODY)
        for _ in range(300):
            t = time.perf_counter()
            s.send_messages(m)
            lat.append((time.perf_counter() - t) * 1000)
        out["single_send_p50_ms"] = statistics.median(lat)
    with ServiceBusAdministrationClient.from_connection_string(url) as admin:
        admin.delete_queue(name)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--messages", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    srv = RedisServer().start()
    cluster = RedisCluster(3).start()
    rows: dict[str, list[dict[str, float]]] = {"standalone": [], "cluster": []}
    try:
        for i in range(args.rounds):
            rows["standalone"].append(one_round(srv.url, args.messages, f"b{i}"))
            rows["cluster"].append(one_round(cluster.url, args.messages, f"b{i}"))
    finally:
        srv.stop()
        cluster.stop()
    med = {k: {m: statistics.median(r[m] for r in v) for m in v[0]} for k, v in rows.items()}
    print(f"{'':28}{'standalone':>12}{'3-primary cluster':>20}{'cluster cost':>14}")
    for metric in med["standalone"]:
        a, b = med["standalone"][metric], med["cluster"][metric]
        cost = b / a if metric.endswith("_ms") else a / b  # > 1: the cluster is slower per message
        print(f"{metric:28}{a:12.2f}{b:20.2f}{cost:13.2f}x")
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(
        json.dumps(
            {
                "medians": med,
                "rounds": rows,
                "messages": args.messages,
                "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
                "redis_server": server_binary(),
                "note": "2 shared cores: the cluster's 3 servers and the client share them; no speed-up expected",
            },
            indent=2,
        )
        + "\n"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
