#!/usr/bin/env python
"""sbredis next to raw redis-py and to what users would pick instead, on one local redis-server.

    python bench/bench_peers.py [--quick] [--only raw,sbredis,celery,...] [--payloads 256,4096]

One run starts a private redis-server (tests/redis_server.py) and measures, for 256 B and 4 KiB
payloads and a no-op consumer:

  * raw redis-py and sbredis in this process: batched send (x100), concurrent single sends on
    asyncio (C in flight), receive 100 + complete over a prefilled queue;
  * every system end to end: a producer in this process (BullMQ: a node process) sends N messages
    as fast as it can while a real worker subprocess consumes them; msgs/s = N / (last message
    handled by the worker - first send). Then a paced producer at 50 % of that rate: p50/p99 of
    (consumer's receive time - send time).
  * Redis commands per message (INFO commandstats deltas, commands run inside Lua scripts
    included), Lua script calls per message and redis-server CPU per message (INFO cpu).

Peers (pip install -r bench/requirements-peers.txt; BullMQ: npm install in bench/bullmq): Celery on
kombu's Redis transport, Dramatiq's RedisBroker, RQ (SimpleWorker), saq, BullMQ. A peer that is
not installed is skipped with a note. Results: bench/results/peers.json (see bench/README.md).

Internal: ``bench_peers.py _worker SYSTEM --url URL --queue Q --dir D`` runs one worker.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import importlib.metadata
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
for _p in (str(BENCH), str(ROOT)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

import redis  # noqa: E402
from bench_core import fmt_rate, machine_info, median, pct, spread, xread_entries  # noqa: E402

from sbredis import ServiceBusClient, ServiceBusMessage  # noqa: E402
from sbredis.management import ServiceBusAdministrationClient  # noqa: E402

RESULTS = BENCH / "results" / "peers.json"
BULLMQ_DIR = BENCH / "bullmq"
BATCH = 100  # chunk size of every producer that has a batch API, and of every receive
SYSTEMS = ("raw", "sbredis", "celery", "dramatiq", "rq", "saq", "bullmq")
PEERS = ("celery", "dramatiq", "rq", "saq", "bullmq")
LUA_CMDS = {"eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro"}
pc = time.perf_counter

# Targets (printed as PASS/MISS, never asserted).
T_ASYNC_SENDS = 30_000  # async concurrent single sends, msgs/s
T_RATIO = {"celery": 5.0, "dramatiq": 3.0, "rq": 10.0, "bullmq": 1.0}  # sbredis e2e / peer e2e >= (bullmq: >)
T_P99_MS = 5.0  # sbredis e2e p99 at 50 % load

# What each system's consumer and producer are, for the table and the JSON.
SETUP = {
    "raw": "producer: pipeline of 100 XADD; worker: XREADGROUP COUNT 100 BLOCK + pipelined XACK+XDEL",
    "sbredis": "producer: sync send_messages(100 messages); worker: sync PEEK_LOCK "
    "receive_messages(100) + complete_messages; queue of 1 partition, max_message_size_in_kilobytes=1024",
    "celery": "producer: task.delay() per message; worker: celery worker {celery_pool_text}, "
    "task_acks_late=True, no result backend, other options default (prefetch multiplier 4)",
    "dramatiq": "producer: actor.send() per message; worker: dramatiq.Worker (what the CLI runs per "
    "process), 1 process, {dramatiq_threads} threads, default middleware",
    "rq": "producer: Queue.enqueue_many(100, result_ttl=0); worker: rq SimpleWorker (runs jobs in the "
    "worker process: RQ's default Worker forks per job), 1 process",
    "saq": "producer: 100 queue.enqueue() at once (asyncio.gather), ttl=-1 (job deleted when done); "
    "worker: saq.Worker, concurrency {saq_concurrency}",
    "bullmq": "producer (node): Queue.addBulk(100 jobs), removeOnComplete/removeOnFail; "
    "worker (node): bullmq Worker, concurrency {bullmq_concurrency}",
}


# =========================================================================== worker side
class Recorder:
    """Counts handled messages per round in a worker; writes <dir>/<round>.json when one is complete.

    A message carries (send time, round id, round size); the worker records receive time - send
    time. The file is written once per round, so the bench adds no Redis command per message.
    """

    def __init__(self, out_dir: str | Path) -> None:
        self.dir = Path(out_dir)
        self.lock = threading.Lock()
        self.rounds: dict[str, list[Any]] = {}

    def hit(self, sent: float, rnd: str, total: int, now: float | None = None) -> list[float] | None:
        """Record one message; returns the round's latencies when it was the round's last one."""
        if now is None:
            now = time.time()
        with self.lock:
            st = self.rounds.get(rnd)
            if st is None:
                st = self.rounds[rnd] = [0, []]
            st[0] += 1
            st[1].append(now - sent)
            if st[0] < total:
                return None
            del self.rounds[rnd]
            return st[1]

    def write(self, rnd: str, lat: list[float]) -> None:
        path = self.dir / f"{rnd}.json"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"n": len(lat), "last": time.time(), "lat": [round(x, 7) for x in lat]}))
        tmp.replace(path)

    def task(self, sent: float, rnd: str, total: int) -> None:
        """The no-op task body of the peers: record, and write the round file after its last message."""
        lat = self.hit(sent, rnd, total)
        if lat is not None:
            self.write(rnd, lat)


REC: Recorder | None = None  # set in a worker process


def _rec() -> Recorder:
    global REC
    if REC is None:
        REC = Recorder(os.environ["BENCH_PEERS_DIR"])
    return REC


def rq_task(payload: str, sent: float, rnd: str, total: int) -> None:
    """RQ's no-op job (imported by the RQ worker as bench_peers.rq_task)."""
    _rec().task(sent, rnd, total)


def celery_app(url: str, queue: str) -> tuple[Any, Any]:
    from celery import Celery

    app = Celery("bench_peers", broker=url, set_as_current=False)
    app.conf.update(
        task_acks_late=True,
        task_ignore_result=True,
        task_default_queue=queue,
        broker_connection_retry_on_startup=True,
        worker_hijack_root_logger=False,
    )

    @app.task(name="bench.noop")
    def noop(payload: str, sent: float, rnd: str, total: int) -> None:
        _rec().task(sent, rnd, total)

    return app, noop


