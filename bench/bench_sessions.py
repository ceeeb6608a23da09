#!/usr/bin/env python
"""Session throughput: 100 sessions x 100 messages on a session queue vs the same messages on a
plain queue, in the same run.

    python bench/bench_sessions.py [--url redis://host:port/db] [--quick]

Without --url a private redis-server is started (tests/redis_server.py); with --url the bench only
touches queues it creates (``bench-<random>-*``) and deletes them.

Both queues have 16 partitions. A message is 256 bytes; the plain queue's messages carry the
session id as partition_key, so both queues store the same batches in the same partitions.

Rows:
  * send                       one send_messages per 100 messages of one session (one script call)
  * receive+complete, plain    one receiver: receive_messages(100) + complete_messages until empty
  * receive+complete, by id    per session: get_queue_receiver(session_id=<id>), receive_messages
                               (100) + complete_messages, close (lock, receive, settle, release)
  * receive+complete, NEXT     as by id, with NEXT_AVAILABLE_SESSION (searches the partitions)

Each figure is the median of the rounds (queues recreated between rounds, outside the timer);
server us/msg is the Redis-side EVALSHA time per message (INFO commandstats). Results go to
bench/results/sessions.json with the machine and versions. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import uuid
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for path in (ROOT, ROOT / "bench"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

import redis  # noqa: E402
from bench_core import machine_info, median  # noqa: E402

from sbredis import NEXT_AVAILABLE_SESSION, ServiceBusClient, ServiceBusMessage  # noqa: E402
from sbredis.management import ServiceBusAdministrationClient  # noqa: E402

BODY = os.urandom(256)
SESSIONS, PER_SESSION = 100, 100
PARTITIONS = 16
RESULTS = Path(__file__).resolve().parent / "results" / "sessions.json"
pc = time.perf_counter


def evalsha_usec(r: redis.Redis) -> float:
    return float(r.info("commandstats").get("cmdstat_evalsha", {}).get("usec", 0))


class Bench:
    def __init__(self, url: str, rounds: int) -> None:
        self.rounds = rounds
        self.prefix = f"bench-{uuid.uuid4().hex[:8]}"
        self.admin = ServiceBusAdministrationClient.from_connection_string(url)
        self.client = ServiceBusClient.from_connection_string(url)
        self.r = redis.Redis.from_url(url)
        self.sids = [f"session-{i:03d}" for i in range(SESSIONS)]

    def fresh(self, sessions: bool) -> str:
        name = f"{self.prefix}-{'s' if sessions else 'p'}"
        try:
            self.admin.delete_queue(name)
        except Exception:
            pass
        self.client._forget(name)
        self.admin.create_queue(name, requires_session=sessions, enable_partitioning=True, partition_count=PARTITIONS)
        return name

    def batches(self, sessions: bool) -> list[list[ServiceBusMessage]]:
        key = "session_id" if sessions else "partition_key"
        return [[ServiceBusMessage(BODY, **{key: sid}) for _ in range(PER_SESSION)] for sid in self.sids]

    def timed(self, work: Callable[[], int]) -> tuple[float, float]:
        """(messages/s, server us per message) of one run of `work` (returns its message count)."""
        u0 = evalsha_usec(self.r)
        t0 = pc()
        n = work()
        elapsed = pc() - t0
        return n / elapsed, (evalsha_usec(self.r) - u0) / max(1, n)

    def send(self, name: str, sessions: bool) -> int:
        msgs = self.batches(sessions)
        with self.client.get_queue_sender(name) as s:
            for batch in msgs:
                s.send_messages(batch)
        return SESSIONS * PER_SESSION

    def drain_plain(self, name: str) -> int:
        n = 0
        with self.client.get_queue_receiver(name, max_wait_time=0.2) as r:
            while batch := r.receive_messages(100, max_wait_time=0.2):
                r.complete_messages(batch)
                n += len(batch)
        return n

    def drain_sessions(self, name: str, by_id: bool) -> int:
        n = 0
        targets: list[Any] = list(self.sids) if by_id else [NEXT_AVAILABLE_SESSION] * SESSIONS
        for target in targets:
            with self.client.get_queue_receiver(name, session_id=target, max_wait_time=1) as r:
                batch = r.receive_messages(PER_SESSION, max_wait_time=0.5)
                r.complete_messages(batch)
                n += len(batch)
        return n

    def run(self) -> dict[str, Any]:
        rows: dict[str, dict[str, list[float]]] = {}

        def add(row: str, result: tuple[float, float]) -> None:
            entry = rows.setdefault(row, {"rates": [], "server": []})
            entry["rates"].append(result[0])
            entry["server"].append(result[1])

        for _ in range(self.rounds):
            plain = self.fresh(False)
            add("send, plain queue", self.timed(partial(self.send, plain, False)))
            add("receive+complete, plain queue", self.timed(partial(self.drain_plain, plain)))
            sess = self.fresh(True)
            add("send, session queue", self.timed(partial(self.send, sess, True)))
            add("receive+complete, session by id", self.timed(partial(self.drain_sessions, sess, True)))
            self.send(sess, True)
            add("receive+complete, NEXT_AVAILABLE", self.timed(partial(self.drain_sessions, sess, False)))
        return {
            name: {
                "msgs_per_s": median(v["rates"]),
                "rounds": v["rates"],
                "server_us_per_msg": median(v["server"]),
            }
            for name, v in rows.items()
        }

    def cleanup(self) -> None:
        for q in list(self.admin.list_queues()):
            if q.name.startswith(self.prefix):
                self.admin.delete_queue(q.name)
        self.client.close()
        self.admin.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url")
    ap.add_argument("--quick", action="store_true", help="1 round")
    args = ap.parse_args()
    rounds = 1 if args.quick else 5
    server = None
    url = args.url
    if url is None:
        from tests.redis_server import RedisServer

        server = RedisServer().start()
        url = server.url
    bench = Bench(url, rounds)
    try:
        rows = bench.run()
        info = machine_info(bench.r)
    finally:
        bench.cleanup()
        if server is not None:
            server.stop()

    ratios = {
        "send: session / plain": rows["send, session queue"]["msgs_per_s"] / rows["send, plain queue"]["msgs_per_s"],
        "receive+complete by id: session / plain": rows["receive+complete, session by id"]["msgs_per_s"]
        / rows["receive+complete, plain queue"]["msgs_per_s"],
        "receive+complete NEXT_AVAILABLE: session / plain": rows["receive+complete, NEXT_AVAILABLE"]["msgs_per_s"]
        / rows["receive+complete, plain queue"]["msgs_per_s"],
    }
    print(f"{SESSIONS} sessions x {PER_SESSION} messages, {PARTITIONS} partitions, median of {rounds} round(s)")
    print(f"{'row':34} | {'msgs/s':>9} | {'server us/msg':>13} | spread")
    print("-" * 35 + "+" + "-" * 11 + "+" + "-" * 15 + "+-------")
    for name, row in rows.items():
        spread = (max(row["rounds"]) - min(row["rounds"])) / row["msgs_per_s"]
        print(f"{name:34} | {row['msgs_per_s'] / 1000:8.1f}k | {row['server_us_per_msg']:13.2f} | {spread:5.0%}")
    for name, ratio in ratios.items():
        print(f"{name:50} {ratio:.2f}")
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(
        json.dumps(
            {
                "machine": info,
                "settings": {
                    "sessions": SESSIONS,
                    "per_session": PER_SESSION,
                    "partitions": PARTITIONS,
                    "body_bytes": len(BODY),
                    "rounds": rounds,
                },
                "throughput": rows,
                "ratios": ratios,
            },
            indent=2,
        )
        + "\n"
    )
    print(f"written to {RESULTS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
