#!/usr/bin/env python
"""Worker-level throughput: no-op tasks per second through a real worker process.

    python bench/bench_workers.py [--url redis://host:port/db] [--tasks 3000] [--native-tasks 30000]
                                  [--rounds 3] [--quick] [--only NAME]

Workers, each a subprocess on the same Redis server in the same run:

  * native, threads x8   `sbredis worker bench_workers:noop --concurrency 8 --prefetch 64` (plain handler)
  * native, async x8     the same with a coroutine handler (`bench_workers:anoop`)
  * Celery on sbredis    `celery worker` with broker sbredis:// (sbredis.contrib.kombu), pool solo and
                         pool threads x8
  * Celery on Redis      the same worker with broker redis:// (kombu's own Redis transport)

Celery runs with task_acks_late (ack after the task, the delivery the sbredis mapping is about),
the default prefetch multiplier (4) and without gossip, mingle and heartbeats. A round prefills
--tasks messages (not timed), starts the worker, and times from the first settled message to the
last (the worker's start-up is not counted): remaining messages are the queue's
active_message_count for sbredis (locked ones included) and LLEN + the unacked hash for kombu's
Redis transport. A native round has --native-tasks messages (about ten times Celery's rate, so
that every round lasts a second or more). The figure is the median of --rounds rounds; rounds of
the workers alternate.
Results go to bench/results/workers.json. Without --url a private redis-server is started.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results" / "workers.json"
for p in (str(ROOT), str(HERE)):
    if p not in sys.path:
        sys.path.insert(0, p)


# --------------------------------------------------------------------------- what the workers run
def noop(message: Any) -> None:
    """The native worker's no-op handler."""


async def anoop(message: Any) -> None:
    """The native worker's no-op coroutine handler."""


def _celery_app() -> Any:
    broker = os.environ.get("BENCH_BROKER")
    if not broker:
        return None
    from celery import Celery

    import sbredis.contrib.celery  # noqa: F401  (registers sbredis://)

    app = Celery("bench", broker=broker)
    app.conf.update(
        task_default_queue=os.environ.get("BENCH_QUEUE", "celery"),
        task_acks_late=True,
        broker_connection_retry_on_startup=True,
        worker_hijack_root_logger=False,
    )
    app.task(name="noop")(_celery_noop)
    return app


def _celery_noop() -> None:
    """The Celery no-op task."""


app = _celery_app()


# --------------------------------------------------------------------------- the bench
WORKERS = {
    "native, threads x8": ("native", "noop"),
    "native, async x8": ("native", "anoop"),
    "Celery on sbredis, solo": ("celery", "sbredis", "solo"),
    "Celery on sbredis, threads x8": ("celery", "sbredis", "threads"),
    "Celery on Redis (kombu), solo": ("celery", "redis", "solo"),
    "Celery on Redis (kombu), threads x8": ("celery", "redis", "threads"),
}


