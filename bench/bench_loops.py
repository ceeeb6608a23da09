#!/usr/bin/env python
"""The ways a program loops over messages, each next to its raw redis-py counterpart, in one run.

    python bench/bench_loops.py [--url redis://host:port/db] [--messages 3000] [--rounds 5] [--quick]

Loops (msgs/s; each message is received and completed; the queue is prefilled, not timed):

  * sync iterate       ``for msg in receiver: receiver.complete_message(msg)`` (prefetch_count 100)
                       vs raw: one EVALSHA round trip per message (a script returning 1), and one
                       HSET per message
  * async iterate      ``async for msg in receiver: await receiver.complete_message(msg)``
                       (prefetch_count 100) vs redis.asyncio: one awaited EVALSHA / HSET per message
  * async receive 100, then ``await complete_message`` one at a time vs 100 awaited HSETs
  * async receive 100, then ``asyncio.gather`` of 100 complete_message vs a gather of 100 HSETs
  * async receive 100, then ``complete_messages(list)`` vs one pipeline of 100 HSETs

Single operations (p50 and p99 ms, sync, one message at a time, --latency-ops of each): send one
message, receive one (prefetch 0, a message waiting), complete one, against a raw round trip
(EVALSHA of a script returning 1, and HSET). Each figure is the median over --rounds rounds, with
the spread ((max - min) / median); the loops alternate within a round. Results go to
bench/results/loops.json. Without --url a private redis-server is started.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results" / "loops.json"
for p in (str(ROOT), str(HERE)):
    if p not in sys.path:
        sys.path.insert(0, p)

RAW_SCRIPT = "return 1"
BATCH = 100


class Bench:
    def __init__(self, url: str, n: int, latency_ops: int) -> None:
        import redis

        from sbredis import ServiceBusClient
        from sbredis.management import ServiceBusAdministrationClient

        self.url = url
        self.n = n
        self.latency_ops = latency_ops
        self.r = redis.Redis.from_url(url)
        self.sha = self.r.script_load(RAW_SCRIPT)
        self.admin = ServiceBusAdministrationClient.from_connection_string(url)
        self.client = ServiceBusClient.from_connection_string(url)
        self.queues: list[str] = []

    # -- helpers
    def queue(self, n: int) -> str:
        """A new queue holding n messages."""
        from sbredis import ServiceBusMessage

        q = f"bench-l-{uuid.uuid4().hex[:8]}"
        self.admin.create_queue(q, max_size_in_megabytes=1 << 12)
        self.queues.append(q)
        with self.client.get_queue_sender(q) as s:
            for i in range(0, n, 500):
                s.send_messages([ServiceBusMessage(b"x" * 100) for _ in range(min(500, n - i))])
        return q

    def drop(self, q: str) -> None:
        self.admin.delete_queue(q)
        self.queues.remove(q)

    # -- sync loops
    def sync_iterate(self) -> float:
        q = self.queue(self.n)
        done = 0
        with self.client.get_queue_receiver(q, prefetch_count=100, max_wait_time=2) as receiver:
            t0 = time.perf_counter()
            for msg in receiver:
                receiver.complete_message(msg)
                done += 1
                if done == self.n:
                    break
            dt = time.perf_counter() - t0
        assert done == self.n, f"received {done} of {self.n}"
        self.drop(q)
        return done / dt

    def raw_evalsha(self) -> float:
        r, sha = self.r, self.sha
        t0 = time.perf_counter()
        for _ in range(self.n):
            r.evalsha(sha, 0)
        return self.n / (time.perf_counter() - t0)

    def raw_hset(self) -> float:
        r, key = self.r, f"bench-l-raw-{uuid.uuid4().hex[:8]}"
        t0 = time.perf_counter()
        for i in range(self.n):
            r.hset(key, str(i), "x")
        dt = time.perf_counter() - t0
        r.delete(key)
        return self.n / dt

    # -- async loops
    def run_async(self, fn: Callable[..., Any]) -> float:
        result: float = asyncio.run(fn())
        return result

    async def _aclient(self) -> Any:
        from sbredis.aio import ServiceBusClient

        return ServiceBusClient.from_connection_string(self.url)

    async def async_iterate(self) -> float:
        q = self.queue(self.n)
        done = 0
        client = await self._aclient()
        async with client, client.get_queue_receiver(q, prefetch_count=100, max_wait_time=2) as receiver:
            t0 = time.perf_counter()
            async for msg in receiver:
                await receiver.complete_message(msg)
                done += 1
                if done == self.n:
                    break
            dt = time.perf_counter() - t0
        assert done == self.n, f"received {done} of {self.n}"
        self.drop(q)
        return done / dt

    async def _batches(self, settle: Callable[[Any, list[Any]], Any]) -> float:
        q = self.queue(self.n)
        done = 0
        client = await self._aclient()
        async with client, client.get_queue_receiver(q) as receiver:
            t0 = time.perf_counter()
            while done < self.n:
                batch = await receiver.receive_messages(BATCH, max_wait_time=2)
                assert batch, f"received {done} of {self.n}"
                await settle(receiver, batch)
                done += len(batch)
            dt = time.perf_counter() - t0
        self.drop(q)
        return done / dt

    async def batch_one_at_a_time(self) -> float:
        async def settle(receiver: Any, batch: list[Any]) -> None:
            for m in batch:
                await receiver.complete_message(m)

        return await self._batches(settle)

    async def batch_gather(self) -> float:
        async def settle(receiver: Any, batch: list[Any]) -> None:
            await asyncio.gather(*(receiver.complete_message(m) for m in batch))

        return await self._batches(settle)

    async def batch_list(self) -> float:
        async def settle(receiver: Any, batch: list[Any]) -> None:
            await receiver.complete_messages(batch)

        return await self._batches(settle)

    async def _araw(self, body: Callable[[Any, str], Any]) -> float:
        import redis.asyncio

        r = redis.asyncio.Redis.from_url(self.url)
        key = f"bench-l-raw-{uuid.uuid4().hex[:8]}"
        try:
            await r.ping()
            t0 = time.perf_counter()
            await body(r, key)
            dt = time.perf_counter() - t0
            await r.delete(key)
        finally:
            await r.aclose()
        return self.n / dt

    async def araw_evalsha(self) -> float:
        async def body(r: Any, key: str) -> None:
            for _ in range(self.n):
                await r.evalsha(self.sha, 0)

        return await self._araw(body)

    async def araw_hset(self) -> float:
        async def body(r: Any, key: str) -> None:
            for i in range(self.n):
                await r.hset(key, str(i), "x")

        return await self._araw(body)

    async def araw_gather_hset(self) -> float:
        async def body(r: Any, key: str) -> None:
            for i in range(0, self.n, BATCH):
                await asyncio.gather(*(r.hset(key, str(i + j), "x") for j in range(BATCH)))

        return await self._araw(body)

    async def araw_pipeline_hset(self) -> float:
        async def body(r: Any, key: str) -> None:
            for i in range(0, self.n, BATCH):
                pipe = r.pipeline(transaction=False)
                for j in range(BATCH):
                    pipe.hset(key, str(i + j), "x")
                await pipe.execute()

        return await self._araw(body)

    # -- single operations
    def latency(self) -> dict[str, list[float]]:
        """Per-operation latencies in ms: send, receive, complete one message; raw round trips."""
        from sbredis import ServiceBusMessage

        k = self.latency_ops
        q = self.queue(0)
        out: dict[str, list[float]] = {"send": [], "receive": [], "complete": [], "raw EVALSHA": [], "raw HSET": []}
        clock = time.perf_counter
        with self.client.get_queue_sender(q) as s, self.client.get_queue_receiver(q, prefetch_count=0) as rc:
            s.send_messages(ServiceBusMessage(b"warm"))
            rc.complete_messages(rc.receive_messages(1, max_wait_time=2))
            for _ in range(k):
                msg = ServiceBusMessage(b"x" * 100)
                t0 = clock()
                s.send_messages(msg)
                t1 = clock()
                (m,) = rc.receive_messages(1, max_wait_time=2)
                t2 = clock()
                rc.complete_message(m)
                t3 = clock()
                out["send"].append((t1 - t0) * 1e3)
                out["receive"].append((t2 - t1) * 1e3)
                out["complete"].append((t3 - t2) * 1e3)
        key = f"bench-l-raw-{uuid.uuid4().hex[:8]}"
        for i in range(k):
            t0 = clock()
            self.r.evalsha(self.sha, 0)
            t1 = clock()
            self.r.hset(key, str(i), "x")
            t2 = clock()
            out["raw EVALSHA"].append((t1 - t0) * 1e3)
            out["raw HSET"].append((t2 - t1) * 1e3)
        self.r.delete(key)
        self.drop(q)
        return out

    def cleanup(self) -> None:
        from sbredis.exceptions import MessagingEntityNotFoundError

        for q in list(self.queues):
            try:
                self.admin.delete_queue(q)
            except MessagingEntityNotFoundError:
                pass
        self.admin.close()
        self.client.close()


# (name, raw counterpart names, what the loop is)
LOOPS: list[tuple[str, list[str], str]] = [
    ("sync iterate", ["raw EVALSHA (sync)", "raw HSET (sync)"], "for msg in receiver: complete_message(msg)"),
    ("async iterate", ["raw EVALSHA (async)", "raw HSET (async)"], "async for msg in receiver: complete_message"),
    ("async receive 100, complete one at a time", ["raw HSET (async)"], "await complete_message per message"),
    ("async receive 100, gather completes", ["raw gather of 100 HSET (async)"], "asyncio.gather"),
    ("async receive 100, complete_messages(list)", ["raw pipeline of 100 HSET (async)"], "one call per batch"),
]


def spread(xs: list[float]) -> float:
    med = statistics.median(xs)
    return (max(xs) - min(xs)) / med * 100 if med else 0.0


def pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", help="Redis URL (default: start a private redis-server)")
    ap.add_argument("--messages", type=int, default=3000, help="messages (or raw commands) per loop and round")
    ap.add_argument("--latency-ops", type=int, default=1000, help="single operations of each kind per round")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="2 rounds of 500 messages, 200 single operations")
    args = ap.parse_args(argv)
    n, ops, rounds = (500, 200, 2) if args.quick else (args.messages, args.latency_ops, args.rounds)

    server = None
    url = args.url
    if url is None:
        from tests.redis_server import RedisServer

        server = RedisServer().start()
        url = server.url
    try:
        from bench_core import machine_info

        b = Bench(url, n, ops)
        runs: dict[str, Callable[[], float]] = {
            "sync iterate": b.sync_iterate,
            "raw EVALSHA (sync)": b.raw_evalsha,
            "raw HSET (sync)": b.raw_hset,
            "async iterate": lambda: b.run_async(b.async_iterate),
            "raw EVALSHA (async)": lambda: b.run_async(b.araw_evalsha),
            "raw HSET (async)": lambda: b.run_async(b.araw_hset),
            "async receive 100, complete one at a time": lambda: b.run_async(b.batch_one_at_a_time),
            "async receive 100, gather completes": lambda: b.run_async(b.batch_gather),
            "raw gather of 100 HSET (async)": lambda: b.run_async(b.araw_gather_hset),
            "async receive 100, complete_messages(list)": lambda: b.run_async(b.batch_list),
            "raw pipeline of 100 HSET (async)": lambda: b.run_async(b.araw_pipeline_hset),
        }
        rates: dict[str, list[float]] = {k: [] for k in runs}
        lat: dict[str, dict[str, list[float]]] = {}
        try:
            for r in range(rounds):
                for name, fn in runs.items():
                    rates[name].append(fn())
                    print(f"round {r + 1}/{rounds}  {name:45s} {rates[name][-1]:9,.0f} msgs/s", flush=True)
                for op, xs in b.latency().items():
                    d = lat.setdefault(op, {"p50": [], "p99": []})
                    d["p50"].append(pct(xs, 0.5))
                    d["p99"].append(pct(xs, 0.99))
            info = machine_info(b.r)
        finally:
            b.cleanup()
    finally:
        if server is not None:
            server.stop()

    med = {k: statistics.median(v) for k, v in rates.items()}
    loops = {}
    print()
    print(f"{'loop':45s} | {'msgs/s':>8s} | spread | raw counterpart: msgs/s, loop/raw")
    print("-" * 46 + "+" + "-" * 10 + "+--------+" + "-" * 40)
    for name, raws, what in LOOPS:
        loops[name] = {
            "what": what,
            "rounds": rates[name],
            "median_msgs_per_s": med[name],
            "spread_pct": spread(rates[name]),
            "raw": {
                raw: {
                    "rounds": rates[raw],
                    "median_per_s": med[raw],
                    "spread_pct": spread(rates[raw]),
                    "ratio": med[name] / med[raw],
                }
                for raw in raws
            },
        }
        vs = "; ".join(f"{raw} {med[raw]:,.0f} ({med[name] / med[raw]:.2f}x)" for raw in raws)
        print(f"{name:45s} | {med[name]:8,.0f} | {spread(rates[name]):5.0f}% | {vs}")
    latency = {
        op: {
            "p50_ms": statistics.median(d["p50"]),
            "p99_ms": statistics.median(d["p99"]),
            "p50_rounds": d["p50"],
            "p50_spread_pct": spread(d["p50"]),
        }
        for op, d in lat.items()
    }
    raw_p50 = latency["raw EVALSHA"]["p50_ms"]
    print()
    print(f"{'single operation':16s} | {'p50 ms':>7s} | {'p99 ms':>7s} | p50 / raw EVALSHA p50")
    for op, d in latency.items():
        d["vs_raw_evalsha_p50"] = d["p50_ms"] / raw_p50
        print(f"{op:16s} | {d['p50_ms']:7.3f} | {d['p99_ms']:7.3f} | {d['vs_raw_evalsha_p50']:.2f}x")
    out = {
        "messages_per_loop": n,
        "latency_ops": ops,
        "rounds": rounds,
        "loops": loops,
        "latency": latency,
        "machine": info,
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(out, indent=2) + "\n")
    print(f"\nwritten to {RESULTS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
