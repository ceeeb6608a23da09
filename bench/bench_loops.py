#!/usr/bin/env python
"""The ways a program loops over messages, each next to its raw redis-py counterpart, in one run.

    python bench/bench_loops.py [--url redis://host:port/db] [--messages 3000] [--rounds 5] [--quick]
                                [--only sync|async] [--reply-poll-time SECONDS]

Loops (msgs/s; each message is received and completed; the queue is prefilled, not timed):

  * sync iterate       ``for msg in receiver: receiver.complete_message(msg)`` (prefetch_count 100)
                       vs raw: one EVALSHA round trip per message (a script returning 1), and one
                       HSET per message
  * async iterate      ``async for msg in receiver: await receiver.complete_message(msg)``
                       (prefetch_count 100) vs redis.asyncio: one awaited EVALSHA / HSET per message
  * both again with ``reply_poll_time=0`` (the client sleeps until each reply arrives), and the raw
    EVALSHA round trip on one of redis-py's connections (``send_command`` and the read) as it
    comes and polled for its reply as sbredis polls (--reply-poll-time, the client's default)
  * async receive 100, then ``await complete_message`` one at a time vs 100 awaited HSETs
  * async receive 100, then ``asyncio.gather`` of 100 complete_message vs a gather of 100 HSETs
  * async receive 100, then ``complete_messages(list)`` vs one pipeline of 100 HSETs

Single operations (p50 and p99 ms, sync, one message at a time, --latency-ops of each): send one
message, receive one (prefetch 0, a message waiting), complete one, interleaved with raw round
trips: EVALSHA of a script returning 1, HSET, and the comparable stream commands XADD (vs send),
XREADGROUP COUNT 1 (vs receive), XACK (vs complete), and the EVALSHA on a connection, polled.
Each figure is the median over --rounds
rounds, with the spread ((max - min) / median); the loops alternate within a round. Every loop and
operation also reports CPU µs per message: this process's (time.process_time) and redis-server's
(INFO cpu), which move far less with the machine's load than wall-clock rates (the single
operations' CPU is measured in a block of each kind after the interleaved timings). Results go to
bench/results/loops.json. Without --url a private redis-server is started. ``--only sync`` (or
``async``) runs that iterating loop and its two raw counterparts alone, with no single operations,
and prints them without writing the results file (for alternating runs of two versions of the
code).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
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
RAW_OPS = ["raw EVALSHA", "raw HSET", "raw XADD", "raw XREADGROUP", "raw XACK", "raw EVALSHA on a connection, polled"]
# the raw command each single operation compares with (and all with raw EVALSHA)
COMPARABLE = {"send": "raw XADD", "receive": "raw XREADGROUP", "complete": "raw XACK"}
BATCH = 100


class Bench:
    def __init__(self, url: str, n: int, latency_ops: int, poll: float | None = None) -> None:
        import redis

        from sbredis import ServiceBusClient
        from sbredis._core.reply_poll import DEFAULT_REPLY_POLL_TIME
        from sbredis.management import ServiceBusAdministrationClient

        self.url = url
        self.n = n
        self.latency_ops = latency_ops
        self.r = redis.Redis.from_url(url)
        self.sha = self.r.script_load(RAW_SCRIPT)
        self.admin = ServiceBusAdministrationClient.from_connection_string(url)
        # the client as it comes (or with --reply-poll-time), and one that never polls for a reply
        self.options = {} if poll is None else {"reply_poll_time": poll}
        self.poll = DEFAULT_REPLY_POLL_TIME if poll is None else poll
        self.client = ServiceBusClient.from_connection_string(url, **self.options)
        self.client_sleeping = ServiceBusClient.from_connection_string(url, reply_poll_time=0)
        self.queues: list[str] = []
        self.cpu: tuple[float, float] = (0.0, 0.0)  # the last timed section: client, server CPU µs per op

    # -- timing: wall clock, this process's CPU and redis-server's CPU (INFO cpu) around a section
    def server_cpu(self) -> float:
        info = self.r.info("cpu")
        return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])

    def start(self) -> tuple[float, float, float]:
        server = self.server_cpu()
        return time.perf_counter(), time.process_time(), server

    def stop(self, mark: tuple[float, float, float], n: int) -> float:
        """Ops per second since `mark`; the section's CPU per op goes to self.cpu."""
        dt = time.perf_counter() - mark[0]
        client = time.process_time() - mark[1]
        self.cpu = (client / n * 1e6, (self.server_cpu() - mark[2]) / n * 1e6)
        return n / dt

    def command_usec(self) -> dict[str, tuple[int, int]]:
        """INFO commandstats: command -> (calls, µs), a script's nested commands counted in its EVALSHA."""
        return {k[8:]: (int(v["calls"]), int(v["usec"])) for k, v in self.r.info("commandstats").items()}

    def usec_per_call(self, before: dict[str, tuple[int, int]], command: str) -> float:
        calls, usec = self.command_usec().get(command, (0, 0))
        c0, u0 = before.get(command, (0, 0))
        return (usec - u0) / max(1, calls - c0)

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
    def sync_iterate(self, client: Any = None) -> float:
        q = self.queue(self.n)
        done = 0
        client = client or self.client
        with client.get_queue_receiver(q, prefetch_count=100, max_wait_time=2) as receiver:
            t0 = self.start()
            for msg in receiver:
                receiver.complete_message(msg)
                done += 1
                if done == self.n:
                    break
            rate = self.stop(t0, done)
        assert done == self.n, f"received {done} of {self.n}"
        self.drop(q)
        return rate

    def raw_evalsha(self) -> float:
        r, sha = self.r, self.sha
        t0 = self.start()
        for _ in range(self.n):
            r.evalsha(sha, 0)
        return self.stop(t0, self.n)

    def raw_on_connection(self, poll: float) -> float:
        """EVALSHA round trips on one of redis-py's connections, below its per-command layers as
        sbredis's transport sends (the reply polled for `poll` seconds first, as sbredis polls)."""
        from sbredis._concurrency import sync_read_reply

        pool = self.r.connection_pool
        conn = pool.get_connection()
        try:
            t0 = self.start()
            for _ in range(self.n):
                conn.send_command("EVALSHA", self.sha, 0)
                sync_read_reply(conn, poll)
            return self.stop(t0, self.n)
        finally:
            pool.release(conn)

    def raw_hset(self) -> float:
        r, key = self.r, f"bench-l-raw-{uuid.uuid4().hex[:8]}"
        t0 = self.start()
        for i in range(self.n):
            r.hset(key, str(i), "x")
        rate = self.stop(t0, self.n)
        r.delete(key)
        return rate

    # -- async loops
    def run_async(self, fn: Callable[..., Any]) -> float:
        result: float = asyncio.run(fn())
        return result

    async def _aclient(self, **options: Any) -> Any:
        from sbredis.aio import ServiceBusClient

        return ServiceBusClient.from_connection_string(self.url, **{**self.options, **options})

    async def async_iterate(self, **options: Any) -> float:
        q = self.queue(self.n)
        done = 0
        client = await self._aclient(**options)
        async with client, client.get_queue_receiver(q, prefetch_count=100, max_wait_time=2) as receiver:
            t0 = self.start()
            async for msg in receiver:
                await receiver.complete_message(msg)
                done += 1
                if done == self.n:
                    break
            rate = self.stop(t0, done)
        assert done == self.n, f"received {done} of {self.n}"
        self.drop(q)
        return rate

    async def _batches(self, settle: Callable[[Any, list[Any]], Any]) -> float:
        q = self.queue(self.n)
        done = 0
        client = await self._aclient()
        async with client, client.get_queue_receiver(q) as receiver:
            t0 = self.start()
            while done < self.n:
                batch = await receiver.receive_messages(BATCH, max_wait_time=2)
                assert batch, f"received {done} of {self.n}"
                await settle(receiver, batch)
                done += len(batch)
            rate = self.stop(t0, done)
        self.drop(q)
        return rate

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
            t0 = self.start()
            await body(r, key)
            rate = self.stop(t0, self.n)
            await r.delete(key)
        finally:
            await r.aclose()
        return rate

    async def araw_evalsha(self) -> float:
        async def body(r: Any, key: str) -> None:
            for _ in range(self.n):
                await r.evalsha(self.sha, 0)

        return await self._araw(body)

    async def araw_on_connection(self, poll: float) -> float:
        """raw_on_connection with redis.asyncio."""
        from sbredis._concurrency import async_read_reply

        async def body(r: Any, key: str) -> None:
            conn = await r.connection_pool.get_connection()
            try:
                for _ in range(self.n):
                    await conn.send_command("EVALSHA", self.sha, 0)
                    await async_read_reply(conn, poll)
            finally:
                await r.connection_pool.release(conn)

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
    def latency(self) -> tuple[dict[str, list[float]], dict[str, tuple[float, ...]]]:
        """Per-operation latencies in ms: send, receive, complete one message and the raw commands,
        all interleaved; then the CPU µs per operation (client, server) of each kind, run in a
        block of its own."""
        from sbredis import ServiceBusMessage

        k = self.latency_ops
        q = self.queue(0)
        r = self.r
        names = ["send", "receive", "complete", *RAW_OPS]
        out: dict[str, list[float]] = {n: [] for n in names}
        cpu: dict[str, tuple[float, ...]] = {}  # client CPU, server CPU, command µs per call
        clock = time.perf_counter
        key = f"bench-l-raw-{uuid.uuid4().hex[:8]}"
        stream = f"bench-l-xs-{uuid.uuid4().hex[:8]}"
        r.xgroup_create(stream, "g", id="0", mkstream=True)
        body = b"x" * 100
        from sbredis._concurrency import sync_read_reply

        conn = r.connection_pool.get_connection()

        def polled() -> None:
            conn.send_command("EVALSHA", self.sha, 0)
            sync_read_reply(conn, self.poll)

        with self.client.get_queue_sender(q) as s, self.client.get_queue_receiver(q, prefetch_count=0) as rc:
            s.send_messages(ServiceBusMessage(b"warm"))
            rc.complete_messages(rc.receive_messages(1, max_wait_time=2))
            for i in range(k):
                msg = ServiceBusMessage(body)
                t0 = clock()
                s.send_messages(msg)
                t1 = clock()
                (m,) = rc.receive_messages(1, max_wait_time=2)
                t2 = clock()
                rc.complete_message(m)
                t3 = clock()
                r.evalsha(self.sha, 0)
                t4 = clock()
                r.hset(key, str(i), "x")
                t5 = clock()
                r.xadd(stream, {"b": body})
                t6 = clock()
                ((_, ((xid, _),)),) = r.xreadgroup("g", "c", {stream: ">"}, count=1)
                t7 = clock()
                r.xack(stream, "g", xid)
                t8 = clock()
                polled()
                t9 = clock()
                ts = (t0, t1, t2, t3, t4, t5, t6, t7, t8, t9)
                for j, name in enumerate(names):
                    out[name].append((ts[j + 1] - ts[j]) * 1e3)
            # CPU per operation: each kind in a block of its own (and its script's µs per call)
            t, cs = self.start(), self.command_usec()
            for _ in range(k):
                s.send_messages(ServiceBusMessage(body))
            self.stop(t, k)
            cpu["send"] = (*self.cpu, self.usec_per_call(cs, "evalsha"))
            t, cs = self.start(), self.command_usec()
            got = [rc.receive_messages(1, max_wait_time=2)[0] for _ in range(k)]
            self.stop(t, k)
            cpu["receive"] = (*self.cpu, self.usec_per_call(cs, "evalsha"))
            t, cs = self.start(), self.command_usec()
            for m in got:
                rc.complete_message(m)
            self.stop(t, k)
            cpu["complete"] = (*self.cpu, self.usec_per_call(cs, "evalsha"))
        raw: dict[str, Callable[[int], Any]] = {
            "raw EVALSHA": lambda i: r.evalsha(self.sha, 0),
            "raw HSET": lambda i: r.hset(key, str(i), "x"),
            "raw XADD": lambda i: r.xadd(stream, {"b": body}),
            "raw XREADGROUP": lambda i: ids.append(r.xreadgroup("g", "c", {stream: ">"}, count=1)[0][1][0][0]),
            "raw XACK": lambda i: r.xack(stream, "g", ids[i]),
        }
        ids: list[bytes] = []
        raw["raw EVALSHA on a connection, polled"] = lambda i: polled()
        for name, fn in raw.items():
            t, cs = self.start(), self.command_usec()
            for i in range(k):
                fn(i)
            self.stop(t, k)
            cpu[name] = (*self.cpu, self.usec_per_call(cs, name.split()[1].lower()))
        r.connection_pool.release(conn)
        r.delete(key, stream)
        self.drop(q)
        return out, cpu

    def profile(self) -> dict[str, dict[str, float]]:
        """Client CPU µs per single operation split in two: sbredis's Python above redis-py (the
        transport's script call replaced by the reply a real call gave), and the transport's script
        call itself (redis-py's connection: packing, socket calls, parsing) for a call of the same
        keys and arguments (a script returning 1)."""
        from sbredis import ServiceBusMessage
        from sbredis._core.protocol import Call
        from sbredis._core.scripts import Script

        k = self.latency_ops
        q = self.queue(k + 1)
        transport = self.client._transport
        real = transport._run_once
        replies: dict[str, Any] = {}
        calls: dict[str, Any] = {}

        def record(c: Any, entity: str) -> Any:
            replies[c.script.name] = reply = real(c, entity)
            calls[c.script.name] = c
            return reply

        out: dict[str, dict[str, float]] = {}
        with self.client.get_queue_sender(q) as s, self.client.get_queue_receiver(q, prefetch_count=0) as rc:
            transport._run_once = record
            try:
                s.send_messages(ServiceBusMessage(b"x" * 100))
                got = [rc.receive_messages(1, max_wait_time=2)[0] for _ in range(k)]
                rc.complete_message(got.pop())
                transport._run_once = lambda c, entity: replies[c.script.name]
                ops: dict[str, Callable[[int], Any]] = {
                    "send": lambda i: s.send_messages(ServiceBusMessage(b"x" * 100)),
                    "receive": lambda i: rc.receive_messages(1, max_wait_time=2),
                    "complete": lambda i: rc.complete_message(got[i]),
                }
                for name, fn in ops.items():
                    t0 = time.process_time()
                    for i in range(k - 1):
                        fn(i)
                    out[name] = {"sbredis_python_us": (time.process_time() - t0) / (k - 1) * 1e6}
            finally:
                transport._run_once = real
            for name in ops:
                c = calls[{"send": "send", "receive": "receive", "complete": "complete"}[name]]
                t0 = time.process_time()
                raw_call = Call(Script("raw", RAW_SCRIPT, self.sha), c.keys, c.args, c.partition, c.gen)
                for _ in range(k):
                    transport._evalsha(transport.redis, raw_call)
                out[name]["redis_py_us"] = (time.process_time() - t0) / k * 1e6
            for m in got:  # settle what the stubbed calls left locked
                if not m.settled:
                    rc.abandon_message(m)
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
        self.client_sleeping.close()