def dramatiq_actor(url: str, queue: str) -> tuple[Any, Any]:
    import dramatiq
    from dramatiq.brokers.redis import RedisBroker

    broker = RedisBroker(url=url)
    dramatiq.set_broker(broker)

    def noop(payload: str, sent: float, rnd: str, total: int) -> None:
        _rec().task(sent, rnd, total)

    return broker, dramatiq.actor(noop, actor_name="noop", queue_name=queue, broker=broker)


async def saq_noop(ctx: Any, *, payload: str, sent: float, rnd: str, total: int) -> None:
    _rec().task(sent, rnd, total)


def run_worker(system: str, url: str, queue: str, out_dir: str, concurrency: int) -> int:
    """One worker process (the `_worker` subcommand)."""
    os.environ["BENCH_PEERS_DIR"] = out_dir
    rec = _rec()
    if system == "raw":
        r = redis.Redis.from_url(url)
        while True:
            entries = xread_entries(r.xreadgroup("g", "c", {queue: ">"}, count=BATCH, block=1000))
            if not entries:
                continue
            now = time.time()
            ids, done = [], []
            for eid, f in entries:
                f[b"b"]
                ids.append(eid)
                lat = rec.hit(float(f[b"t"]), f[b"r"].decode(), int(f[b"n"]), now)
                if lat is not None:
                    done.append((f[b"r"].decode(), lat))
            with r.pipeline(transaction=False) as p:
                p.xack(queue, "g", *ids)
                p.xdel(queue, *ids)
                p.execute()
            for rnd, lat in done:
                rec.write(rnd, lat)
    if system == "sbredis":
        client = ServiceBusClient.from_connection_string(url)
        with client.get_queue_receiver(queue) as receiver:
            while True:
                msgs = receiver.receive_messages(BATCH, max_wait_time=1)
                if not msgs:
                    continue
                now = time.time()
                done = []
                for m in msgs:
                    m.body_bytes  # noqa: B018 - the consumer reads the body
                    props = m.sent_application_properties or {}
                    lat = rec.hit(props["ts"], props["r"], props["n"], now)
                    if lat is not None:
                        done.append((props["r"], lat))
                receiver.complete_messages(msgs)
                for rnd, lat in done:
                    rec.write(rnd, lat)
    if system == "celery":
        app, _ = celery_app(url, queue)
        pool = ["--pool=solo"] if concurrency <= 1 else ["--pool=threads", f"--concurrency={concurrency}"]
        app.worker_main(["worker", *pool, "--loglevel=WARNING", "-Q", queue])
        return 0
    if system == "dramatiq":
        from dramatiq import Worker

        broker, _ = dramatiq_actor(url, queue)
        worker = Worker(broker, worker_threads=concurrency)
        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        worker.start()
        stop.wait()
        worker.stop()
        return 0
    if system == "rq":
        from rq import Queue, SimpleWorker

        conn = redis.Redis.from_url(url)
        w = SimpleWorker([Queue(queue, connection=conn)], connection=conn)
        w.work(logging_level="WARNING", with_scheduler=False)
        return 0
    if system == "saq":
        from saq import Queue as SaqQueue
        from saq import Worker as SaqWorker

        async def main() -> None:
            q = SaqQueue.from_url(url, name=queue)
            w = SaqWorker(q, functions=[("noop", saq_noop)], concurrency=concurrency)
            loop = asyncio.get_running_loop()
            task = asyncio.ensure_future(w.start())
            loop.add_signal_handler(signal.SIGTERM, task.cancel)
            with contextlib.suppress(asyncio.CancelledError):
                await task

        asyncio.run(main())
        return 0
    raise SystemExit(f"unknown worker {system}")


