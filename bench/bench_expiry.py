#!/usr/bin/env python
"""Receiving one live message behind N expired ones (issue 23: expiry never hides a live message).

    python bench/bench_expiry.py [--n 10000,100000] [--rounds 3] [--cases drop,dead_letter,session]

Per case and N: N messages of 16 B with a 1 s TTL are sent in batches of 2,500, the TTL passes,
one live message is sent, and a receiver (max_wait_time=10) times ``receive_messages(1)`` until
the live message comes back. Cases: ``drop`` (a plain queue: expired messages are dropped),
``dead_letter`` (dead_lettering_on_message_expiration: each goes to the dead-letter queue with
its reason), ``session`` (a session queue, all messages in one session, received by session id),
``dead_letter_deferred`` (as ``dead_letter``, behind one deferred message without a TTL at the head
of the log: the sweep cannot trim the expired ones off the log's head and deletes each; not in the
default set).

Figures per receive, medians of --rounds with their spread ((max - min) / median), the cases and
sizes of one round run in turn so that the machine's load hits all of them alike:
- ``wall_ms``: the receive's wall time (the issue's target: under 1 s for 100,000);
- ``calls``: EVALSHA calls (INFO commandstats), and ``max_call_us``: the slowest (SLOWLOG with
  every command logged; the target: none over 50 ms);
- ``server_us_per_expired``: the server's main-thread CPU time (INFO cpu, which moves far less
  with the machine's load than wall time) per expired message, and ``script_us_per_expired``: the
  EVALSHA wall time (INFO commandstats) per expired message;
- ``client_gap_us``: the receive's wall time not spent inside EVALSHA, per call (the client's
  own time and the round trip between calls);
- ``client_cpu_ms``: the client process's CPU time during the receive (resource.getrusage);
- ``server_wait_ms``: how long redis-server waited for a CPU during the receive
  (/proc/<pid>/schedstat, a local server only): what the machine's load added to the wall time;
- ``load1``: the 1-minute load average when the round's case started (recorded, since the machine
  is shared);
- ``clean_ms`` and ``server_us_per_expired_clean``: after the live message, the receives (each
  finding nothing) until no expired message is left in the queue (with dead-lettering, the
  receive passes over expired messages ahead of the live one and later sweeps dead-letter them):
  their wall time, and the server CPU per expired message of the receive and these together
  (the whole cost of the backlog);
- ``commands_us_per_expired``: where the scripts' time goes, per expired message, by the Redis
  command they call (INFO commandstats counts a script's own calls): a command's own time, not
  the conversion of its arguments and reply between Lua and Redis, which is the rest of
  ``script_us_per_expired`` (commands under 0.05 µs left out).

Results go to bench/results/expiry.json with the machine and versions. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import time
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for path in (ROOT, ROOT / "bench"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

import redis  # noqa: E402
from bench_core import machine_info  # noqa: E402

from sbredis import ServiceBusClient, ServiceBusMessage  # noqa: E402
from sbredis.management import ServiceBusAdministrationClient  # noqa: E402
from tests.redis_server import RedisServer  # noqa: E402

TTL = timedelta(seconds=1)
BATCH = 2_500
CASES = ("drop", "dead_letter", "session")


def cpu_s(raw: redis.Redis) -> float:
    i = raw.info("cpu")
    return float(i["used_cpu_user_main_thread"]) + float(i["used_cpu_sys_main_thread"])


def client_cpu_s() -> float:
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime


def server_wait_s(pid: int | None) -> float:
    """Time redis-server's threads have waited on a run queue (0 when not readable)."""
    if pid is None:
        return 0.0
    try:
        return sum(int((t / "schedstat").read_text().split()[1]) for t in Path(f"/proc/{pid}/task").iterdir()) / 1e9
    except (OSError, ValueError, IndexError):
        return 0.0


def load1() -> float:
    try:
        return float(Path("/proc/loadavg").read_text().split()[0])
    except (OSError, ValueError):
        return 0.0