# (name, raw counterpart names, what the loop is)
ON_CONN = "raw EVALSHA on a connection"
LOOPS: list[tuple[str, list[str], str]] = [
    (
        "sync iterate",
        ["raw EVALSHA (sync)", "raw HSET (sync)", f"{ON_CONN} (sync)", f"{ON_CONN}, polled (sync)"],
        "for msg in receiver: complete_message(msg)",
    ),
    (
        "sync iterate, reply_poll_time=0",
        ["raw EVALSHA (sync)", f"{ON_CONN} (sync)"],
        "the same, the client sleeping until each reply arrives",
    ),
    (
        "async iterate",
        ["raw EVALSHA (async)", "raw HSET (async)", f"{ON_CONN} (async)", f"{ON_CONN}, polled (async)"],
        "async for msg in receiver: complete_message",
    ),
    (
        "async iterate, reply_poll_time=0",
        ["raw EVALSHA (async)", f"{ON_CONN} (async)"],
        "the same, the event loop sleeping until each reply arrives",
    ),
    ("async receive 100, complete one at a time", ["raw HSET (async)"], "await complete_message per message"),
    ("async receive 100, gather completes", ["raw gather of 100 HSET (async)"], "asyncio.gather"),
    ("async receive 100, complete_messages(list)", ["raw pipeline of 100 HSET (async)"], "one call per batch"),
]


