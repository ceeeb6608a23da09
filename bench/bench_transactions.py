#!/usr/bin/env python
"""Transaction commit cost against plain sends and settlements, in the same run.

    python bench/bench_transactions.py [--url redis://host:port/db] [--quick]

Without --url a private redis-server is started (tests/redis_server.py); with --url the bench only
touches the queues it creates (``bench-<random>-*``) and deletes them.

Each row times one operation as a caller sees it (sync client, one at a time, 100-byte bodies),
messages received beforehand outside the timer; figures are the median (and p99) over the
iterations, and the ratio of the median to the plain row it replaces:

  * send 1                          send_messages of one message (baseline)
  * complete 1                      complete_message (baseline)
  * send 1 + complete 1             the two calls one after the other, not atomic (baseline)
  * tx: send 1 + complete 1         the same in a transaction: buffer, then one tx_commit call
  * tx: send 1 via + complete 1     the send goes to another queue: tx_commit writes it to the
                                    transfer queue, the commit then delivers it (forward_out,
                                    forward_in, forward_ack): the time until it is receivable
  * send 10 + complete 10           send_messages(10) and complete_messages(10) (baseline)
  * tx: send 10 + complete 10       the same in one transaction

server us/op is the Redis-side EVALSHA time per operation (INFO commandstats). Results go to
bench/results/transactions.json. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for path in (ROOT, ROOT / "bench"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

import redis  # noqa: E402
from bench_core import machine_info, median, pct  # noqa: E402

from sbredis import ServiceBusClient, ServiceBusMessage  # noqa: E402
from sbredis.management import ServiceBusAdministrationClient  # noqa: E402

BODY = b"x" * 100
RESULTS = Path(__file__).resolve().parent / "results" / "transactions.json"
pc = time.perf_counter


def evalsha_usec(r: redis.Redis) -> float:
    return float(r.info("commandstats").get("cmdstat_evalsha", {}).get("usec", 0))


class Bench:
    def __init__(self, url: str, n: int) -> None:
        self.n = n
        prefix = f"bench-{uuid.uuid4().hex[:8]}"
        self.q, self.dst = f"{prefix}-src", f"{prefix}-dst"
        self.admin = ServiceBusAdministrationClient.from_connection_string(url)
        self.admin.create_queue(self.q, lock_duration=timedelta(minutes=5))
        self.admin.create_queue(self.dst)
        self.client = ServiceBusClient.from_connection_string(url)
        self.sender = self.client.get_queue_sender(self.q)
        self.via = self.client.get_queue_sender(self.dst)
        self.receiver = self.client.get_queue_receiver(self.q)
        self.r = redis.Redis.from_url(url)

    def locked(self, count: int) -> list[Any]:
        """`count` messages received (locked) from the queue, outside the timer."""
        for i in range(0, count, 1000):
            self.sender.send_messages([ServiceBusMessage(BODY) for _ in range(min(1000, count - i))])
        out: list[Any] = []
        while len(out) < count:
            out += self.receiver.receive_messages(min(count - len(out), 5000), max_wait_time=5)
        return out

    def row(self, op: Callable[[list[Any]], None], settles: int) -> dict[str, Any]:
        msgs = self.locked(self.n * settles)
        batches = [msgs[i * settles : (i + 1) * settles] for i in range(self.n)]
        times = []
        usec = evalsha_usec(self.r)
        for batch in batches:
            t = pc()
            op(batch)
            times.append(pc() - t)
        usec = evalsha_usec(self.r) - usec
        self.empty()
        return {
            "median_ms": median(times) * 1000,
            "p99_ms": pct(times, 99) * 1000,
            "server_us_per_op": usec / self.n,
        }

    def empty(self) -> None:
        """Remove what the timed operations stored (outside the timer)."""
        for q in (self.q, self.dst):
            with self.client.get_queue_receiver(q, receive_mode="receiveanddelete") as r:
                while r.receive_messages(5000, max_wait_time=0.2):
                    pass

    # -- operations
    def send1(self, _: list[Any]) -> None:
        self.sender.send_messages(ServiceBusMessage(BODY))

    def complete1(self, batch: list[Any]) -> None:
        self.receiver.complete_message(batch[0])

    def send_complete(self, batch: list[Any]) -> None:
        self.sender.send_messages([ServiceBusMessage(BODY) for _ in batch])
        self.receiver.complete_messages(batch)

    def tx_send_complete(self, batch: list[Any]) -> None:
        with self.client.transaction() as tx:
            self.sender.send_messages([ServiceBusMessage(BODY) for _ in batch], transaction=tx)
            self.receiver.complete_messages(batch, transaction=tx)

    def tx_via_complete(self, batch: list[Any]) -> None:
        with self.client.transaction() as tx:
            self.via.send_messages(ServiceBusMessage(BODY), transaction=tx)
            self.receiver.complete_messages(batch, transaction=tx)

    def cleanup(self) -> None:
        self.receiver.close()
        self.client.close()
        for q in (self.q, self.dst):
            self.admin.delete_queue(q)
        self.admin.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url")
    ap.add_argument("--quick", action="store_true", help="200 iterations per row")
    args = ap.parse_args()
    n = 200 if args.quick else 2000
    server = None
    url = args.url
    if url is None:
        from tests.redis_server import RedisServer

        server = RedisServer().start()
        url = server.url
    bench = Bench(url, n)
    rows: dict[str, Any] = {}
    try:
        bench.row(bench.send1, 1)  # warm-up: scripts loaded, metadata cached, connections open
        rows["send 1"] = bench.row(bench.send1, 1)
        rows["complete 1"] = bench.row(bench.complete1, 1)
        rows["send 1 + complete 1"] = bench.row(bench.send_complete, 1)
        rows["tx: send 1 + complete 1"] = bench.row(bench.tx_send_complete, 1)
        rows["tx: send 1 via + complete 1"] = bench.row(bench.tx_via_complete, 1)
        rows["send 10 + complete 10"] = bench.row(bench.send_complete, 10)
        rows["tx: send 10 + complete 10"] = bench.row(bench.tx_send_complete, 10)
        info = machine_info(bench.r)
    finally:
        bench.cleanup()
        if server is not None:
            server.stop()
    baseline = {
        "tx: send 1 + complete 1": "send 1 + complete 1",
        "tx: send 1 via + complete 1": "send 1 + complete 1",
        "tx: send 10 + complete 10": "send 10 + complete 10",
    }
    for name, base in baseline.items():
        rows[name]["vs"] = base
        rows[name]["ratio"] = rows[name]["median_ms"] / rows[base]["median_ms"]

    print(f"{'operation':30} | {'median ms':>9} | {'p99 ms':>7} | {'server us/op':>12} | vs plain")
    print("-" * 31 + "+" + "-" * 11 + "+" + "-" * 9 + "+" + "-" * 14 + "+---------")
    for name, row in rows.items():
        ratio = f"{row['ratio']:.2f}x" if "ratio" in row else ""
        print(f"{name:30} | {row['median_ms']:9.3f} | {row['p99_ms']:7.3f} | {row['server_us_per_op']:12.1f} | {ratio}")
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(
        json.dumps({"machine": info, "settings": {"body_bytes": len(BODY), "iterations": n}, "rows": rows}, indent=2)
        + "\n"
    )
    print(f"written to {RESULTS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
