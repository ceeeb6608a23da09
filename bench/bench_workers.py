#!/usr/bin/env python
"""Worker-level throughput: no-op tasks per second through a real worker process.

    python bench/bench_workers.py [--url redis://host:port/db] [--tasks 3000] [--native-tasks 30000]
                                  [--rounds 3] [--quick] [--only NAME]

Workers, each a subprocess on the same Redis server in the same run:

  * native, threads x8   `sbredis worker bench_workers:noop --concurrency 8 --prefetch 64` (plain handler)
  * native, async x8     the same with a coroutine handler (`bench_workers:anoop`)
  * native, defaults     `sbredis worker bench_workers:noop` (the command line's defaults: threads x8,
                         the prefetch sized to the handlers' pace, docs/worker.md)
  * Celery, each of CELERY_CONFIGS (prefork x2, solo, threads x8; prefetch multiplier 1 and 4) on
    sbredis:// (sbredis.contrib.kombu) and on redis:// (kombu's own Redis transport)

Celery runs with task_acks_late and task_reject_on_worker_lost, without gossip, mingle and
heartbeats. A Celery round is end to end: the worker is started and warmed up (20 tasks), then a
producer process sends --tasks tasks one by one while the worker runs; tasks/s is --tasks over
the time from the producer's first send until the queue is empty (active_message_count for
sbredis, LLEN + the unacked hash for kombu's Redis transport). A native round prefills
--native-tasks messages (not timed), starts the worker and times from the first settled message
to the last. Each round also records the CPU time per task of the worker (/proc; a Celery worker
with its pool's children) and of redis-server (INFO cpu) over the timed span (for Celery from just
before the producer starts), which a loaded machine changes far less than tasks/s.
Figures are medians of --rounds rounds; the workers alternate within a round (each Celery
config's two brokers back to back, sbredis:// first in even rounds, redis:// in odd ones), and the
Celery table gives each config's sbredis:// / redis:// ratio as the median of the same-round
ratios. Each Celery round also records (round_details in the JSON) the CPU per task of the worker,
redis-server and the producer, the producer's share of the round (near 1: the round waited for
the producer), INFO commandstats calls per task (commands run inside scripts included), the 1-minute
load average, and the longest time the queue did not shrink once the producer was done.
Results go to bench/results/workers.json; with --only, the rows of the workers not run are kept
from the file (each row says when it was measured). Without --url a private redis-server is started.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
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
        task_acks_on_failure_or_timeout=False,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=int(os.environ.get("BENCH_PREFETCH", "4")),
        broker_connection_retry_on_startup=True,
        worker_hijack_root_logger=False,
    )
    app.task(name="noop")(_celery_noop)
    return app


def _celery_noop() -> None:
    """The Celery no-op task."""


app = _celery_app()


# --------------------------------------------------------------------------- the bench
# Celery configurations (pool, concurrency, prefetch multiplier), each run on both brokers
CELERY_CONFIGS = {
    "recipe: prefork x2, prefetch 1": ("prefork", 2, 1),
    "prefork x2, prefetch 4": ("prefork", 2, 4),
    "solo, prefetch 1": ("solo", 1, 1),
    "solo, prefetch 4": ("solo", 1, 4),
    "threads x8, prefetch 1": ("threads", 8, 1),
    "threads x8, prefetch 4": ("threads", 8, 4),
}
BROKERS = {"sbredis": "sbredis://", "redis": "redis:// (kombu)"}
NATIVE_OPTIONS = ("--concurrency", "8", "--prefetch", "64")
WORKERS: dict[str, tuple[Any, ...]] = {
    "native, threads x8": ("native", "noop", NATIVE_OPTIONS),
    "native, async x8": ("native", "anoop", NATIVE_OPTIONS),
    "native, defaults (threads x8, adaptive prefetch)": ("native", "noop", ()),
}
for _config, (_pool, _n, _prefetch) in CELERY_CONFIGS.items():
    for _broker, _label in BROKERS.items():
        WORKERS[f"Celery {_config} | {_label}"] = ("celery", _broker, _pool, _n, _prefetch, _config)


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
        self.cpu: dict[tuple[Any, ...], list[tuple[float, float]]] = {}  # spec -> (worker, redis) us/task
        self.details: dict[tuple[Any, ...], list[dict[str, Any]]] = {}  # spec -> each round's figures

    def redis_cpu(self) -> float:
        info = self.r.info("cpu")
        return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])

    def redis_calls(self) -> dict[str, int]:
        """INFO commandstats: calls per command (the round's share is the difference)."""
        return {k.removeprefix("cmdstat_"): int(v["calls"]) for k, v in self.r.info("commandstats").items()}

    @staticmethod
    def calls_per_task(before: dict[str, int], after: dict[str, int], n: int) -> dict[str, float]:
        out = {k: (v - before.get(k, 0)) / n for k, v in after.items() if v - before.get(k, 0) > 0}
        out.pop("info", None)  # the bench's own polling
        out.pop("llen", None)
        out.pop("hlen", None)
        return {k: round(v, 3) for k, v in sorted(out.items(), key=lambda kv: -kv[1])}

    @staticmethod
    def proc_cpu(pid: int) -> float:
        """CPU seconds of process `pid` (user + system, /proc/<pid>/stat; Linux)."""
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    @classmethod
    def tree_cpu(cls, pid: int) -> float:
        """CPU seconds of process `pid` and its live descendants (a prefork worker's children)."""
        total = cls.proc_cpu(pid)
        for task in Path(f"/proc/{pid}/task").iterdir():
            for child in (task / "children").read_text().split():
                try:
                    total += cls.tree_cpu(int(child))
                except (FileNotFoundError, ProcessLookupError):
                    pass
        return total

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

    def one(self, spec: tuple[Any, ...]) -> float:
        return self.one_native(spec) if spec[0] == "native" else self.one_celery(spec)

    def one_native(self, spec: tuple[Any, ...]) -> float:
        """Prefill (not timed), start the worker, time from the first settled message to the last."""
        queue = f"bench-w-{uuid.uuid4().hex[:8]}"
        self.tasks = self.native_tasks
        self.prefill_sbredis(queue)
        remaining = self.remaining_sbredis
        args = [sys.executable, "-m", "sbredis", "worker", f"bench_workers:{spec[1]}", "--entity", queue]
        args += ["--url", self.url, *spec[2], "--loglevel", "WARNING"]
        start = remaining(queue)
        assert start == self.tasks, f"prefill left {start} of {self.tasks} messages"
        proc = subprocess.Popen(
            args, cwd=HERE, env=self.env(None, queue), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        try:
            t0 = n0 = None
            c0 = (0.0, 0.0)
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline:
                n = remaining(queue)
                now = time.perf_counter()
                if t0 is None and n < self.tasks:
                    t0, n0 = now, n
                    c0 = (self.proc_cpu(proc.pid), self.redis_cpu())
                if n == 0:
                    assert t0 is not None and n0 is not None
                    c1 = (self.proc_cpu(proc.pid), self.redis_cpu())
                    self.cpu.setdefault(spec, []).append(
                        (1e6 * (c1[0] - c0[0]) / n0, 1e6 * (c1[1] - c0[1]) / n0) if n0 else (math.nan, math.nan)
                    )
                    return (n0 / (now - t0)) if now > t0 else float("nan")
                self.check_alive(proc)
                time.sleep(0.01)
            raise RuntimeError("the worker did not finish in 300 s")
        finally:
            self.stop(proc)

    def one_celery(self, spec: tuple[Any, ...]) -> float:
        """End to end: a running worker, a producer sending --tasks tasks one by one meanwhile;
        tasks/s from just before the producer's first send until the queue is empty after its last."""
        _, transport, pool, concurrency, prefetch, _config = spec
        queue = f"bench-w-{uuid.uuid4().hex[:8]}"
        broker = ("sbredis" if transport == "sbredis" else "redis") + self.url[len("redis") :]
        env = dict(self.env(broker, queue), BENCH_PREFETCH=str(prefetch))
        if transport == "sbredis":
            remaining = self.remaining_sbredis
            self.queues.append(queue)
        else:
            remaining = self.remaining_redis
        args = [sys.executable, "-m", "celery", "-A", "bench_workers", "worker", "-Q", queue, "--pool", pool]
        args += ["--concurrency", str(concurrency), "--loglevel", "WARNING"]
        args += ["--without-gossip", "--without-mingle", "--without-heartbeat", "-n", f"{queue}@bench"]
        proc = subprocess.Popen(args, cwd=HERE, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            self.send_celery(env, 20).wait(120)  # warm-up: the worker is consuming when these are gone
            self.drained(proc, queue, remaining, 120)
            k0 = self.redis_calls()
            c0 = (self.tree_cpu(proc.pid), self.redis_cpu())
            producer = self.send_celery(env, self.celery_tasks)
            assert producer.stdout is not None
            t0 = float(producer.stdout.readline())
            series: list[tuple[float, int]] = []  # (time, messages left) once the producer is done
            sent_at, producer_cpu = (float(x) for x in producer.stdout.readline().split())
            producer.wait(600)
            t1 = self.drained(proc, queue, remaining, 300, series)
            c1 = (self.tree_cpu(proc.pid), self.redis_cpu())
            k1 = self.redis_calls()
            n = self.celery_tasks
            cpu = (1e6 * (c1[0] - c0[0]) / n, 1e6 * (c1[1] - c0[1]) / n)
            self.cpu.setdefault(spec, []).append(cpu)
            self.details.setdefault(spec, []).append(
                {
                    "tasks_per_s": n / (t1 - t0),
                    "worker_cpu_us_per_task": round(cpu[0], 1),
                    "redis_cpu_us_per_task": round(cpu[1], 1),
                    "producer_cpu_us_per_task": round(1e6 * producer_cpu / n, 1),
                    # the producer's share of the round: near 1, the round waited for the producer
                    "producer_share": round((sent_at - t0) / (t1 - t0), 3),
                    "redis_calls_per_task": self.calls_per_task(k0, k1, n),
                    "loadavg_1m": os.getloadavg()[0],
                    # the longest time the queue went without getting shorter once the producer was done
                    "longest_stall_s": round(self.longest_stall(series), 3),
                }
            )
            return self.celery_tasks / (t1 - t0)
        finally:
            self.stop(proc)
            if transport == "redis":
                self.r.delete(queue)

    @staticmethod
    def longest_stall(series: list[tuple[float, int]]) -> float:
        longest, since, last = 0.0, None, None
        for t, n in series:
            if last is None or n < last:
                since, last = t, n
            elif since is not None:
                longest = max(longest, t - since)
        return longest

    def drained(
        self,
        proc: subprocess.Popen[bytes],
        queue: str,
        remaining: Any,
        timeout: float,
        series: list[tuple[float, int]] | None = None,
    ) -> float:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            left = remaining(queue)
            if series is not None:
                series.append((time.time(), left))
            if left == 0:
                return time.time()
            self.check_alive(proc)
            time.sleep(0.01)
        raise RuntimeError(f"the worker did not finish in {timeout} s")

    @staticmethod
    def check_alive(proc: subprocess.Popen[bytes]) -> None:
        if proc.poll() is not None:
            raise RuntimeError(f"worker exited {proc.returncode}: {proc.stderr.read().decode()[-2000:]}")  # type: ignore[union-attr]

    @staticmethod
    def stop(proc: subprocess.Popen[bytes]) -> None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        if proc.stderr is not None:
            proc.stderr.close()

    def send_celery(self, env: dict[str, str], n: int) -> subprocess.Popen[bytes]:
        """A producer process sending n no-op tasks; it prints the time of its first send, then the
        time of its last and its CPU seconds from the first send on."""
        code = (
            "import time, bench_workers as b\n"
            "with b.app.producer_pool.acquire(block=True) as p:\n"
            "    b.app.send_task('noop', producer=p)\n"
            "    print(time.time(), flush=True)\n"
            "    c0 = time.process_time()\n"
            f"    [b.app.send_task('noop', producer=p) for _ in range({n - 1})]\n"
            "    print(time.time(), time.process_time() - c0, flush=True)\n"
        )
        return subprocess.Popen([sys.executable, "-c", code], cwd=HERE, env=env, stdout=subprocess.PIPE)

    def cleanup(self) -> None:
        from sbredis.exceptions import MessagingEntityNotFoundError

        for q in self.queues:
            try:
                self.admin.delete_queue(q)
            except MessagingEntityNotFoundError:
                pass
        self.admin.close()
        self.client.close()


def round_order(names: list[str], r: int) -> list[str]:
    """The workers in round `r`'s order: each Celery config's two brokers next to each other,
    sbredis:// first in even rounds and redis:// first in odd ones, so that a machine whose load
    rises or falls through a run favours neither (single rounds on a shared machine moved by
    2x with the load of the moment; see docs/benchmarks.md)."""
    out = list(names)
    if r % 2:
        for i in range(len(out) - 1):
            a, b = out[i], out[i + 1]
            if a.endswith(BROKERS["sbredis"]) and b == a.replace(BROKERS["sbredis"], BROKERS["redis"]):
                out[i], out[i + 1] = b, a
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", help="Redis URL (default: start a private redis-server)")
    ap.add_argument("--tasks", type=int, default=5000, help="no-op tasks per Celery round (default 5000)")
    ap.add_argument("--native-tasks", type=int, default=30000, help="per native round (default 30000)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="1 round of 1000 (native 5000) tasks")
    ap.add_argument("--only", action="append", default=[], help="run only workers whose name contains this")
    args = ap.parse_args(argv)
    tasks, native, rounds = (1000, 5000, 1) if args.quick else (args.tasks, args.native_tasks, args.rounds)
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
        load_start = os.getloadavg()
        rates: dict[str, list[float]] = {name: [] for name in workers}
        try:
            for r in range(rounds):
                for name in round_order(list(workers), r):
                    spec = workers[name]
                    rate = bench.one(spec)
                    rates[name].append(rate)
                    print(f"round {r + 1}/{rounds}  {name:56s} {rate:9,.0f} tasks/s", flush=True)
                    if spec in bench.details:
                        print(f"    {json.dumps(bench.details[spec][-1])}", flush=True)
            info = machine_info(bench.r)
            info["loadavg_at_start"], info["loadavg_at_end"] = load_start, os.getloadavg()
        finally:
            bench.cleanup()
    finally:
        if server is not None:
            server.stop()

    import celery
    import kombu

    print()
    print(f"{'worker':56s} | {'tasks/s (median)':>16s} | spread")
    print("-" * 57 + "+" + "-" * 18 + "+-------")
    rows = {}
    today = datetime.date.today().isoformat()
    for name, xs in rates.items():
        med = statistics.median(xs)
        spread = (max(xs) - min(xs)) / med * 100 if med else 0.0
        rows[name] = {"rounds": xs, "median_tasks_per_s": med, "spread_pct": spread, "measured": today}
        cpu = bench.cpu.get(workers[name])
        if workers[name] in bench.details:
            rows[name]["round_details"] = bench.details[workers[name]]
        line = f"{name:56s} | {med:16,.0f} | {spread:5.0f}%"
        if cpu:
            rows[name]["worker_cpu_us_per_task"] = statistics.median(c[0] for c in cpu)
            rows[name]["redis_cpu_us_per_task"] = statistics.median(c[1] for c in cpu)
            line += f"   CPU per task: worker {rows[name]['worker_cpu_us_per_task']:.1f} us"
            line += f", redis-server {rows[name]['redis_cpu_us_per_task']:.1f} us"
        print(line)
    print()
    print(f"{'Celery config':32s} | {'sbredis://':>10s} | {'redis://':>10s} | ratio (median of same-round ratios)")
    print("-" * 33 + "+" + "-" * 12 + "+" + "-" * 12 + "+" + "-" * 20)
    pairs = {}
    for config in CELERY_CONFIGS:
        sb, rd = (
            rates.get(f"Celery {config} | {BROKERS['sbredis']}"),
            rates.get(f"Celery {config} | {BROKERS['redis']}"),
        )
        if not sb or not rd:
            continue
        ratios = [a / b for a, b in zip(sb, rd, strict=True)]
        pairs[config] = {
            "sbredis_median": statistics.median(sb),
            "redis_median": statistics.median(rd),
            "ratio_median": statistics.median(ratios),
            "ratios": ratios,
        }
        print(
            f"{config:32s} | {statistics.median(sb):10,.0f} | {statistics.median(rd):10,.0f} | "
            f"{statistics.median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f})"
        )
    info.update(celery_version=celery.__version__, kombu_version=kombu.__version__)
    if args.only and RESULTS.exists():  # keep what this run did not measure
        before = json.loads(RESULTS.read_text())
        when = str(before.get("machine", {}).get("date", ""))[:10]
        kept = {k: {"measured": when, **v} for k, v in before.get("workers", {}).items() if k not in rows}
        info["kept_rows_from"] = {"git_commit": before.get("machine", {}).get("git_commit"), "date": when}
        rows = {**kept, **rows}
        rows = {k: rows[k] for k in WORKERS if k in rows}
        pairs = {**before.get("celery_sbredis_vs_redis", {}), **pairs}
        if not any(spec[0] == "celery" for spec in workers.values()):
            tasks = before.get("tasks_per_round", {}).get("celery", tasks)
    out = {
        "tasks_per_round": {"celery": tasks, "native": native},
        "rounds": rounds,
        "workers": rows,
        "celery_sbredis_vs_redis": pairs,
        "machine": info,
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(out, indent=2) + "\n")
    print(f"\nwritten to {RESULTS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