# --only: the loops run (the first against the second: the ratio printed)
ONLY = {
    "sync": [
        "sync iterate",
        "raw EVALSHA (sync)",
        "raw HSET (sync)",
        "sync iterate, reply_poll_time=0",
        f"{ON_CONN} (sync)",
        f"{ON_CONN}, polled (sync)",
    ],
    "async": [
        "async iterate",
        "raw EVALSHA (async)",
        "raw HSET (async)",
        "async iterate, reply_poll_time=0",
        f"{ON_CONN} (async)",
        f"{ON_CONN}, polled (async)",
    ],
}


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
    ap.add_argument("--only", choices=list(ONLY), help="one iterating loop and its raw counterparts alone")
    ap.add_argument(
        "--reply-poll-time", type=float, help="the sbredis clients' reply_poll_time (default: the client's default)"
    )
    args = ap.parse_args(argv)
    n, ops, rounds = (500, 200, 2) if args.quick else (args.messages, args.latency_ops, args.rounds)

    load_before = os.getloadavg()
    server = None
    url = args.url
    if url is None:
        from tests.redis_server import RedisServer

        server = RedisServer().start()
        url = server.url
    try:
        from bench_core import machine_info

        b = Bench(url, n, ops, args.reply_poll_time)
        runs: dict[str, Callable[[], float]] = {
            "sync iterate": b.sync_iterate,
            "raw EVALSHA (sync)": b.raw_evalsha,
            "raw HSET (sync)": b.raw_hset,
            "sync iterate, reply_poll_time=0": lambda: b.sync_iterate(b.client_sleeping),
            f"{ON_CONN} (sync)": lambda: b.raw_on_connection(0.0),
            f"{ON_CONN}, polled (sync)": lambda: b.raw_on_connection(b.poll),
            "async iterate": lambda: b.run_async(b.async_iterate),
            "raw EVALSHA (async)": lambda: b.run_async(b.araw_evalsha),
            "raw HSET (async)": lambda: b.run_async(b.araw_hset),
            "async iterate, reply_poll_time=0": lambda: b.run_async(lambda: b.async_iterate(reply_poll_time=0)),
            f"{ON_CONN} (async)": lambda: b.run_async(lambda: b.araw_on_connection(0.0)),
            f"{ON_CONN}, polled (async)": lambda: b.run_async(lambda: b.araw_on_connection(b.poll)),
            "async receive 100, complete one at a time": lambda: b.run_async(b.batch_one_at_a_time),
            "async receive 100, gather completes": lambda: b.run_async(b.batch_gather),
            "raw gather of 100 HSET (async)": lambda: b.run_async(b.araw_gather_hset),
            "async receive 100, complete_messages(list)": lambda: b.run_async(b.batch_list),
            "raw pipeline of 100 HSET (async)": lambda: b.run_async(b.araw_pipeline_hset),
        }
        if args.only:
            runs = {k: v for k, v in runs.items() if k in ONLY[args.only]}
        rates: dict[str, list[float]] = {k: [] for k in runs}
        cpus: dict[str, list[tuple[float, float]]] = {k: [] for k in runs}
        lat: dict[str, dict[str, list[float]]] = {}
        prof: dict[str, dict[str, list[float]]] = {}
        try:
            for r in range(rounds):
                for name, fn in runs.items():
                    rates[name].append(fn())
                    cpus[name].append(b.cpu)
                    print(
                        f"round {r + 1}/{rounds}  {name:45s} {rates[name][-1]:9,.0f} msgs/s  "
                        f"CPU/msg client {b.cpu[0]:6.1f} µs server {b.cpu[1]:6.1f} µs",
                        flush=True,
                    )
                if args.only:
                    continue
                times, cpu = b.latency()
                for op, xs in times.items():
                    d = lat.setdefault(op, {"p50": [], "p99": [], "cpu_client": [], "cpu_server": [], "command": []})
                    d["p50"].append(pct(xs, 0.5))
                    d["p99"].append(pct(xs, 0.99))
                    d["cpu_client"].append(cpu[op][0])
                    d["cpu_server"].append(cpu[op][1])
                    d["command"].append(cpu[op][2])
                for op, parts in b.profile().items():
                    for part, us in parts.items():
                        prof.setdefault(op, {}).setdefault(part, []).append(us)
            info = {**machine_info(b.r), "load_average_before": load_before, "load_average_after": os.getloadavg()}
        finally:
            b.cleanup()
    finally:
        if server is not None:
            server.stop()

    med = {k: statistics.median(v) for k, v in rates.items()}
    if args.only:
        for name in runs:
            client, server = (statistics.median(c[i] for c in cpus[name]) for i in (0, 1))
            print(
                f"{name:45s} | {med[name]:8,.0f} msgs/s | spread {spread(rates[name]):4.0f}% "
                f"| CPU µs/msg {client:.1f} / {server:.1f}"
            )
        for loop, raws, _ in LOOPS:
            for raw in raws if loop in runs else []:
                by_cpu = sum(statistics.median(c[i] for c in cpus[raw]) for i in (0, 1)) / sum(
                    statistics.median(c[i] for c in cpus[loop]) for i in (0, 1)
                )
                print(f"{loop} / {raw}: {med[loop] / med[raw]:.2f}x by rate, {by_cpu:.2f}x by CPU")
        return 0
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
            "cpu_us_per_msg": {
                "client": statistics.median(c for c, _ in cpus[name]),
                "server": statistics.median(sv for _, sv in cpus[name]),
            },
            "raw": {
                raw: {
                    "rounds": rates[raw],
                    "median_per_s": med[raw],
                    "spread_pct": spread(rates[raw]),
                    "cpu_us_per_op": {
                        "client": statistics.median(c for c, _ in cpus[raw]),
                        "server": statistics.median(sv for _, sv in cpus[raw]),
                    },
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
            "cpu_us_client": statistics.median(d["cpu_client"]),
            "cpu_us_server": statistics.median(d["cpu_server"]),
            "command_us": statistics.median(d["command"]),
        }
        for op, d in lat.items()
    }
    # where a single operation's p50 goes: client CPU (sbredis's Python, redis-py), the script's
    # (or command's) execution in Redis, and the rest (socket round trip, the server's network
    # handling, scheduling on the loaded machine)
    profile: dict[str, dict[str, float]] = {}
    for op, raw in COMPARABLE.items():
        parts = {part: statistics.median(xs) for part, xs in prof[op].items()}
        p50_us = latency[op]["p50_ms"] * 1e3
        parts["script_us"] = latency[op]["command_us"]
        parts["rest_us"] = p50_us - parts["sbredis_python_us"] - parts["redis_py_us"] - parts["script_us"]
        parts["p50_us"] = p50_us
        rp50 = latency[raw]["p50_ms"] * 1e3
        parts[f"{raw} p50_us"] = rp50
        parts[f"{raw} client_cpu_us"] = latency[raw]["cpu_us_client"]
        parts[f"{raw} command_us"] = latency[raw]["command_us"]
        profile[op] = parts
    raw_p50 = latency["raw EVALSHA"]["p50_ms"]
    print()
    print(
        f"{'single operation':16s} | {'p50 ms':>7s} | {'p99 ms':>7s} | CPU µs client, server "
        "| p50 / raw EVALSHA p50 | p50 / comparable raw p50"
    )
    for op, d in latency.items():
        d["vs_raw_evalsha_p50"] = d["p50_ms"] / raw_p50
        vs = ""
        if op in COMPARABLE:
            raw = COMPARABLE[op]
            d["comparable_raw"] = raw
            d["vs_comparable_raw_p50"] = d["p50_ms"] / latency[raw]["p50_ms"]
            vs = f"{d['vs_comparable_raw_p50']:.2f}x {raw}"
        print(
            f"{op:16s} | {d['p50_ms']:7.3f} | {d['p99_ms']:7.3f} | "
            f"{d['cpu_us_client']:6.1f}, {d['cpu_us_server']:6.1f} | {d['vs_raw_evalsha_p50']:.2f}x | {vs}"
        )
    out = {
        "messages_per_loop": n,
        "latency_ops": ops,
        "rounds": rounds,
        "reply_poll_time": b.poll,
        "loops": loops,
        "latency": latency,
        "profile": profile,
        "machine": info,
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(out, indent=2) + "\n")
    print(f"\nwritten to {RESULTS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