# =========================================================================== producers (bench side)
def payload_str(size: int) -> str:
    """The same ASCII payload for every system (a str: Celery, Dramatiq and saq serialize JSON)."""
    return ("0123456789abcdef" * (size // 16 + 1))[:size]


class Producer:
    """Sends `k` messages of one round now; ts is taken before the call (per chunk for batch APIs)."""

    def send(self, payload: str, rnd: str, total: int, k: int) -> None:
        raise NotImplementedError

    def close(self) -> None:
        pass


class RawProducer(Producer):
    def __init__(self, url: str, key: str) -> None:
        self.r = redis.Redis.from_url(url)
        self.key = key

    def send(self, payload: str, rnd: str, total: int, k: int) -> None:
        fields = {b"b": payload.encode(), b"t": repr(time.time()), b"r": rnd, b"n": total}
        with self.r.pipeline(transaction=False) as p:
            for _ in range(k):
                p.xadd(self.key, fields)
            p.execute()

    def close(self) -> None:
        self.r.close()


class SbProducer(Producer):
    def __init__(self, url: str, queue: str) -> None:
        self.client = ServiceBusClient.from_connection_string(url)
        self.sender = self.client.get_queue_sender(queue)

    def send(self, payload: str, rnd: str, total: int, k: int) -> None:
        props = {"ts": time.time(), "r": rnd, "n": total}
        body = payload.encode()
        self.sender.send_messages([ServiceBusMessage(body, application_properties=props) for _ in range(k)])

    def close(self) -> None:
        self.client.close()


class CeleryProducer(Producer):
    def __init__(self, url: str, queue: str) -> None:
        self.app, self.task = celery_app(url, queue)

    def send(self, payload: str, rnd: str, total: int, k: int) -> None:
        for _ in range(k):
            self.task.delay(payload, time.time(), rnd, total)

    def close(self) -> None:
        self.app.close()


class DramatiqProducer(Producer):
    def __init__(self, url: str, queue: str) -> None:
        self.broker, self.actor = dramatiq_actor(url, queue)

    def send(self, payload: str, rnd: str, total: int, k: int) -> None:
        for _ in range(k):
            self.actor.send(payload, time.time(), rnd, total)

    def close(self) -> None:
        self.broker.close()


class RqProducer(Producer):
    def __init__(self, url: str, queue: str) -> None:
        from rq import Queue

        self.conn = redis.Redis.from_url(url)
        self.q = Queue(queue, connection=self.conn)

    def send(self, payload: str, rnd: str, total: int, k: int) -> None:
        from rq import Queue

        ts = time.time()
        jobs = [
            Queue.prepare_data("bench_peers.rq_task", args=(payload, ts, rnd, total), result_ttl=0) for _ in range(k)
        ]
        self.q.enqueue_many(jobs)

    def close(self) -> None:
        self.conn.close()


class SaqProducer(Producer):
    def __init__(self, url: str, queue: str) -> None:
        from saq import Queue

        self.loop = asyncio.new_event_loop()
        self.q = Queue.from_url(url, name=queue)
        self.loop.run_until_complete(self.q.connect())

    def send(self, payload: str, rnd: str, total: int, k: int) -> None:
        async def go() -> None:
            q = self.q
            await asyncio.gather(
                *(q.enqueue("noop", payload=payload, sent=time.time(), rnd=rnd, total=total, ttl=-1) for _ in range(k))
            )

        self.loop.run_until_complete(go())

    def close(self) -> None:
        self.loop.run_until_complete(self.q.disconnect())
        self.loop.close()


def produce(prod: Producer, payload: str, rnd: str, n: int, rate: float | None) -> tuple[float, float]:
    """Send n messages (rate None: as fast as possible, else paced); returns (first, end) epoch times."""
    sent = 0
    first = time.time()
    t0 = pc()
    while sent < n:
        if rate is None:
            k = min(BATCH, n - sent)
        else:
            due = min(n, int((pc() - t0) * rate) + 1) - sent
            if due <= 0:
                time.sleep(0.0002)
                continue
            k = min(BATCH, due)
        prod.send(payload, rnd, n, k)
        sent += k
    return first, time.time()


# =========================================================================== server counters
def snapshot(r: redis.Redis) -> tuple[dict[str, int], float]:
    stats = r.info("commandstats")
    cpu = r.info("cpu")
    calls = {k.removeprefix("cmdstat_"): int(v["calls"]) for k, v in stats.items()}
    return calls, float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"])


def server_delta(s0: tuple[dict[str, int], float], s1: tuple[dict[str, int], float], n: int) -> dict[str, Any]:
    """Per message: Redis commands (inside scripts included), script calls, server CPU."""
    d = {k: v - s0[0].get(k, 0) for k, v in s1[0].items() if k != "info"}
    d = {k: v for k, v in d.items() if v > 0}
    n = max(1, n)
    top = sorted(d.items(), key=lambda kv: -kv[1])[:10]
    return {
        "cmds_per_msg": sum(d.values()) / n,
        "lua_per_msg": sum(v for k, v in d.items() if k in LUA_CMDS) / n,
        "cpu_us_per_msg": (s1[1] - s0[1]) * 1e6 / n,
        "top_cmds_per_msg": {k: round(v / n, 4) for k, v in top},
    }


def med_server(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """Median of the per-round server figures (top commands from the median-CPU round)."""
    if not rounds:
        return {}
    out = {k: median([r[k] for r in rounds]) for k in ("cmds_per_msg", "lua_per_msg", "cpu_us_per_msg")}
    mid = sorted(rounds, key=lambda r: r["cpu_us_per_msg"])[len(rounds) // 2]
    out["top_cmds_per_msg"] = mid["top_cmds_per_msg"]
    return out


# =========================================================================== the bench
class Bench:
    def __init__(self, url: str, args: argparse.Namespace) -> None:
        self.url = url
        self.args = args
        self.quick = args.quick
        self.r = redis.Redis.from_url(url)
        self.admin = ServiceBusAdministrationClient.from_connection_string(url)
        self.tag = uuid.uuid4().hex[:8]
        self.tmp = Path(tempfile.mkdtemp(prefix="bench-peers-"))
        self.round_s = args.round_seconds
        self.rounds = args.rounds
        self.notes: list[str] = []
        self.sb_load: dict[int, float] = {}  # payload size -> sbredis's 50 % load (msgs/s)

    def close(self) -> None:
        self.admin.close()
        self.r.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def log(self, text: str) -> None:
        print(text, flush=True)

    def sb_queue(self, name: str) -> str:
        q = f"bench-{self.tag}-{name}"
        with contextlib.suppress(Exception):
            self.admin.delete_queue(q)
        # 100 messages of 4 KiB (with their properties) are over the default 256 KiB batch limit
        self.admin.create_queue(q, max_size_in_megabytes=1 << 16, max_message_size_in_kilobytes=1024)
        return q

    def calibrate(self, fn: Callable[[int], float], start: int, min_s: float) -> float:
        """Rate (items/s) of fn(n) -> seconds, doubling n from `start` until a call takes min_s."""
        n = start
        while True:
            spent = fn(n)
            if spent >= min_s or n >= 1_000_000:
                return n / max(spent, 1e-9)
            n *= 2 if spent > min_s / 8 else 4

    def size_for(self, rate: float, seconds: float, lo: int = 200, hi: int = 400_000) -> int:
        n = int(rate * seconds)
        return max(lo, min(hi, (n // BATCH) * BATCH or lo))

    # ----------------------------------------------------------------- in-process rows (raw, sbredis)
    def components(self, system: str, size: int) -> dict[str, Any]:
        """Batched send, async concurrent single sends, receive + complete: `rounds` rounds each.

        Every row function fn(n) sends or drains n messages and returns the seconds of its timed
        part; `win` takes the server counters around that part only (not the prefill or cleanup).
        """
        payload = payload_str(size)
        body = payload.encode()
        conc = self.args.concurrency
        win = Window(self.r)
        if system == "raw":
            rows = raw_rows(self.r, self.url, f"bench:{self.tag}:c{size}", body, conc, win)
            close: Callable[[], None] = lambda: None  # noqa: E731
        else:
            rows, close = sb_rows(self.url, self.sb_queue(f"c{size}"), body, conc, win)
        out: dict[str, Any] = {}
        try:
            for name, fn in rows.items():
                rate0 = self.calibrate(fn, 1000, 0.05 if self.quick else 0.2)
                n = self.size_for(rate0, self.round_s, lo=1000)
                rates, srv = [], []
                for _ in range(self.rounds):
                    rates.append(n / fn(n))
                    srv.append(win.delta(n))
                out[name] = {
                    "rounds": rates,
                    "msgs_per_round": n,
                    "median": median(rates),
                    "spread_pct": spread(rates),
                    **({"concurrency": conc} if name == "async_concurrent_sends" else {}),
                    **med_server(srv),
                }
                self.log(f"    {size:>5} B {name}: {fmt_rate(median(rates))} (spread {spread(rates):.0f}%)")
        finally:
            close()
        return out

    # ----------------------------------------------------------------- end to end (every system)
    def e2e(self, system: str, sizes: list[int]) -> dict[str, Any]:
        queue = f"bench-{self.tag}-{system}"
        wdir = self.tmp / system
        wdir.mkdir()
        if system == "sbredis":
            queue = self.sb_queue("e2e")
        if system == "raw":
            queue = f"bench:{self.tag}:e2e"
            self.r.xgroup_create(queue, "g", id="0", mkstream=True)
        proc, logf = self.start_worker(system, queue, wdir)
        prod = None if system == "bullmq" else make_producer(system, self.url, queue)
        out: dict[str, Any] = {}
        try:
            # readiness: a small round, with time for the worker to start
            self.round(system, prod, queue, proc, logf, wdir, 20, None, payload_str(256), timeout=90)
            for size in sizes:
                payload = payload_str(size)

                def once(n: int, payload: str = payload) -> float:
                    res = self.round(system, prod, queue, proc, logf, wdir, n, None, payload)
                    return res["elapsed"]

                rate0 = self.calibrate(once, 100, 0.1 if self.quick else 0.4)
                n = self.size_for(rate0, self.round_s, lo=100)
                rounds = [
                    self.round(system, prod, queue, proc, logf, wdir, n, None, payload) for _ in range(self.rounds)
                ]
                rates = [x["rate"] for x in rounds]
                max_rate = median(rates)
                load = max_rate / 2
                nl = max(100, int(load * self.args.latency_seconds))

                def paced(rate: float, payload: str = payload, nl: int = nl) -> dict[str, Any]:
                    """`rounds` paced runs: p50/p99 per run, and the medians over the runs."""
                    runs = []
                    for _ in range(self.rounds):
                        res = self.round(system, prod, queue, proc, logf, wdir, nl, rate, payload)
                        ms = latencies_ms(res)
                        runs.append({"achieved": res["rate"], "n": len(ms), "p50": pct(ms, 50), "p99": pct(ms, 99)})
                    return {
                        "p50_ms": median([r["p50"] for r in runs]),
                        "p99_ms": median([r["p99"] for r in runs]),
                        "runs": runs,
                    }

                lat = paced(load)
                out[str(size)] = {
                    "e2e_rounds": rates,
                    "e2e_msgs_per_round": n,
                    "e2e_median": max_rate,
                    "e2e_spread_pct": spread(rates),
                    "enqueue_median": median([x["enqueue_rate"] for x in rounds]),
                    **med_server([x["server"] for x in rounds]),
                    "latency_load_msgs_per_s": load,
                    "latency_msgs_per_run": nl,
                    "p50_ms": lat["p50_ms"],
                    "p99_ms": lat["p99_ms"],
                    "latency_runs": lat["runs"],
                }
                if system == "sbredis":
                    self.sb_load[size] = load
                elif system == "raw" and size in self.sb_load:
                    # control: raw redis-py paced at sbredis's 50 % load, to tell the machine's
                    # scheduling noise from sbredis's own cost in the p99
                    ctl = paced(self.sb_load[size])
                    out[str(size)].update(
                        sbredis_load_msgs_per_s=self.sb_load[size],
                        p50_ms_at_sbredis_load=ctl["p50_ms"],
                        p99_ms_at_sbredis_load=ctl["p99_ms"],
                        control_runs=ctl["runs"],
                    )
                self.log(
                    f"    {size:>5} B: {fmt_rate(max_rate)} e2e (spread {spread(rates):.0f}%), "
                    f"p50 {lat['p50_ms']:.2f} ms, p99 {lat['p99_ms']:.2f} ms at {fmt_rate(load)}"
                )
        finally:
            if prod is not None:
                with contextlib.suppress(Exception):
                    prod.close()
            self.stop_worker(proc)
            logf.close()
        return out

    def round(
        self,
        system: str,
        prod: Producer | None,
        queue: str,
        proc: subprocess.Popen[bytes],
        logf: Any,
        wdir: Path,
        n: int,
        rate: float | None,
        payload: str,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        rnd = uuid.uuid4().hex[:12]
        gc.collect()
        s0 = snapshot(self.r)
        if prod is None:
            first, end = bullmq_produce(self.url, queue, len(payload), rnd, n, rate or 0)
        else:
            first, end = produce(prod, payload, rnd, n, rate)
        if timeout is None:
            timeout = 60 + n / 200
        res = wait_done(wdir / f"{rnd}.json", proc, logf, timeout)
        s1 = snapshot(self.r)
        elapsed = max(1e-6, res["last"] - first)
        return {
            "elapsed": elapsed,
            "rate": n / elapsed,
            "enqueue_rate": n / max(1e-6, end - first),
            "lat": res["lat"],
            "server": server_delta(s0, s1, n),
        }

    def start_worker(self, system: str, queue: str, wdir: Path) -> tuple[subprocess.Popen[bytes], Any]:
        logf = open(wdir / "worker.log", "w+b")  # noqa: SIM115 - closed in e2e()
        env = dict(os.environ, BENCH_PEERS_DIR=str(wdir), PYTHONUNBUFFERED="1")
        env["PYTHONPATH"] = os.pathsep.join([str(BENCH), str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        if system == "bullmq":
            conc = str(self.args.bullmq_concurrency)
            cmd = ["node", str(BULLMQ_DIR / "bench.js"), "worker", self.url, queue, str(wdir), conc]
        else:
            conc = {
                "celery": self.args.celery_threads,
                "dramatiq": self.args.dramatiq_threads,
                "saq": self.args.saq_concurrency,
            }.get(system, 1)
            cmd = [sys.executable, str(BENCH / "bench_peers.py"), "_worker", system]
            cmd += ["--url", self.url, "--queue", queue, "--dir", str(wdir), "--concurrency", str(conc)]
        proc = subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT, env=env, cwd=str(BENCH))
        return proc, logf

    @staticmethod
    def stop_worker(proc: subprocess.Popen[bytes]) -> None:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)


class Window:
    """Server counters around the timed part of a round (`with win:`); delta(n) gives per-message figures."""

    def __init__(self, r: redis.Redis) -> None:
        self.r = r
        self.s0: tuple[dict[str, int], float] = ({}, 0.0)
        self.s1: tuple[dict[str, int], float] = ({}, 0.0)

    def __enter__(self) -> Window:
        gc.collect()
        self.s0 = snapshot(self.r)
        return self

    def __exit__(self, *exc: object) -> None:
        self.s1 = snapshot(self.r)

    def delta(self, n: int) -> dict[str, Any]:
        return server_delta(self.s0, self.s1, n)


def raw_rows(
    r: redis.Redis, url: str, key: str, body: bytes, conc: int, win: Window
) -> dict[str, Callable[[int], float]]:
    """Raw redis-py rows: pipelined XADD x100, async single XADDs, XREADGROUP COUNT 100 + XACK/XDEL."""
    fields = {b"b": body, b"t": repr(time.time()), b"r": "x", b"n": 0}

    def xadds(n: int) -> None:
        for _ in range(n // BATCH):
            with r.pipeline(transaction=False) as p:
                for _ in range(BATCH):
                    p.xadd(key, fields)
                p.execute()

    def send(n: int) -> float:
        r.unlink(key)
        with win:
            t0 = pc()
            xadds(n)
            spent = pc() - t0
        r.unlink(key)
        return spent

    def asend(n: int) -> float:
        r.unlink(key)
        spent = asyncio.run(raw_async_sends(url, key, fields, n, conc, win))
        r.unlink(key)
        return spent

    def drain(n: int) -> float:
        r.unlink(key)
        r.xgroup_create(key, "g", id="0", mkstream=True)
        xadds(n)
        done = 0
        with win:
            t0 = pc()
            while done < n:
                entries = xread_entries(r.xreadgroup("g", "c", {key: ">"}, count=BATCH))
                if not entries:
                    break
                ids = []
                for eid, f in entries:
                    f[b"b"]
                    ids.append(eid)
                with r.pipeline(transaction=False) as p:
                    p.xack(key, "g", *ids)
                    p.xdel(key, *ids)
                    p.execute()
                done += len(ids)
            spent = pc() - t0
        r.unlink(key)
        return spent

    return {"batched_send": send, "async_concurrent_sends": asend, "receive_complete": drain}


def sb_rows(
    url: str, queue: str, body: bytes, conc: int, win: Window
) -> tuple[dict[str, Callable[[int], float]], Callable[[], None]]:
    """sbredis rows: send_messages(100), async single sends, receive_messages(100) + complete_messages."""
    client = ServiceBusClient.from_connection_string(url)
    sender = client.get_queue_sender(queue)
    receiver = client.get_queue_receiver(queue)
    props = {"ts": time.time(), "r": "x", "n": 0}

    def batch() -> list[ServiceBusMessage]:
        return [ServiceBusMessage(body, application_properties=props) for _ in range(BATCH)]

    def empty() -> None:
        while msgs := receiver.receive_messages(BATCH, wait=False):
            receiver.complete_messages(msgs)

    def send(n: int) -> float:
        spent = 0.0
        with win:  # message construction is outside the timer (and makes no Redis call)
            for _ in range(n // BATCH):
                msgs = batch()
                t0 = pc()
                sender.send_messages(msgs)
                spent += pc() - t0
        empty()
        return spent

    def asend(n: int) -> float:
        spent = asyncio.run(sb_async_sends(url, queue, body, props, n, conc, win))
        empty()
        return spent

    def drain(n: int) -> float:
        for _ in range(n // BATCH):
            sender.send_messages(batch())
        done = 0
        with win:
            t0 = pc()
            while done < n:
                msgs = receiver.receive_messages(BATCH, wait=False)
                if not msgs:
                    break
                for m in msgs:
                    m.body  # noqa: B018 - the consumer reads the body
                receiver.complete_messages(msgs)
                done += len(msgs)
            spent = pc() - t0
        if done < n:
            raise RuntimeError(f"received {done} of {n} prefilled messages")
        return spent

    def close() -> None:
        receiver.close()
        client.close()

    return {"batched_send": send, "async_concurrent_sends": asend, "receive_complete": drain}, close


async def raw_async_sends(url: str, key: str, fields: dict[bytes, Any], n: int, conc: int, win: Window) -> float:
    """n single XADDs on redis.asyncio, `conc` in flight (connections opened before the timer); seconds."""
    import redis.asyncio as aredis

    r = aredis.Redis.from_url(url)
    try:
        await asyncio.gather(*(r.xadd(key, fields) for _ in range(conc)))  # open `conc` connections
        counter = iter(range(n))

        async def one() -> None:
            for _ in counter:
                await r.xadd(key, fields)

        with win:
            t0 = pc()
            await asyncio.gather(*(one() for _ in range(conc)))
            spent = pc() - t0
        return spent
    finally:
        await r.aclose()


async def sb_async_sends(
    url: str, queue: str, body: bytes, props: dict[str, Any], n: int, conc: int, win: Window
) -> float:
    """n single `await sender.send_messages(m)`, `conc` of them in flight: `conc` coroutines started by
    asyncio.gather, each sending the next message in turn. Messages are built, entity metadata read
    and connections opened before the timer."""
    from sbredis.aio import ServiceBusClient as AioClient

    client = AioClient.from_connection_string(url)
    try:
        sender = client.get_queue_sender(queue)
        warm = [ServiceBusMessage(body, application_properties=props) for _ in range(conc)]
        await asyncio.gather(*(sender.send_messages(m) for m in warm))
        msgs = iter([ServiceBusMessage(body, application_properties=props) for _ in range(n)])

        async def one() -> None:
            for m in msgs:
                await sender.send_messages(m)

        with win:
            t0 = pc()
            await asyncio.gather(*(one() for _ in range(conc)))
            spent = pc() - t0
        return spent
    finally:
        await client.close()


def make_producer(system: str, url: str, queue: str) -> Producer:
    cls: dict[str, Callable[[str, str], Producer]] = {
        "raw": RawProducer,
        "sbredis": SbProducer,
        "celery": CeleryProducer,
        "dramatiq": DramatiqProducer,
        "rq": RqProducer,
        "saq": SaqProducer,
    }
    return cls[system](url, queue)


def bullmq_produce(url: str, queue: str, size: int, rnd: str, n: int, rate: float) -> tuple[float, float]:
    cmd = ["node", str(BULLMQ_DIR / "bench.js"), "produce", url, queue, str(size), rnd, str(n), str(rate), str(BATCH)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120 + n / 100, cwd=str(BULLMQ_DIR))
    if out.returncode != 0:
        raise RuntimeError(f"bullmq producer failed: {out.stderr.strip()[-2000:]}")
    times = json.loads(out.stdout.strip().splitlines()[-1])
    return float(times["first"]), float(times["end"])


def latencies_ms(res: dict[str, Any]) -> list[float]:
    """A paced round's latencies in ms, without the first 5 % (connections and caches warming up)."""
    lat = res["lat"]
    return [x * 1e3 for x in lat[len(lat) // 20 :]]


def wait_done(path: Path, proc: subprocess.Popen[bytes], logf: Any, timeout: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if proc.poll() is not None:
            raise RuntimeError(f"worker exited with {proc.returncode}: {log_tail(logf)}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"worker did not finish a round in {timeout:.0f}s: {log_tail(logf)}")
        time.sleep(0.002)
    data: dict[str, Any] = json.loads(path.read_text())
    path.unlink()
    return data


def log_tail(logf: Any, size: int = 3000) -> str:
    logf.flush()
    logf.seek(0)
    return logf.read().decode(errors="replace")[-size:].strip() or "(no output)"


# =========================================================================== availability, versions
def version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def node_versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {"node": None, "bullmq": None, "ioredis": None}
    node = shutil.which("node")
    if node:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            out["node"] = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=10).stdout.strip()
    for pkg in ("bullmq", "ioredis"):
        pj = BULLMQ_DIR / "node_modules" / pkg / "package.json"
        if pj.exists():
            out[pkg] = json.loads(pj.read_text()).get("version")
    return out


def ensure_bullmq(install: bool) -> str | None:
    """None when BullMQ can run, else why not (after trying `npm install` when allowed)."""
    if not shutil.which("node"):
        return "node is not on PATH"
    if (BULLMQ_DIR / "node_modules" / "bullmq").exists():
        return None
    if not install:
        return "bench/bullmq/node_modules is missing (run `npm install` in bench/bullmq)"
    npm = shutil.which("npm")
    if not npm:
        return "npm is not on PATH"
    print("  installing BullMQ: npm install in bench/bullmq ...", flush=True)
    try:
        res = subprocess.run(
            [npm, "install", "--no-audit", "--no-fund"], cwd=BULLMQ_DIR, capture_output=True, text=True, timeout=300
        )
    except (OSError, subprocess.SubprocessError) as e:
        return f"npm install failed: {e}"
    if res.returncode != 0:
        return f"npm install failed: {res.stderr.strip()[-500:]}"
    return None


def missing(system: str) -> str | None:
    mods = {"celery": "celery", "dramatiq": "dramatiq", "rq": "rq", "saq": "saq"}
    if system in mods:
        try:
            __import__(mods[system])
        except ImportError:
            return f"{system} is not installed (pip install -r bench/requirements-peers.txt)"
    return None


def cpu_model() -> str | None:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return None


# =========================================================================== report
def ratio_rows(systems: dict[str, Any], sizes: list[int]) -> dict[str, dict[str, float]]:
    """sbredis e2e / each system's e2e, per payload."""
    out: dict[str, dict[str, float]] = {}
    sb = systems.get("sbredis", {}).get("e2e", {})
    for name, data in systems.items():
        e2e = data.get("e2e") or {}
        for size in sizes:
            s = str(size)
            if s in e2e and s in sb:
                out.setdefault(name, {})[s] = sb[s]["e2e_median"] / e2e[s]["e2e_median"]
    return out


def targets(systems: dict[str, Any], sizes: list[int], ratios: dict[str, dict[str, float]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    sb = systems.get("sbredis", {})
    for size in sizes:
        s = str(size)
        comp = (sb.get("components") or {}).get(s, {})
        if "async_concurrent_sends" in comp:
            v = comp["async_concurrent_sends"]["median"]
            out.append(
                {
                    "target": f"async concurrent single sends >= {T_ASYNC_SENDS // 1000}k msgs/s",
                    "payload": size,
                    "measured": f"{fmt_rate(v)} ({comp['async_concurrent_sends']['concurrency']} in flight)",
                    "pass": v >= T_ASYNC_SENDS,
                }
            )
        for peer, want in T_RATIO.items():
            if s not in ratios.get(peer, {}):
                why = systems.get(peer, {}).get("skipped") or systems.get(peer, {}).get("error") or "not run"
                out.append({"target": target_text(peer, want), "payload": size, "measured": why, "pass": None})
                continue
            x = ratios[peer][s]
            ok = x > want if peer == "bullmq" else x >= want
            out.append({"target": target_text(peer, want), "payload": size, "measured": f"{x:.2f}x", "pass": ok})
        e2e = (sb.get("e2e") or {}).get(s)
        if e2e:
            out.append(
                {
                    "target": f"sbredis e2e p99 <= {T_P99_MS:g} ms at 50 % load",
                    "payload": size,
                    "measured": f"p99 {e2e['p99_ms']:.2f} ms (p50 {e2e['p50_ms']:.2f}) "
                    f"at {fmt_rate(e2e['latency_load_msgs_per_s'])}",
                    "pass": e2e["p99_ms"] <= T_P99_MS,
                    "control": control_text(systems, s),
                }
            )
    return out


def control_text(systems: dict[str, Any], s: str) -> str | None:
    raw = (systems.get("raw", {}).get("e2e") or {}).get(s, {})
    if "p99_ms_at_sbredis_load" not in raw:
        return None
    return (
        f"raw redis-py paced at the same {fmt_rate(raw['sbredis_load_msgs_per_s'])}: "
        f"p50 {raw['p50_ms_at_sbredis_load']:.2f} ms, p99 {raw['p99_ms_at_sbredis_load']:.2f} ms"
    )


def target_text(peer: str, want: float) -> str:
    if peer == "bullmq":
        return "sbredis e2e ahead of BullMQ (> 1x)"
    return f"sbredis e2e >= {want:g}x {peer}"


def table(head: tuple[str, ...], lines: list[tuple[str, ...]], left: tuple[int, ...] = (0,)) -> str:
    widths = [max(len(x[i]) for x in [head, *lines]) for i in range(len(head))]

    def fmt(cells: tuple[str, ...]) -> str:
        return " | ".join(
            c.ljust(w) if i in left else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    return "\n".join([fmt(head), "-+-".join("-" * w for w in widths), *(fmt(x) for x in lines)])


def size_label(size: int) -> str:
    return f"{size // 1024} KiB" if size >= 1024 and size % 1024 == 0 else f"{size} B"


def print_report(doc: dict[str, Any]) -> None:
    systems = doc["systems"]
    sizes = doc["payload_sizes"]
    comp_lines = []
    names = {
        "batched_send": "batched send x100 (sync)",
        "async_concurrent_sends": f"async concurrent single sends ({doc['concurrency']} in flight)",
        "receive_complete": "receive 100 + complete (prefilled)",
    }
    for size in sizes:
        s = str(size)
        sb = (systems.get("sbredis", {}).get("components") or {}).get(s, {})
        raw = (systems.get("raw", {}).get("components") or {}).get(s, {})
        for key, label in names.items():
            a, b = sb.get(key), raw.get(key)
            if not a and not b:
                continue
            comp_lines.append(
                (
                    label,
                    size_label(size),
                    fmt_rate(a["median"]) if a else "-",
                    fmt_rate(b["median"]) if b else "-",
                    f"{a['median'] / b['median']:.2f}x" if a and b else "-",
                    f"{a['spread_pct']:.0f}%" if a else "-",
                    f"{a['cmds_per_msg']:.2f} | {b['cmds_per_msg']:.2f}" if a and b else "-",
                    f"{a['cpu_us_per_msg']:.1f} | {b['cpu_us_per_msg']:.1f}" if a and b else "-",
                )
            )
    if comp_lines:
        print()
        print(
            table(
                (
                    "in-process (raw redis-py vs sbredis)",
                    "payload",
                    "sbredis",
                    "raw",
                    "sb/raw",
                    "sb spread",
                    "cmds/msg sb | raw",
                    "redis CPU us/msg sb | raw",
                ),
                comp_lines,
                left=(0,),
            )
        )
        print(
            "raw: pipeline of 100 XADD | redis.asyncio, one XADD per await, same number in flight |\n"
            "  XREADGROUP COUNT 100 + pipelined XACK+XDEL. Medians of the rounds; messages built before the timer."
        )
    ratios = doc["ratios_sbredis_over"]
    lines = []
    for size in sizes:
        s = str(size)
        for name in SYSTEMS:
            data = systems.get(name)
            if data is None:
                continue
            e = (data.get("e2e") or {}).get(s)
            if not e:
                what = (
                    "skipped (see notes)" if data.get("skipped") else "FAILED (see notes)" if data.get("error") else "-"
                )
                lines.append((name, size_label(size), what, *([""] * 8)))
                continue
            x = ratios.get(name, {}).get(s)
            lines.append(
                (
                    name,
                    size_label(size),
                    fmt_rate(e["e2e_median"]),
                    f"{e['e2e_spread_pct']:.0f}%",
                    fmt_rate(e["enqueue_median"]),
                    f"{e['p50_ms']:.2f}",
                    f"{e['p99_ms']:.2f}",
                    f"{e['cmds_per_msg']:.1f}",
                    f"{e['lua_per_msg']:.2f}",
                    f"{e['cpu_us_per_msg']:.1f}",
                    f"{x:.2f}x" if x is not None else "-",
                )
            )
    print()
    print(
        table(
            (
                "end to end",
                "payload",
                "msgs/s",
                "spread",
                "enqueue/s",
                "p50 ms",
                "p99 ms",
                "cmds/msg",
                "lua/msg",
                "CPU us/msg",
                "sbredis /",
            ),
            lines,
            left=(0, 1),
        )
    )
    print(
        "msgs/s: median of the rounds, N / (last message handled by the worker - first send), producer and worker\n"
        "  running at once; enqueue/s: N / producer's send time; p50/p99: receive - send time, paced producer at\n"
        "  50 % of that system's msgs/s; cmds/msg: INFO commandstats calls per message (commands run inside Lua\n"
        "  scripts included, the workers' idle polling included); lua/msg: EVAL/EVALSHA/FCALL per message;\n"
        "  CPU us/msg: redis-server CPU (INFO cpu) per message; sbredis /: sbredis e2e msgs/s over this row's."
    )
    print()
    print(
        table(
            ("target", "payload", "measured", "result"),
            [
                (
                    t["target"],
                    size_label(t["payload"]),
                    t["measured"],
                    {True: "PASS", False: "MISS", None: "n/a"}[t["pass"]],
                )
                for t in doc["targets"]
            ],
            left=(0, 1, 2, 3),
        )
    )
    for t in doc["targets"]:
        if t.get("control"):
            print(f"  {size_label(t['payload'])} p99 control: {t['control']}")
    for note in doc["notes"]:
        print(f"note: {note}")


# =========================================================================== main
def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "_worker":
        wp = argparse.ArgumentParser(prog="bench_peers.py _worker")
        wp.add_argument("system", choices=SYSTEMS)
        wp.add_argument("--url", required=True)
        wp.add_argument("--queue", required=True)
        wp.add_argument("--dir", required=True)
        wp.add_argument("--concurrency", type=int, default=1)
        w = wp.parse_args(argv[1:])
        return run_worker(w.system, w.url, w.queue, w.dir, w.concurrency)

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="smoke run: 1 round of ~0.2 s per figure, short latency runs")
    ap.add_argument(
        "--only", default=",".join(SYSTEMS), help=f"comma list of systems (default: all of {','.join(SYSTEMS)})"
    )
    ap.add_argument("--payloads", default="256,4096", help="payload sizes in bytes (default 256,4096)")
    ap.add_argument(
        "--rounds",
        type=int,
        default=None,
        help="rounds per throughput figure, median reported (default 3; 1 with --quick)",
    )
    ap.add_argument(
        "--round-seconds", type=float, default=None, help="target length of one round (default 1.2; 0.2 with --quick)"
    )
    ap.add_argument(
        "--latency-seconds",
        type=float,
        default=None,
        help="length of each paced latency run, `rounds` runs (default 1.5; 0.5 with --quick)",
    )
    ap.add_argument(
        "--concurrency", type=int, default=64, help="sends in flight for the async concurrent sends row (default 64)"
    )
    ap.add_argument(
        "--bullmq-concurrency",
        type=int,
        default=10,
        help="BullMQ Worker concurrency (default 10: the fastest of 1, 10 and 50 here; BullMQ's own default is 1)",
    )
    ap.add_argument(
        "--celery-threads",
        type=int,
        default=0,
        help="Celery worker: 0 for --pool solo (default), N for --pool threads --concurrency N",
    )
    ap.add_argument(
        "--dramatiq-threads", type=int, default=8, help="Dramatiq worker threads (default 8, the CLI's default)"
    )
    ap.add_argument(
        "--saq-concurrency", type=int, default=10, help="saq Worker concurrency (default 10, saq's default)"
    )
    ap.add_argument(
        "--no-npm-install",
        action="store_true",
        help="do not run `npm install` in bench/bullmq when node_modules is missing",
    )
    ap.add_argument("--out", type=Path, default=RESULTS, help=f"JSON output (default {RESULTS})")
    args = ap.parse_args(argv)
    args.rounds = args.rounds or (1 if args.quick else 3)
    args.round_seconds = args.round_seconds or (0.2 if args.quick else 1.2)
    args.latency_seconds = args.latency_seconds or (0.5 if args.quick else 1.5)
    chosen = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = sorted(set(chosen) - set(SYSTEMS))
    if unknown:
        ap.error(f"unknown systems: {', '.join(unknown)}")
    sizes = [int(x) for x in args.payloads.split(",") if x.strip()]

    from tests.redis_server import RedisServer

    server = RedisServer().start()
    try:
        return run(server.url, args, [s for s in SYSTEMS if s in chosen], sizes)
    finally:
        server.stop()


def run(url: str, args: argparse.Namespace, chosen: list[str], sizes: list[int]) -> int:
    started = pc()
    load_before = os.getloadavg()
    b = Bench(url, args)
    info = machine_info(b.r)
    info["cpu_model"] = cpu_model()
    versions = {
        "redis_server": info["redis_server_version"],
        "redis_py": version("redis"),
        "hiredis": version("hiredis"),
        "sbredis": info["sbredis_version"],
        "celery": version("celery"),
        "kombu": version("kombu"),
        "dramatiq": version("dramatiq"),
        "rq": version("rq"),
        "saq": version("saq"),
        **node_versions(),
    }
    print(
        f"{info['cpu_count']} CPUs ({info['cpu_model']}), load {load_before[0]:.2f} | Python {info['python']} | "
        f"redis-server {versions['redis_server']} | redis-py {versions['redis_py']} | sbredis {versions['sbredis']}"
    )
    print(
        f"{'quick' if args.quick else 'full'} run: {args.rounds} round(s) of ~{args.round_seconds}s per figure, "
        f"{args.rounds} paced latency run(s) of {args.latency_seconds}s, "
        f"payloads {', '.join(size_label(s) for s in sizes)}",
        flush=True,
    )
    systems: dict[str, Any] = {}
    try:
        # sbredis first: raw's control latency run is paced at sbredis's 50 % load
        for system in sorted(chosen, key=lambda x: (x != "sbredis", SYSTEMS.index(x))):
            celery_pool_text = (
                "--pool solo (concurrency 1)"
                if args.celery_threads <= 1
                else f"--pool threads --concurrency {args.celery_threads}"
            )
            setup = SETUP[system].format(celery_pool_text=celery_pool_text, **vars(args))
            entry: dict[str, Any] = {"setup": setup}
            systems[system] = entry
            why = missing(system)
            if system == "bullmq" and why is None:
                why = ensure_bullmq(not args.no_npm_install)
                versions.update(node_versions())
            if why:
                entry["skipped"] = why
                b.notes.append(f"{system} skipped: {why}")
                print(f"  {system}: skipped ({why})", flush=True)
                continue
            t0 = pc()
            print(f"  {system}: {setup}", flush=True)
            try:
                if system in ("raw", "sbredis"):
                    entry["components"] = {}
                    for size in sizes:
                        entry["components"][str(size)] = b.components(system, size)
                entry["e2e"] = b.e2e(system, sizes)
            except Exception as e:  # one system failing must not lose the others
                entry["error"] = f"{type(e).__name__}: {e}"[:3000]
                b.notes.append(f"{system} failed: {entry['error'][:300]}")
                print(f"  {system}: FAILED {entry['error'][:2000]}", flush=True)
            entry["seconds"] = round(pc() - t0, 1)
            entry["load_average_after"] = os.getloadavg()
            b.r.flushall()  # private server: each system starts on an empty keyspace
    finally:
        b.close()
    load_after = os.getloadavg()
    ratios = ratio_rows(systems, sizes)
    doc: dict[str, Any] = {
        "bench": "peers",
        "mode": "quick" if args.quick else "full",
        "rounds": args.rounds,
        "round_seconds_target": args.round_seconds,
        "latency_seconds": args.latency_seconds,
        "payload_sizes": sizes,
        "concurrency": args.concurrency,
        "batch": BATCH,
        "machine": info,
        "versions": versions,
        "load_average_before": load_before,
        "load_average_after": load_after,
        "systems": systems,
        "ratios_sbredis_over": ratios,
        "notes": b.notes,
        "server_note": "cmds/msg counts commands run inside Lua scripts too (INFO commandstats does); "
        "in-process rows take the counters around the timed part only (not the prefill or the cleanup); "
        "end-to-end rows take them from the first send to the worker's last message (idle polling included)",
    }
    doc["targets"] = targets(systems, sizes, ratios)
    doc["elapsed_s"] = round(pc() - started, 1)
    print_report(doc)
    print(
        f"load average before {load_before[0]:.2f}, after {load_after[0]:.2f} ({info['cpu_count']} CPUs); "
        f"total {doc['elapsed_s']:.0f}s"
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    # Run as the module `bench_peers`, so RQ's "bench_peers.rq_task" and the workers share one copy.
    import bench_peers

    sys.exit(bench_peers.main())