class Bench:
    def __init__(self, url: str, tasks: int, native_tasks: int) -> None:
        import redis

        from sbredis import ServiceBusClient
        from sbredis.management import ServiceBusAdministrationClient

        self.url = url
        self.celery_tasks = tasks
        self.native_tasks = native_tasks
        self.tasks = tasks
        self.r = redis.Redis.from_url(url)
        self.admin = ServiceBusAdministrationClient.from_connection_string(url)
        self.client = ServiceBusClient.from_connection_string(url)
        self.queues: list[str] = []

    def env(self, broker: str | None, queue: str) -> dict[str, str]:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE), str(ROOT), os.environ.get("PYTHONPATH", "")]))
        if broker:
            env.update(BENCH_BROKER=broker, BENCH_QUEUE=queue)
        return env

    def prefill_sbredis(self, queue: str) -> None:
        from sbredis import ServiceBusMessage

        self.admin.create_queue(queue, max_size_in_megabytes=1 << 14)
        self.queues.append(queue)
        with self.client.get_queue_sender(queue) as s:
            for i in range(0, self.tasks, 500):
                s.send_messages([ServiceBusMessage(b"{}") for _ in range(min(500, self.tasks - i))])

    def remaining_sbredis(self, queue: str) -> int:
        return int(self.admin.get_queue_runtime_properties(queue).active_message_count)

    def remaining_redis(self, queue: str) -> int:
        return int(self.r.llen(queue)) + int(self.r.hlen("unacked"))

    def one(self, spec: tuple[str, ...]) -> float:
        queue = f"bench-w-{uuid.uuid4().hex[:8]}"
        self.tasks = self.native_tasks if spec[0] == "native" else self.celery_tasks
        if spec[0] == "native":
            self.prefill_sbredis(queue)
            remaining = self.remaining_sbredis
            args = [sys.executable, "-m", "sbredis", "worker", f"bench_workers:{spec[1]}", "--entity", queue]
            args += ["--url", self.url, "--concurrency", "8", "--prefetch", "64", "--loglevel", "WARNING"]
            env = self.env(None, queue)
        else:
            transport, pool = spec[1], spec[2]
            broker = ("sbredis" if transport == "sbredis" else "redis") + self.url[len("redis") :]
            env = self.env(broker, queue)
            if transport == "sbredis":
                remaining = self.remaining_sbredis
                self.queues.append(queue)
            else:
                remaining = self.remaining_redis
            self.prefill_celery(env)
            args = [sys.executable, "-m", "celery", "-A", "bench_workers", "worker", "-Q", queue, "--pool", pool]
            args += ["--concurrency", "8" if pool == "threads" else "1", "--loglevel", "WARNING"]
            args += ["--without-gossip", "--without-mingle", "--without-heartbeat", "-n", f"{queue}@bench"]
        start = remaining(queue)
        assert start == self.tasks, f"prefill left {start} of {self.tasks} messages"
        proc = subprocess.Popen(args, cwd=HERE, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            t0 = n0 = None
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline:
                n = remaining(queue)
                now = time.perf_counter()
                if t0 is None and n < self.tasks:
                    t0, n0 = now, n
                if n == 0:
                    assert t0 is not None and n0 is not None
                    return (n0 / (now - t0)) if now > t0 else float("nan")
                if proc.poll() is not None:
                    raise RuntimeError(f"worker exited {proc.returncode}: {proc.stderr.read().decode()[-2000:]}")  # type: ignore[union-attr]
                time.sleep(0.01)
            raise RuntimeError("the worker did not finish in 300 s")
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
            if proc.stderr is not None:
                proc.stderr.close()
            if spec[0] == "celery" and spec[1] == "redis":
                self.r.delete(queue)

    def prefill_celery(self, env: dict[str, str]) -> None:
        code = (
            "import bench_workers as b, sys\n"
            "with b.app.producer_pool.acquire(block=True) as p:\n"
            f"    [b.app.send_task('noop', producer=p) for _ in range({self.tasks})]\n"
        )
        subprocess.run([sys.executable, "-c", code], cwd=HERE, env=env, check=True, timeout=600)

    def cleanup(self) -> None:
        from sbredis.exceptions import MessagingEntityNotFoundError

        for q in self.queues:
            try:
                self.admin.delete_queue(q)
            except MessagingEntityNotFoundError:
                pass
        self.admin.close()
        self.client.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", help="Redis URL (default: start a private redis-server)")
    ap.add_argument("--tasks", type=int, default=3000, help="no-op tasks per Celery round (default 3000)")
    ap.add_argument("--native-tasks", type=int, default=30000, help="per native round (default 30000)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="1 round of 500 (native 5000) tasks")
    ap.add_argument("--only", action="append", default=[], help="run only workers whose name contains this")
    args = ap.parse_args(argv)
    tasks, native, rounds = (500, 5000, 1) if args.quick else (args.tasks, args.native_tasks, args.rounds)
    workers = {k: v for k, v in WORKERS.items() if not args.only or any(o in k for o in args.only)}

    server = None
    url = args.url
    if url is None:
        from tests.redis_server import RedisServer

        server = RedisServer().start()
        url = server.url
    try:
        from bench_core import machine_info

        bench = Bench(url, tasks, native)
        rates: dict[str, list[float]] = {name: [] for name in workers}
        try:
            for r in range(rounds):
                for name, spec in workers.items():
                    rate = bench.one(spec)
                    rates[name].append(rate)
                    print(f"round {r + 1}/{rounds}  {name:38s} {rate:9,.0f} tasks/s", flush=True)
            info = machine_info(bench.r)
        finally:
            bench.cleanup()
    finally:
        if server is not None:
            server.stop()

    import celery
    import kombu

    print()
    print(f"{'worker':38s} | {'tasks/s (median)':>16s} | spread")
    print("-" * 39 + "+" + "-" * 18 + "+-------")
    rows = {}
    for name, xs in rates.items():
        med = statistics.median(xs)
        spread = (max(xs) - min(xs)) / med * 100 if med else 0.0
        rows[name] = {"rounds": xs, "median_tasks_per_s": med, "spread_pct": spread}
        print(f"{name:38s} | {med:16,.0f} | {spread:5.0f}%")
    info.update(celery_version=celery.__version__, kombu_version=kombu.__version__)
    out = {"tasks_per_round": {"celery": tasks, "native": native}, "rounds": rounds, "workers": rows, "machine": info}
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(out, indent=2) + "\n")
    print(f"\nwritten to {RESULTS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
