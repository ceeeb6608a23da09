#!/usr/bin/env python
"""Publish throughput of a topic with 1, 10 and 50 subscriptions: the cost of fan-out and filtering.

    python bench/bench_topics.py [--url redis://host:port/db] [--quick]

Without --url a private redis-server is started (tests/redis_server.py); with --url the bench only
touches topics and queues it creates (``bench-<random>-*``) and deletes them.

Rows (1 KiB bodies, batches of 100 messages, one topic partition, so every figure is one script
call per batch):
  * queue send                       the baseline: the same batches to a queue (one copy each)
  * N subs, SQL filter, half match   subscription j has the rule ``parity = <j % 2>``, messages
                                     alternate parity 0/1: each message matches half of the
                                     subscriptions (with 1 subscription: every other message)
  * N subs, $Default (all match)     every subscription keeps its TrueRuleFilter: N copies per
                                     message, no filter evaluation
  * single publish p50 / p99         one message per send_messages, N subs with SQL filters

msgs/s counts messages sent to the topic; copies/s the copies stored in subscriptions. Each figure
is the median of the rounds; subscriptions are emptied (topic deleted and created again) between
rounds, outside the timer. server us/msg is the Redis-side EVALSHA time per message (INFO
commandstats). Results go to bench/results/topics.json. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for path in (ROOT, ROOT / "bench"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

import redis  # noqa: E402
from bench_core import machine_info, median, pct  # noqa: E402

from sbredis import ServiceBusClient, ServiceBusMessage  # noqa: E402
from sbredis.management import ServiceBusAdministrationClient, SqlRuleFilter  # noqa: E402

BODY = os.urandom(1024)
BATCH = 100
RESULTS = Path(__file__).resolve().parent / "results" / "topics.json"
SUB_COUNTS = (1, 10, 50)
pc = time.perf_counter


def evalsha_usec(r: redis.Redis) -> tuple[float, int]:
    st = r.info("commandstats").get("cmdstat_evalsha", {})
    return float(st.get("usec", 0)), int(st.get("calls", 0))


class Bench:
    def __init__(self, url: str, seconds: float, rounds: int) -> None:
        self.url = url
        self.seconds = seconds
        self.rounds = rounds
        self.prefix = f"bench-{uuid.uuid4().hex[:8]}"
        self.admin = ServiceBusAdministrationClient.from_connection_string(url)
        self.client = ServiceBusClient.from_connection_string(url)
        self.r = redis.Redis.from_url(url)

    def batches(self, parity_split: bool) -> list[list[ServiceBusMessage]]:
        """Fresh messages for one round (built outside the timer)."""
        out = []
        for b in range(self.batch_count):
            out.append(
                [
                    ServiceBusMessage(BODY, application_properties={"parity": (b * BATCH + i) % 2})
                    if parity_split
                    else ServiceBusMessage(BODY)
                    for i in range(BATCH)
                ]
            )
        return out

    def make_topic(self, subs: int, filtered: bool, tag: str = "") -> str:
        name = f"{self.prefix}-t{subs}{'f' if filtered else 'd'}{tag}"
        self.admin.create_topic(name)
        for j in range(subs):
            self.admin.create_subscription(name, f"s{j}")
            if filtered:
                self.admin.delete_rule(name, f"s{j}", "$Default")
                self.admin.create_rule(name, f"s{j}", "half", filter=SqlRuleFilter(f"parity = {j % 2}"))
        return name

    def timed_rounds(self, reset: Any, sender_factory: Any, filtered: bool) -> dict[str, Any]:
        rates, server = [], []
        for _ in range(self.rounds):
            target = reset()
            msgs = self.batches(filtered)
            with sender_factory(target) as s:
                s.send_messages(ServiceBusMessage(b"warm"))  # loads the entity and its subscription set
                u0, _ = evalsha_usec(self.r)
                t0 = pc()
                for batch in msgs:
                    s.send_messages(batch)
                elapsed = pc() - t0
                u1, _ = evalsha_usec(self.r)
            n = len(msgs) * BATCH
            rates.append(n / elapsed)
            server.append((u1 - u0) / n)
        return {"msgs_per_s": median(rates), "rounds": rates, "server_us_per_msg": median(server)}

    def queue_row(self) -> dict[str, Any]:
        name = f"{self.prefix}-q"

        def reset() -> str:
            try:
                self.admin.delete_queue(name)
            except Exception:
                pass
            self.admin.create_queue(name)
            return name

        self.batch_count = max(3, int(50_000 * self.seconds / BATCH))
        return self.timed_rounds(reset, self.client.get_queue_sender, False)

    def topic_row(self, subs: int, filtered: bool) -> dict[str, Any]:
        name = f"{self.prefix}-t{subs}{'f' if filtered else 'd'}"

        def reset() -> str:
            try:
                self.admin.delete_topic(name)
            except Exception:
                pass
            self.client._forget(name)
            return self.make_topic(subs, filtered)

        copies_per_msg = subs / 2 if filtered else subs
        guess = 60_000 / max(1.0, copies_per_msg)
        self.batch_count = max(3, min(300, int(guess * self.seconds / BATCH)))
        row = self.timed_rounds(reset, self.client.get_topic_sender, filtered)
        row["copies_per_msg"] = copies_per_msg
        row["copies_per_s"] = row["msgs_per_s"] * copies_per_msg
        return row

    def latency_row(self, subs: int, n: int) -> dict[str, Any]:
        name = self.make_topic(subs, True, "-lat")
        times = []
        with self.client.get_topic_sender(name) as s:
            s.send_messages(ServiceBusMessage(b"warm"))
            for i in range(n):
                m = ServiceBusMessage(BODY, application_properties={"parity": i % 2})
                t0 = pc()
                s.send_messages(m)
                times.append((pc() - t0) * 1000)
        self.admin.delete_topic(name)
        return {"p50_ms": pct(times, 50), "p99_ms": pct(times, 99), "n": n}

    def cleanup(self) -> None:
        for t in list(self.admin.list_topics()):
            if t.name.startswith(self.prefix):
                self.admin.delete_topic(t.name)
        for q in list(self.admin.list_queues()):
            if q.name.startswith(self.prefix):
                self.admin.delete_queue(q.name)
        self.client.close()
        self.admin.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url")
    ap.add_argument("--quick", action="store_true", help="3 rounds of ~0.2 s per figure")
    args = ap.parse_args()
    seconds, rounds, lat_n = (0.2, 3, 300) if args.quick else (0.6, 5, 2000)
    server = None
    url = args.url
    if url is None:
        from tests.redis_server import RedisServer

        server = RedisServer().start()
        url = server.url
    bench = Bench(url, seconds, rounds)
    rows: dict[str, Any] = {}
    try:
        rows["queue send"] = bench.queue_row()
        for subs in SUB_COUNTS:
            rows[f"{subs} subs, SQL filter, half match"] = bench.topic_row(subs, True)
            rows[f"{subs} subs, $Default (all match)"] = bench.topic_row(subs, False)
        latency = {f"{subs} subs, SQL filter": bench.latency_row(subs, lat_n) for subs in SUB_COUNTS}
        info = machine_info(bench.r)
    finally:
        bench.cleanup()
        if server is not None:
            server.stop()

    print(f"{'row':36} | {'msgs/s':>9} | {'copies/s':>9} | {'server us/msg':>13} | spread")
    print("-" * 37 + "+" + "-" * 11 + "+" + "-" * 11 + "+" + "-" * 15 + "+-------")
    for name, row in rows.items():
        copies = row.get("copies_per_s", row["msgs_per_s"])
        spread = (max(row["rounds"]) - min(row["rounds"])) / row["msgs_per_s"]
        print(
            f"{name:36} | {row['msgs_per_s'] / 1000:8.1f}k | {copies / 1000:8.1f}k | "
            f"{row['server_us_per_msg']:13.2f} | {spread:5.0%}"
        )
    for name, row in latency.items():
        print(f"single publish, {name:20} p50 {row['p50_ms']:.3f} ms  p99 {row['p99_ms']:.3f} ms")
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(
        json.dumps(
            {
                "machine": info,
                "settings": {"body_bytes": len(BODY), "batch": BATCH, "seconds": seconds, "rounds": rounds},
                "throughput": rows,
                "latency": latency,
            },
            indent=2,
        )
        + "\n"
    )
    print(f"written to {RESULTS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
