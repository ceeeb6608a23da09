#!/usr/bin/env python
"""Core throughput and latency of sbredis next to raw redis-py on the same Redis server.

    python bench/bench_core.py [--url redis://host:port/db] [--quick] [--profile]

Without --url a private redis-server is started (tests/redis_server.py). With --url the bench
only touches keys it creates (queues named ``bench-<random>-...`` and raw streams under
``bench:<random>:...``) and removes them at the end.

Rows (1 KiB bodies, see bench/README.md):
  * batched send          sender.send_messages(100 messages)  vs pipelined XADD x100
  * receive + complete    receive_messages(100) + complete_messages  vs XREADGROUP COUNT 100 + XACK
  * the same two for a 16-partition queue (against the same raw baseline)
  * single-message latency: send 1 / receive 1 / complete 1  vs XADD / XREADGROUP COUNT 1 / XACK

Every throughput figure is the median of --rounds rounds (sbredis and raw rounds alternate, so
noise on a shared machine hits both). Results go to bench/results/core.json.
"""

from __future__ import annotations

import argparse
import cProfile
import datetime as dt
import gc
import io
import json
import os
import platform
import pstats
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import redis  # noqa: E402

import sbredis  # noqa: E402
from sbredis import ServiceBusClient, ServiceBusMessage  # noqa: E402
from sbredis.management import ServiceBusAdministrationClient  # noqa: E402

BODY = os.urandom(1024)  # 1 KiB body
BATCH = 100
RESULTS = Path(__file__).resolve().parent / "results" / "core.json"
pc = time.perf_counter

# Targets (printed, never asserted).
T_SEND_RATE, T_SEND_RATIO = 100_000, 1.0
T_RECV_RATE, T_RECV_RATIO = 60_000, 0.4
T_SEND_P50_MS = 0.3


# --------------------------------------------------------------------------- helpers
def median(xs: list[float]) -> float:
    return statistics.median(xs)