def server_ms(raw: redis.Redis) -> int:
    s, us = raw.time()
    return int(s) * 1000 + int(us) // 1000


def evalsha(raw: redis.Redis) -> tuple[int, int]:
    """(calls, µs) of EVALSHA/EVAL since the last CONFIG RESETSTAT."""
    calls = us = 0
    for k, v in raw.info("commandstats").items():
        if k.endswith(("evalsha", "eval")):
            calls += int(v["calls"])
            us += int(v["usec"])
    return calls, us


def commands(raw: redis.Redis, n: int) -> dict[str, float]:
    """µs per expired message of each command the scripts called, since the last CONFIG RESETSTAT."""
    out = {}
    for k, v in raw.info("commandstats").items():
        name = k.removeprefix("cmdstat_")
        if name not in ("evalsha", "eval", "script", "info", "config", "slowlog") and int(v["usec"]) / n >= 0.05:
            out[name] = round(int(v["usec"]) / n, 2)
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def spread(xs: list[float]) -> float:
    m = statistics.median(xs)
    return round((max(xs) - min(xs)) / m, 2) if m else 0.0


def one(
    client: ServiceBusClient, admin: ServiceBusAdministrationClient, raw: redis.Redis, case: str, n: int
) -> dict[str, Any]:
    la = load1()
    pid = int(raw.info("server")["process_id"]) if Path("/proc/self").exists() else None
    if pid is not None and not Path(f"/proc/{pid}").exists():
        pid = None  # a server on another host
    q = f"exp-{case}-{uuid.uuid4().hex[:8]}"
    kw: dict[str, Any] = {}
    if case.startswith("dead_letter"):
        admin.create_queue(q, dead_lettering_on_message_expiration=True)
    elif case == "session":
        admin.create_queue(q, requires_session=True)
        kw["session_id"] = "s"
    else:
        admin.create_queue(q)
    if case.endswith("_deferred"):  # the log's oldest entry: deferred, never expiring
        with client.get_queue_sender(q) as s:
            s.send_messages(ServiceBusMessage("deferred"))
        with client.get_queue_receiver(q, max_wait_time=5) as r:
            r.defer_message(r.receive_messages(1)[0])
    with client.get_queue_sender(q) as s:
        for i in range(0, n, BATCH):
            s.send_messages([ServiceBusMessage(b"e" * 16, time_to_live=TTL, **kw) for _ in range(min(BATCH, n - i))])
    gone = server_ms(raw) + int(TTL.total_seconds() * 1000)
    while server_ms(raw) <= gone:
        time.sleep(0.02)
    with client.get_queue_sender(q) as s:
        s.send_messages(ServiceBusMessage("live", **kw))
    sid = kw.get("session_id")
    with client.get_queue_receiver(q, session_id=sid, max_wait_time=10) as r:
        if sid is None:
            r.peek_messages(1, sequence_number=1 << 62)  # metadata read outside the timed receive
        raw.config_set("slowlog-log-slower-than", 0)
        raw.slowlog_reset()
        raw.config_resetstat()
        cpu0, ccpu0, w0 = cpu_s(raw), client_cpu_s(), server_wait_s(pid)
        t0 = time.perf_counter()
        got = r.receive_messages(max_message_count=1, max_wait_time=10)
        wall = time.perf_counter() - t0
        ccpu = client_cpu_s() - ccpu0
        cpu = cpu_s(raw) - cpu0
        waited = server_wait_s(pid) - w0
        calls, us = evalsha(raw)
        per_command = commands(raw, n)
        slow = [
            int(e["duration"])
            for e in raw.slowlog_get(4096)
            if e["command"].split(b" ", 1)[0].upper() in (b"EVALSHA", b"EVAL")
        ]
        raw.config_set("slowlog-log-slower-than", 10_000)
        ok = [str(m) for m in got] == ["live"]
        r.complete_messages(got)
        t1 = time.perf_counter()
        deadline = t1 + 60
        left = 1 if case.endswith("_deferred") else 0  # the deferred message stays
        while admin.get_queue_runtime_properties(q).active_message_count > left and time.perf_counter() < deadline:
            r.receive_messages(max_message_count=1, max_wait_time=0.2)
        clean = time.perf_counter() - t1
        cpu_all = cpu_s(raw) - cpu0
    admin.delete_queue(q)
    return {
        "commands_us_per_expired": per_command,
        "ok": float(ok),
        "wall_ms": wall * 1000,
        "calls": calls,
        "max_call_us": max(slow, default=0),
        "server_us_per_expired": cpu * 1e6 / n,
        "clean_ms": clean * 1000,
        "server_us_per_expired_clean": cpu_all * 1e6 / n,
        "script_us_per_expired": us / n,
        "client_gap_us": (wall * 1e6 - us) / max(calls, 1),
        "client_cpu_ms": ccpu * 1000,
        "server_wait_ms": waited * 1000,
        "load1": la,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", default="10000,100000")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--url", help="an existing server (else a private redis-server is started)")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "expiry.json"))
    args = ap.parse_args()
    sizes = [int(x) for x in args.n.split(",")]
    cases = args.cases.split(",")
    srv = None if args.url else RedisServer().start()
    url = args.url or srv.url  # type: ignore[union-attr]
    raw = redis.Redis.from_url(url)
    raw.config_set("slowlog-max-len", 4096)
    info = machine_info(raw)
    runs: dict[tuple[str, int], list[dict[str, Any]]] = {(c, n): [] for c in cases for n in sizes}
    try:
        with (
            ServiceBusAdministrationClient.from_connection_string(url) as admin,
            ServiceBusClient.from_connection_string(url) as client,
        ):
            one(client, admin, raw, cases[0], 1000)  # warm-up: scripts loaded, connections open
            for rnd in range(args.rounds):
                for n in sizes:
                    for c in cases:
                        res = one(client, admin, raw, c, n)
                        runs[(c, n)].append(res)
                        print(f"round {rnd + 1} {c:12} {n:>7}: {res}", file=sys.stderr, flush=True)
    finally:
        raw.close()
        if srv is not None:
            srv.stop()
    rows = []
    keys = ("wall_ms", "calls", "max_call_us", "server_us_per_expired", "script_us_per_expired", "client_gap_us")
    for (c, n), rs in runs.items():
        row: dict[str, Any] = {"case": c, "expired": n, "all_received": all(r["ok"] for r in rs)}
        for k in (*keys, "clean_ms", "server_us_per_expired_clean", "client_cpu_ms", "server_wait_ms", "load1"):
            xs = [r[k] for r in rs]
            row[k] = round(statistics.median(xs), 2)
            row[k + "_spread"] = spread(xs)
        row["max_call_us_max"] = max(r["max_call_us"] for r in rs)
        names = {c for r in rs for c in r["commands_us_per_expired"]}
        medians = {c: statistics.median(r["commands_us_per_expired"].get(c, 0.0) for r in rs) for c in sorted(names)}
        row["commands_us_per_expired"] = {c: round(v, 2) for c, v in medians.items() if v >= 0.05}
        row["rounds"] = [{k: round(v, 2) for k, v in r.items() if k != "commands_us_per_expired"} for r in rs]
        rows.append(row)
    print(
        f"{'case':12} {'expired':>8} {'wall ms':>9} {'calls':>6} {'max call us':>12} "
        f"{'srv us/exp':>11} {'script us/exp':>14} {'gap us/call':>12}"
    )
    for row in rows:
        print(
            f"{row['case']:12} {row['expired']:>8} {row['wall_ms']:>9.0f} {row['calls']:>6.0f} "
            f"{row['max_call_us_max']:>12.0f} {row['server_us_per_expired']:>11.2f} "
            f"{row['script_us_per_expired']:>14.2f} {row['client_gap_us']:>12.0f}"
        )
    out = Path(args.out)
    out.write_text(json.dumps({"machine": info, "rounds": args.rounds, "rows": rows}, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
