#!/usr/bin/env python
"""Server time of one publish to a topic with hundreds to thousands of subscriptions.

    python bench/bench_fanout_wide.py [--subs 100,500,1000,2000] [--rounds 7]

A publish wider than one script call's budget is split across calls (docs/topics.md, "Wide
fan-outs"): read-only checks of each chunk, a start call and continuations. Per subscription
count (one topic partition, $Default rules, 100-byte bodies), for a one-message and a ten-message
publish, the split publish and the same publish as one atomic call (the budget raised past it),
rounds alternating between the two: the longest single script call (SLOWLOG, every call logged:
the bound is 50 ms), the number of script calls, the Redis-side EVALSHA time summed (INFO
commandstats: wall time, which includes time the server lost the CPU), the server's main-thread
CPU time (INFO cpu, which moves far less with the machine's load) and the client process's CPU
time (getrusage); medians of --rounds with their spread. Results go to
bench/results/fanout_wide.json. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for path in (ROOT, ROOT / "bench"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

import redis  # noqa: E402
from bench_core import machine_info  # noqa: E402

from sbredis import ServiceBusClient, ServiceBusMessage  # noqa: E402
from sbredis._core.protocol import publish  # noqa: E402
from sbredis.management import ServiceBusAdministrationClient  # noqa: E402
from tests.redis_server import RedisServer  # noqa: E402


def cpu_s(raw: redis.Redis) -> float:
    i = raw.info("cpu")
    return float(i["used_cpu_user_main_thread"]) + float(i["used_cpu_sys_main_thread"])


def client_cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def measure(raw: redis.Redis, send: Any) -> dict[str, int]:
    """One send: the longest script call (µs), how many script calls, their summed EVALSHA wall
    µs, the server's main-thread CPU µs and this process's CPU µs."""
    raw.config_resetstat()
    raw.slowlog_reset()
    before, mine = cpu_s(raw), client_cpu_s()
    send()
    cpu, client = cpu_s(raw) - before, client_cpu_s() - mine
    calls = [e for e in raw.slowlog_get(100_000) if str(e["command"]).upper().startswith(("B'EVAL", "EVAL"))]
    wall = sum(int(v["usec"]) for k, v in raw.info("commandstats").items() if "eval" in k)
    return {
        "max_call_us": max((int(e["duration"]) for e in calls), default=0),
        "calls": len(calls),
        "eval_us": wall,
        "cpu_us": round(cpu * 1e6),
        "client_cpu_us": round(client * 1e6),
    }


def spread(xs: list[int]) -> float:
    """(max - min) / median."""
    m = statistics.median(xs)
    return round((max(xs) - min(xs)) / m, 2) if m else 0.0


def summary(samples: list[dict[str, int]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in samples[0]:
        xs = [x[key] for x in samples]
        out[key] = statistics.median(xs)
        out[key + "_max"] = max(xs)
        out[key + "_spread"] = spread(xs)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--subs", default="100,500,1000,2000")
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    srv = RedisServer().start()
    raw = redis.Redis.from_url(srv.url)
    raw.config_set("slowlog-log-slower-than", 0)  # every call: the longest is what matters
    raw.config_set("slowlog-max-len", 100_000)
    info = machine_info(raw)
    rows = []
    split_budget = publish.BUDGET
    try:
        admin = ServiceBusAdministrationClient.from_connection_string(srv.url)
        client = ServiceBusClient.from_connection_string(srv.url)
        for n in (int(x) for x in args.subs.split(",")):
            topic = f"wide-{n}"
            admin.create_topic(topic)
            for i in range(n):
                admin.create_subscription(topic, f"s{i}")
            row: dict[str, Any] = {"subscriptions": n}
            with client.get_topic_sender(topic) as sender:
                sender.send_messages(ServiceBusMessage("warm"))
                for count in (1, 10):
                    got: dict[str, list[dict[str, int]]] = {"split": [], "atomic": []}
                    for _ in range(args.rounds):
                        for how in ("split", "atomic"):  # alternating: both see the same load
                            publish.BUDGET = split_budget if how == "split" else 10**9
                            msgs = [ServiceBusMessage("x" * 100) for _ in range(count)]
                            got[how].append(measure(raw, lambda msgs=msgs: sender.send_messages(msgs)))
                    publish.BUDGET = split_budget
                    for how, samples in got.items():
                        row[f"{how}_{count}"] = summary(samples)
            admin.delete_topic(topic)
            rows.append(row)
            print(json.dumps(row), flush=True)
    finally:
        publish.BUDGET = split_budget
        srv.stop()
    out = ROOT / "bench" / "results" / "fanout_wide.json"
    doc = {"machine": info, "rounds": args.rounds, "budget": split_budget, "rows": rows}
    out.write_text(json.dumps(doc, indent=2) + "\n")


if __name__ == "__main__":
    main()