def pct(xs: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of a non-empty list."""
    s = sorted(xs)
    k = max(0, min(len(s) - 1, round(q / 100 * len(s) + 0.5) - 1))
    return s[k]


def batches_for(rate: float, seconds: float, lo: int, hi: int, multiple: int = 1) -> int:
    """Batches of BATCH messages that take about `seconds` at `rate` msgs/s."""
    n = int(rate * seconds / BATCH)
    n = max(lo, min(hi, n))
    return max(multiple, (n // multiple) * multiple)


def xread_entries(resp: Any) -> list[Any]:
    """Entries of a one-stream XREADGROUP reply (RESP2 list or RESP3 dict)."""
    if not resp:
        return []
    if isinstance(resp, dict):
        return next(iter(resp.values()))[0] if resp else []
    return resp[0][1]


# --------------------------------------------------------------------------- the bench
def row_result(
    sb_rounds: list[float],
    sb_batches: int,
    sb_srv: list[float],
    raw_rounds: list[float] | None,
    raw_batches: int,
    raw_srv: list[float],
) -> dict[str, Any]:
    """One throughput row's figures: per-round rates and the median server time per message."""
    out: dict[str, Any] = {
        "sbredis_rounds": sb_rounds,
        "sbredis_msgs_per_round": sb_batches * BATCH,
        "sbredis_server_us_per_msg": median(sb_srv),
    }
    if raw_rounds is not None:
        out.update(raw_rounds=raw_rounds, raw_msgs_per_round=raw_batches * BATCH, raw_server_us_per_msg=median(raw_srv))
    return out


class Bench:
    def __init__(self, url: str, quick: bool, rounds: int) -> None:
        self.url = url
        self.quick = quick
        self.rounds = rounds
        self.round_s = 0.3 if quick else 1.0  # target duration of one measured round
        self.lat_n = 1000 if quick else 5000
        self.tag = uuid.uuid4().hex[:8]
        self.r = redis.Redis.from_url(url, decode_responses=False)
        self.admin = ServiceBusAdministrationClient.from_connection_string(url)
        self.client = ServiceBusClient.from_connection_string(url)
        self.queues: list[str] = []
        self.raw_keys: list[str] = []

    # -- setup / teardown
    def queue(self, suffix: str, partitioned: bool = False) -> str:
        name = f"bench-{self.tag}-{suffix}"
        kw: dict[str, Any] = {"max_size_in_megabytes": 1 << 16}
        if partitioned:
            kw["enable_partitioning"] = True
        self.admin.create_queue(name, **kw)
        if name not in self.queues:
            self.queues.append(name)
        return name

    def reset_queue(self, name: str, partitioned: bool) -> None:
        self.admin.delete_queue(name)
        kw: dict[str, Any] = {"max_size_in_megabytes": 1 << 16}
        if partitioned:
            kw["enable_partitioning"] = True
        self.admin.create_queue(name, **kw)

    def raw_key(self, suffix: str) -> str:
        key = f"bench:{self.tag}:{suffix}"
        self.raw_keys.append(key)
        return key

    def cleanup(self) -> None:
        for q in self.queues:
            try:
                self.admin.delete_queue(q)
            except Exception:
                pass
        if self.raw_keys:
            self.r.unlink(*self.raw_keys)
        self.client.close()
        self.admin.close()
        self.r.close()

    # -- sbredis primitives
    @staticmethod
    def sb_send(sender: Any, batches: int) -> float:
        """Seconds spent in send_messages for `batches` fresh 100-message lists (construction excluded)."""
        spent = 0.0
        for _ in range(batches):
            msgs = [ServiceBusMessage(BODY) for _ in range(BATCH)]
            t0 = pc()
            sender.send_messages(msgs)
            spent += pc() - t0
        return spent

    @staticmethod
    def sb_drain(receiver: Any, total: int) -> tuple[int, float]:
        done = 0
        t0 = pc()
        while done < total:
            msgs = receiver.receive_messages(BATCH, wait=False)
            if not msgs:
                break
            for m in msgs:
                m.body  # noqa: B018 - decode cost counted
            receiver.complete_messages(msgs)
            done += len(msgs)
        return done, pc() - t0

    # -- raw primitives
    def raw_send(self, key: str, batches: int) -> float:
        r = self.r
        fields = {b"b": BODY}
        t0 = pc()
        for _ in range(batches):
            with r.pipeline(transaction=False) as p:
                for _ in range(BATCH):
                    p.xadd(key, fields)
                p.execute()
        return pc() - t0

    def raw_drain(self, key: str, total: int) -> tuple[int, float]:
        r = self.r
        done = 0
        t0 = pc()
        while done < total:
            entries = xread_entries(r.xreadgroup("g", "c", {key: ">"}, count=BATCH))
            if not entries:
                break
            ids = []
            for eid, fields in entries:
                fields[b"b"]
                ids.append(eid)
            r.xack(key, "g", *ids)  # the targets' baseline: XREADGROUP + XACK (acked entries stay)
            done += len(ids)
        return done, pc() - t0

    def server_usec(self, scripts: bool) -> int:
        """Server-side usec so far: of EVALSHA/EVAL (sbredis), or of every other command (raw)."""
        total = 0
        for name, st in self.r.info("commandstats").items():
            cmd = name.removeprefix("cmdstat_")
            if cmd in ("info", "client", "hello", "ping"):
                continue
            if (cmd in ("evalsha", "eval")) == scripts:
                total += int(st["usec"])
        return total

    def raw_reset_stream(self, key: str) -> None:
        self.r.unlink(key)
        self.r.xgroup_create(key, "g", id="0", mkstream=True)

    # -- throughput rows
    def send_rows(self, partitioned: bool, raw: bool) -> dict[str, Any]:
        label = "p16" if partitioned else "p1"
        q = self.queue(f"send-{label}", partitioned)
        sender = self.client.get_queue_sender(q)
        key = self.raw_key(f"send-{label}")
        # warm-up and calibration
        warm = 10 if self.quick else 30
        sb_rate = warm * BATCH / self.sb_send(sender, warm)
        sb_batches = batches_for(sb_rate, self.round_s, 10, 20_000)
        if raw:
            raw_rate = warm * BATCH / self.raw_send(key, warm)
            raw_batches = batches_for(raw_rate, self.round_s, 10, 20_000)
        sb_rounds: list[float] = []
        raw_rounds: list[float] = []
        sb_srv: list[float] = []
        raw_srv: list[float] = []
        for _ in range(self.rounds):
            self.reset_queue(q, partitioned)
            gc.collect()
            u0 = self.server_usec(True)
            sb_rounds.append(sb_batches * BATCH / self.sb_send(sender, sb_batches))
            sb_srv.append((self.server_usec(True) - u0) / (sb_batches * BATCH))
            if raw:
                self.r.unlink(key)
                gc.collect()
                u0 = self.server_usec(False)
                raw_rounds.append(raw_batches * BATCH / self.raw_send(key, raw_batches))
                raw_srv.append((self.server_usec(False) - u0) / (raw_batches * BATCH))
        self.reset_queue(q, partitioned)
        self.r.unlink(key)
        raw_part = (raw_rounds, raw_batches, raw_srv) if raw else (None, 0, [])
        return row_result(sb_rounds, sb_batches, sb_srv, *raw_part)

    def recv_rows(self, partitioned: bool, raw: bool) -> dict[str, Any]:
        label = "p16" if partitioned else "p1"
        q = self.queue(f"recv-{label}", partitioned)
        sender = self.client.get_queue_sender(q)
        receiver = self.client.get_queue_receiver(q)
        key = self.raw_key(f"recv-{label}")
        self.raw_reset_stream(key)
        # 16 batches per prefill unit: unkeyed batches go round-robin, one partition per batch,
        # so a multiple of 16 fills every partition equally.
        unit = 16 if partitioned else 1
        warm = 32 if self.quick else 64
        self.sb_send(sender, warm)
        done, spent = self.sb_drain(receiver, warm * BATCH)
        sb_rate = done / spent
        sb_batches = batches_for(sb_rate, self.round_s, 16, 20_000, unit)
        if raw:
            self.raw_send(key, warm)
            done, spent = self.raw_drain(key, warm * BATCH)
            raw_rate = done / spent
            raw_batches = batches_for(raw_rate, self.round_s, 16, 20_000)
        sb_rounds: list[float] = []
        raw_rounds: list[float] = []
        sb_srv: list[float] = []
        raw_srv: list[float] = []
        short = 0
        for _ in range(self.rounds):
            self.sb_send(sender, sb_batches)  # prefill, not timed
            gc.collect()
            u0 = self.server_usec(True)
            done, spent = self.sb_drain(receiver, sb_batches * BATCH)
            sb_srv.append((self.server_usec(True) - u0) / max(1, done))
            short += sb_batches * BATCH - done
            sb_rounds.append(done / spent)
            if raw:
                self.raw_reset_stream(key)  # acked entries stay in the stream: start each round empty
                self.raw_send(key, raw_batches)
                gc.collect()
                u0 = self.server_usec(False)
                done, spent = self.raw_drain(key, raw_batches * BATCH)
                raw_srv.append((self.server_usec(False) - u0) / max(1, done))
                short += raw_batches * BATCH - done
                raw_rounds.append(done / spent)
        receiver.close()
        if short:
            print(f"  warning: {short} prefilled messages were not received in {label} rounds", file=sys.stderr)
        raw_part = (raw_rounds, raw_batches, raw_srv) if raw else (None, 0, [])
        return row_result(sb_rounds, sb_batches, sb_srv, *raw_part)

    # -- latency rows
    def latency(self) -> dict[str, list[float]]:
        q = self.queue("lat")
        sender = self.client.get_queue_sender(q)
        receiver = self.client.get_queue_receiver(q)
        key = self.raw_key("lat")
        self.raw_reset_stream(key)
        r = self.r
        fields = {b"b": BODY}
        lat: dict[str, list[float]] = {
            k: [] for k in ("sb_send", "sb_recv", "sb_complete", "raw_xadd", "raw_xreadgroup", "raw_xack")
        }
        warm = 50
        gc.collect()
        for i in range(self.lat_n + warm):
            m = ServiceBusMessage(BODY)
            t0 = pc()
            sender.send_messages(m)
            t1 = pc()
            got = receiver.receive_messages(1, wait=False)
            t2 = pc()
            got[0].body  # noqa: B018
            t3 = pc()
            receiver.complete_message(got[0])
            t4 = pc()
            # raw
            r0 = pc()
            r.xadd(key, fields)
            r1 = pc()
            entries = xread_entries(r.xreadgroup("g", "c", {key: ">"}, count=1))
            r2 = pc()
            entries[0][1][b"b"]
            r3 = pc()
            r.xack(key, "g", entries[0][0])
            r4 = pc()
            if i >= warm:
                lat["sb_send"].append((t1 - t0) * 1e3)
                lat["sb_recv"].append((t2 - t1) * 1e3)
                lat["sb_complete"].append((t4 - t3) * 1e3)
                lat["raw_xadd"].append((r1 - r0) * 1e3)
                lat["raw_xreadgroup"].append((r2 - r1) * 1e3)
                lat["raw_xack"].append((r4 - r3) * 1e3)
        receiver.close()
        return lat

    def construction_cost_us(self) -> float:
        """Microseconds to build one ServiceBusMessage(1 KiB) (not counted in the send rows)."""
        n = 2000 if self.quick else 20000
        best = float("inf")
        for _ in range(3):
            t0 = pc()
            for _ in range(n):
                ServiceBusMessage(BODY)
            best = min(best, pc() - t0)
        return best / n * 1e6


# --------------------------------------------------------------------------- profile mode
def profile(url: str, seconds: float, top: int) -> None:
    """cProfile the sbredis send and receive+complete loops; print the top functions."""
    b = Bench(url, quick=True, rounds=1)
    try:
        q = b.queue("prof")
        sender = b.client.get_queue_sender(q)
        receiver = b.client.get_queue_receiver(q)
        b.sb_send(sender, 10)
        b.sb_drain(receiver, 1000)
        rate = 10 * BATCH / b.sb_send(sender, 10)
        b.sb_drain(receiver, 1000)
        batches = max(10, int(rate * seconds / BATCH))

        def send_loop() -> None:
            for _ in range(batches):
                sender.send_messages([ServiceBusMessage(BODY) for _ in range(BATCH)])

        def recv_loop() -> None:
            b.sb_drain(receiver, batches * BATCH)

        for title, fn in (
            ("sbredis send (100 fresh ServiceBusMessage per call, construction included)", send_loop),
            ("sbredis receive_messages(100) + body + complete_messages", recv_loop),
        ):
            prof = cProfile.Profile()
            prof.enable()
            fn()
            prof.disable()
            for sort in ("tottime", "cumulative"):
                s = io.StringIO()
                ps = pstats.Stats(prof, stream=s).strip_dirs().sort_stats(sort)
                ps.print_stats(top)
                text = s.getvalue()
                start = text.find("   ncalls")
                print(f"\n=== {title}: {batches * BATCH} msgs, sorted by {sort} ===")
                print(text[start:].rstrip() if start >= 0 else text)
        receiver.close()
    finally:
        b.cleanup()


# --------------------------------------------------------------------------- report
def machine_info(r: redis.Redis) -> dict[str, Any]:
    info = r.info("server")
    try:
        commit = (
            subprocess.run(
                ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=5
            ).stdout.strip()
            or None
        )
        dirty = bool(
            subprocess.run(
                ["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True, timeout=5
            ).stdout.strip()
        )
    except (OSError, subprocess.SubprocessError):
        commit, dirty = None, None
    try:
        from redis.utils import HIREDIS_AVAILABLE
    except ImportError:  # pragma: no cover
        HIREDIS_AVAILABLE = None  # noqa: N806
    return {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": platform.processor(),
        "python": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "cpu_count": os.cpu_count(),
        "redis_server_version": info.get("redis_version"),
        "redis_server_mode": info.get("redis_mode"),
        "redis_py_version": redis.__version__,
        "hiredis": HIREDIS_AVAILABLE,
        "sbredis_version": sbredis.__version__,
        "git_commit": commit,
        "git_dirty": dirty,
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }


def spread(xs: list[float]) -> float:
    m = median(xs)
    return (max(xs) - min(xs)) / m * 100 if m else 0.0


def fmt_rate(x: float) -> str:
    return f"{x / 1000:,.1f}k/s"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", help="Redis URL (default: start a private redis-server)")
    ap.add_argument("--quick", action="store_true", help="short rounds (whole run well under a minute)")
    ap.add_argument(
        "--rounds",
        type=int,
        default=None,
        help="rounds per throughput figure, median reported (default 5 with --quick, else 7)",
    )
    ap.add_argument("--out", type=Path, default=RESULTS, help=f"JSON output (default {RESULTS})")
    ap.add_argument(
        "--profile",
        action="store_true",
        help="instead of the bench, cProfile the sbredis send and receive+complete loops",
    )
    ap.add_argument("--profile-seconds", type=float, default=2.0)
    ap.add_argument("--profile-top", type=int, default=15)
    args = ap.parse_args(argv)
    if args.rounds is None:
        args.rounds = 5 if args.quick else 7
    if args.rounds < 1:
        ap.error("--rounds must be >= 1")

    server = None
    url = args.url
    if url is None:
        from tests.redis_server import RedisServer

        server = RedisServer().start()
        url = server.url
    try:
        if args.profile:
            profile(url, args.profile_seconds, args.profile_top)
            return 0
        return run(url, args)
    finally:
        if server is not None:
            server.stop()


def run(url: str, args: argparse.Namespace) -> int:
    started = pc()
    b = Bench(url, args.quick, args.rounds)
    try:
        info = machine_info(b.r)
        print(
            f"sbredis {info['sbredis_version']} | redis-server {info['redis_server_version']} | "
            f"redis-py {info['redis_py_version']} (hiredis={info['hiredis']}) | Python {info['python']} | "
            f"{info['cpu_count']} CPUs | {info['platform']}"
        )
        print(
            f"{'quick' if args.quick else 'full'} run: {args.rounds} rounds per figure, ~{b.round_s}s each, "
            f"1 KiB bodies, batches of {BATCH}; url {b.admin._transport.url}"
        )

        def step(name: str, fn: Callable[[], Any]) -> Any:
            t0 = pc()
            print(f"  {name} ...", end="", flush=True)
            out = fn()
            print(f" {pc() - t0:.1f}s", flush=True)
            return out

        send1 = step("batched send, 1 partition", lambda: b.send_rows(False, raw=True))
        recv1 = step("receive+complete, 1 partition", lambda: b.recv_rows(False, raw=True))
        send16 = step("batched send, 16 partitions", lambda: b.send_rows(True, raw=False))
        recv16 = step("receive+complete, 16 partitions", lambda: b.recv_rows(True, raw=False))
        lat = step(f"single-message latency x{b.lat_n}", b.latency)
        build_us = b.construction_cost_us()
    finally:
        b.cleanup()

    raw_send = median(send1["raw_rounds"])
    raw_recv = median(recv1["raw_rounds"])

    rows: list[dict[str, Any]] = []

    def tput(
        name: str, data: dict[str, Any], raw_med: float, raw_from: str, t_rate: float, t_ratio: float, raw_desc: str
    ) -> None:
        sb = median(data["sbredis_rounds"])
        ratio = sb / raw_med
        rows.append(
            {
                "operation": name,
                "unit": "msgs/s",
                "sbredis": sb,
                "raw": raw_med,
                "raw_op": raw_desc,
                "raw_from": raw_from,
                "ratio": ratio,
                "target": f">= {t_rate / 1000:g}k msgs/s and >= {t_ratio:g}x raw",
                "target_met": sb >= t_rate and ratio >= t_ratio,
                "sbredis_spread_pct": spread(data["sbredis_rounds"]),
                **data,
            }
        )

    tput(
        "batched send x100 (1 partition)", send1, raw_send, "same row", T_SEND_RATE, T_SEND_RATIO, "pipelined XADD x100"
    )
    tput(
        "receive 100 + complete (1 partition)",
        recv1,
        raw_recv,
        "same row",
        T_RECV_RATE,
        T_RECV_RATIO,
        "XREADGROUP COUNT 100 + XACK",
    )
    send16["raw_server_us_per_msg_ref"] = send1["raw_server_us_per_msg"]
    recv16["raw_server_us_per_msg_ref"] = recv1["raw_server_us_per_msg"]
    tput(
        "batched send x100 (16 partitions)",
        send16,
        raw_send,
        "1-partition row",
        T_SEND_RATE,
        T_SEND_RATIO,
        "pipelined XADD x100",
    )
    tput(
        "receive 100 + complete (16 partitions)",
        recv16,
        raw_recv,
        "1-partition row",
        T_RECV_RATE,
        T_RECV_RATIO,
        "XREADGROUP COUNT 100 + XACK",
    )

    def lrow(name: str, sb_key: str, raw_key: str, target: str | None, target_ms: float | None) -> None:
        for q in (50, 99):
            sb, raw = pct(lat[sb_key], q), pct(lat[raw_key], q)
            met = None
            if target_ms is not None and q == 50:
                met = sb <= target_ms
            rows.append(
                {
                    "operation": f"{name} p{q}",
                    "unit": "ms",
                    "sbredis": sb,
                    "raw": raw,
                    "raw_op": raw_key.removeprefix("raw_").upper(),
                    "raw_from": "same row",
                    "ratio": sb / raw if raw else None,
                    "target": target if q == 50 else None,
                    "target_met": met,
                    "iterations": len(lat[sb_key]),
                    "sbredis_mean": statistics.fmean(lat[sb_key]),
                    "raw_mean": statistics.fmean(lat[raw_key]),
                }
            )

    lrow("single send", "sb_send", "raw_xadd", f"p50 <= {T_SEND_P50_MS} ms", T_SEND_P50_MS)
    lrow("single receive", "sb_recv", "raw_xreadgroup", None, None)
    lrow("single complete", "sb_complete", "raw_xack", None, None)

    print_table(rows)
    print(f"\nServiceBusMessage(1 KiB body) construction: {build_us:.2f} us/msg (not inside the send figures)")
    print("ratio: throughput rows sbredis/raw (higher is better); latency rows sbredis/raw (lower is better).")
    print("16-partition rows are compared with the 1-partition raw figures (raw Redis has no partitions).")
    elapsed = pc() - started
    print(f"total {elapsed:.0f}s")

    doc = {
        "bench": "core",
        "mode": "quick" if args.quick else "full",
        "rounds": args.rounds,
        "round_seconds_target": b.round_s,
        "body_bytes": len(BODY),
        "batch": BATCH,
        "machine": info,
        "rows": rows,
        "message_construction_us": build_us,
        "latency_ms": {
            k: {
                "n": len(v),
                "mean": statistics.fmean(v),
                "p50": pct(v, 50),
                "p90": pct(v, 90),
                "p99": pct(v, 99),
                "max": max(v),
            }
            for k, v in lat.items()
        },
        "elapsed_s": elapsed,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


def print_table(rows: list[dict[str, Any]]) -> None:
    head = ("operation", "sbredis", "raw redis-py", "ratio", "target", "met", "sb spread", "server us/msg sb|raw")
    lines = []
    for row in rows:
        if row["unit"] == "msgs/s":
            sb, raw = fmt_rate(row["sbredis"]), fmt_rate(row["raw"])
            if row["raw_from"] != "same row":
                raw += "*"
            spread_s = f"{row['sbredis_spread_pct']:.0f}%"
            raw_srv = row.get("raw_server_us_per_msg", row.get("raw_server_us_per_msg_ref"))
            srv = f"{row['sbredis_server_us_per_msg']:.2f} | {raw_srv:.2f}"
        else:
            sb, raw = f"{row['sbredis']:.3f} ms", f"{row['raw']:.3f} ms"
            spread_s = srv = ""
        ratio = f"{row['ratio']:.2f}x" if row["ratio"] is not None else "-"
        met = {True: "yes", False: "NO", None: ""}[row["target_met"]]
        lines.append((row["operation"], sb, raw, ratio, row["target"] or "", met, spread_s, srv))
    widths = [max(len(str(x[i])) for x in [head, *lines]) for i in range(len(head))]

    def fmt(cells: tuple[str, ...]) -> str:
        out = []
        for i, (c, w) in enumerate(zip(cells, widths, strict=True)):
            out.append(c.ljust(w) if i in (0, 4, 5) else c.rjust(w))
        return " | ".join(out).rstrip()

    print()
    print(fmt(head))
    print("-+-".join("-" * w for w in widths))
    for line in lines:
        print(fmt(line))
    print("* raw figure from the 1-partition row; sb spread = (max-min)/median of the sbredis rounds;")
    print("  server us/msg = Redis-side command time (INFO commandstats) per message, median of the rounds")


if __name__ == "__main__":
    sys.exit(main())
