"""Write docs/benchmarks.md from bench/results/*.json (the page's figures are these files' figures).

    python scripts/bench_page.py            # rewrite the page
    python scripts/bench_page.py --check    # exit 1 when the page differs from what the JSON gives

tests/docs/test_benchmarks_page.py runs the check, so a new or re-run benchmark without a
regenerated page fails the suite. Files this script has no section for get a generic one (their
machine and their numbers, flattened), so adding a benchmark never breaks the page.
"""

from __future__ import annotations

import functools
import json
import statistics
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
PAGE = ROOT / "docs" / "benchmarks.md"

Json = dict[str, Any]


def rate(x: float) -> str:
    return f"{x / 1000:.1f}k" if x >= 1000 else f"{x:.0f}"


def ms(x: float) -> str:
    return f"{x:.3f}" if x < 1 else f"{x:.2f}"


def ratio(x: float) -> str:
    return f"{x:.2f}x" if x < 10 else f"{x:.0f}x"


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return [*out, ""]


# ------------------------------------------------------------------------------------- machine
def _machine(d: Json) -> Json:
    """The run's machine record (some files keep only the architecture as a string)."""
    m = d.get("machine")
    return m if isinstance(m, dict) else {"platform": m or ""}


def machine_row(name: str, d: Json) -> list[str]:
    """file, date, platform, CPUs, Python, redis-server, redis-py, hiredis."""
    m = _machine(d)
    versions = d.get("versions") or {}
    cpu = f"{m.get('cpu_count', m.get('cpus', ''))} {m.get('cpu_model', '')}".strip()
    redis_server = versions.get("redis_server") or m.get("redis_server_version") or ""
    redis_py = versions.get("redis_py") or m.get("redis_py_version") or ""
    hiredis = versions.get("hiredis") or ("yes" if m.get("hiredis") else "")
    platform = m.get("platform") or m.get("machine") or ""
    python = str(m.get("python", d.get("python", "")))
    return [f"`{name}`", str(m.get("date", ""))[:10], str(platform), cpu, python, redis_server, redis_py, str(hiredis)]


def machines(results: dict[str, Json]) -> list[str]:
    header = ["file", "date", "platform", "CPUs", "Python", "redis-server", "redis-py", "hiredis", "other"]
    rows = []
    for name, d in results.items():
        m = _machine(d)
        row = machine_row(name, d)
        other = []
        if m.get("sbredis_version"):
            other.append(f"sbredis {m['sbredis_version']}")
        other += [f"{k.removesuffix('_version')} {v}" for k, v in m.items() if k in ("pyspark", "celery_version")]
        rows.append([*row, ", ".join(other)])
    return [
        "## Machine and versions",
        "",
        "Every run below is on the development machine: 2 shared, noisy cores (other jobs ran at the",
        "same time), one local `redis-server` on loopback, client and server on the same cores. Figures",
        "from different files are from different runs; compare within a table. Most files also record",
        "the git commit they measured.",
        "",
        *table(header, rows),
    ]


# ---------------------------------------------------------------------------------- sections
def core(d: Json, *, server_in_title: bool = False) -> Iterator[str]:
    version = _machine(d).get("redis_server_version")
    yield f"## Core operations, redis-server {version}" if server_in_title and version else "## Core operations"
    yield ""
    yield (
        f"`bench/bench_core.py`: one process, {d['body_bytes']} B bodies, batches of {d['batch']}, "
        f"medians of {d['rounds']} rounds of "
        f"about {d['round_seconds_target']:g} s, sbredis and raw redis-py rounds alternating. Raw is the "
        "closest plain Redis equivalent without sbredis's guarantees (no lock deadline, delivery count or expiry)."
    )
    yield ""
    rows = []
    for r in d["rows"]:
        fmt = rate if r["unit"] == "msgs/s" else ms
        raw = fmt(r["raw"]) + ("*" if r.get("raw_from", "same row") != "same row" else "")
        met = {True: "yes", False: "no", None: ""}[r.get("target_met")]
        spread = f"{r['sbredis_spread_pct']:.0f}%" if "sbredis_spread_pct" in r else ""
        server = ""
        if "sbredis_server_us_per_msg" in r:
            raw_us = r.get("raw_server_us_per_msg", r.get("raw_server_us_per_msg_ref"))
            server = f"{r['sbredis_server_us_per_msg']:.2f} / {raw_us:.2f}"
        target = r.get("target") or ""
        rows.append([r["operation"], r["unit"], fmt(r["sbredis"]), raw, r["raw_op"], ratio(r["ratio"]), target])
        rows[-1] += [met, spread, server]
    header = ["operation", "unit", "sbredis", "raw", "raw does", "sbredis / raw", "target", "met", "spread"]
    yield from table([*header, "server µs/msg sb / raw"], rows)
    yield (
        "\\* raw figure from the 1-partition row. Spread: (max - min) / median of the sbredis rounds. Server "
        "µs/msg: Redis-side command time per message (`INFO commandstats`), median of the rounds." + _single_rows(d)
    )
    yield ""


def _single_rows(d: Json) -> str:
    """The single-operation rows come from a later run than the others, when the file says so."""
    s = d.get("single_rows")
    if not s:
        return ""
    return (
        f" The single-operation rows are from a later `--{s['mode']}` run ({s['date']}, load average "
        f"{s['load_average_1min']:.1f}), after the one-message settlement work of the loops section below."
    )


def floors(d: Json) -> Iterator[str]:
    yield "## Floors: how close a script-based broker can come to raw"
    yield ""
    yield (
        f"`bench/bench_floors.py`: one process, {d['body_bytes']} B bodies, batches of {d['batch']}, medians of "
        f"{d['rounds']} rounds, all variants alternating in each round. Between raw and sbredis: scripts that do "
        "only the unavoidable part of each operation (see the script's docstring), so the distance to raw of "
        "any broker built on Lua, streams and sorted sets is measured."
    )
    yield ""
    rows = [
        [r["kind"], r["variant"], rate(r["msgs_per_s"]), ratio(r["ratio_to_raw"]), f"{r['server_us_per_msg']:.2f}"]
        for r in d["rows"]
    ]
    yield from table(["operation", "variant", "msgs/s", "vs raw", "server µs/msg"], rows)


def peers(d: Json) -> Iterator[str]:
    yield "## Against other Redis queues"
    yield ""
    sizes = [str(s) for s in d["payload_sizes"]]
    v = d["versions"]
    yield (
        "`bench/bench_peers.py`: one redis-server; a producer and a no-op worker running together. "
        "msgs/s: end-to-end medians of "
        f"{d['rounds']} rounds; p50/p99: send-to-receive latency at 50 % of each system's own maximum. "
        f"Celery/kombu {v['celery']}, Dramatiq {v['dramatiq']}, RQ {v['rq']}, saq {v['saq']}, "
        f"BullMQ {v['bullmq']} on node {v['node'].lstrip('v')}."
    )
    yield ""
    header = ["system", "setup"]
    for s in sizes:
        header += [f"{s} B msgs/s", f"{s} B p50 ms", f"{s} B p99 ms", f"{s} B Redis cmds/msg", f"{s} B sbredis is"]
    rows = []
    for name, system in d["systems"].items():
        row = [name, system["setup"]]
        for s in sizes:
            e = system["e2e"][s]
            ahead = d["ratios_sbredis_over"][name][s]
            row += [rate(e["e2e_median"]), ms(e["p50_ms"]), ms(e["p99_ms"]), f"{e['cmds_per_msg']:.1f}"]
            row.append("" if name == "sbredis" else ratio(ahead))
        rows.append(row)
    yield from table(header, rows)
    yield "Targets, as measured in this run:"
    yield ""
    rows = []
    for t in d["targets"]:
        measured = t["measured"] + (f" ({t['control']})" if t.get("control") else "")
        rows.append([t["target"], str(t["payload"]), measured, "yes" if t["pass"] else "no"])
    yield from table(["target", "payload B", "measured", "met"], rows)


def cluster(d: Json) -> Iterator[str]:
    yield "## Standalone vs cluster"
    yield ""
    yield (
        f"`bench/bench_cluster.py`: {d['messages']} messages, 16 partitions, 1 KiB, medians of "
        f"{len(d['rounds']['standalone'])} rounds; "
        f"the cluster is three local servers on the same cores. {d.get('note', '')}."
    )
    yield ""
    s, c = d["medians"]["standalone"], d["medians"]["cluster"]
    rows = []
    for key, label, fmt in (
        ("send_msgs_s", "batched send, msgs/s", rate),
        ("recv_complete_msgs_s", "receive + complete, msgs/s", rate),
        ("single_send_p50_ms", "single send p50, ms", ms),
    ):
        rows.append([label, fmt(s[key]), fmt(c[key]), ratio(c[key] / s[key])])
    yield from table(["measure", "standalone", "cluster", "cluster / standalone"], rows)


def latency(d: Json) -> Iterator[str]:
    yield "## Through a slow link"
    yield ""
    yield (
        f"`bench/bench_latency.py`: a TCP proxy adds a {d['rtt_ms']:g} ms round trip between client and "
        "Redis; async sends."
    )
    yield ""
    yield from table(["100 sends", "seconds"], [[k, f"{v:.2f}"] for k, v in d["seconds"].items()])


def fanout_wide(d: Json) -> Iterator[str]:
    yield "## Topics with many subscriptions"
    yield ""
    if "budget" not in d:  # results written before publishes were split
        yield from _fanout_wide_atomic(d)
        return
    yield (
        "`bench/bench_fanout_wide.py`: one publish of 1 and of 10 messages of 100 B to a 1-partition topic whose "
        "subscriptions all match (at most 2,000, the per-topic cap), split across script calls of at most "
        f"{d['budget']} work units (split) and, in alternating rounds, as one atomic call (atomic): the longest "
        "single script call (SLOWLOG, wall time: the bound is 50 ms), script calls per publish, the server's "
        "main-thread CPU time (`INFO cpu`, which moves far less with the machine's load) and the client process's "
        f"CPU time, medians of {d['rounds']} ([Topics](topics.md#wide-fan-outs))."
    )
    yield ""
    rows = []
    for r in d["rows"]:
        for count in (1, 10):
            sp, at = r[f"split_{count}"], r[f"atomic_{count}"]
            rows.append(
                [
                    str(r["subscriptions"]),
                    str(count),
                    f"{sp['calls']:.0f}",
                    ms(sp["max_call_us"] / 1000),
                    ms(sp["max_call_us_max"] / 1000),
                    ms(at["max_call_us"] / 1000),
                    ms(sp["cpu_us"] / 1000),
                    ms(at["cpu_us"] / 1000),
                    ms(sp["client_cpu_us"] / 1000),
                    ms(at["client_cpu_us"] / 1000),
                ]
            )
    header = ["subscriptions", "messages", "calls", "longest call ms", "worst round", "atomic: longest"]
    header += ["server CPU ms", "atomic", "client CPU ms", "atomic"]
    yield from table(header, rows)
    yield "Longest call: the median over the rounds of each publish's longest script call; worst round: its maximum."
    yield ""


def _fanout_wide_atomic(d: Json) -> Iterator[str]:
    yield (
        "`bench/bench_fanout_wide.py`: one publish of 1 and of 10 messages of 100 B to a 1-partition topic whose "
        "subscriptions all match (at most 2,000, the per-topic cap): the server's main-thread CPU time "
        "(`INFO cpu`, which moves far less with the machine's load) and the script's wall time (`INFO commandstats`), "
        f"medians of {d['rounds']} ([Topics](topics.md#fan-out-cost-with-many-subscriptions))."
    )
    yield ""
    rows = [
        [
            str(r["subscriptions"]),
            ms(r["publish_1_cpu_us"] / 1000),
            ms(r["publish_1_us"] / 1000),
            f"{r['publish_1_spread']:.0%}",
            ms(r["publish_10_cpu_us"] / 1000),
            ms(r["publish_10_us"] / 1000),
            f"{r['publish_10_spread']:.0%}",
        ]
        for r in d["rows"]
    ]
    header = ["subscriptions", "1 message: CPU ms", "wall ms", "wall spread", "10 messages: CPU ms", "wall ms"]
    yield from table([*header, "wall spread"], rows)
    yield "Spread: (max - min) / median of the rounds' wall times; the CPU times' spreads are in the JSON."
    yield ""


def expiry(d: Json) -> Iterator[str]:
    yield "## Expiry behind a backlog"
    yield ""
    yield (
        "`bench/bench_expiry.py`: one `receive_messages(1)` that finds the one live message sent after N expired "
        "messages of 16 B (1 partition): on a plain queue (they are dropped), with dead-lettering on expiration, "
        "in a session queue (one session), and with dead-lettering behind one deferred message at the head of "
        "the log (dead-letter-deferred: the sweep cannot trim the expired entries off the log's head, and "
        "deletes each with `XDEL`). Wall time of the receive, its script calls and the slowest "
        "(SLOWLOG), the server's main-thread CPU per expired message (`INFO cpu`, which moves far less with the "
        "machine's load than wall time), the receive's wall time outside the scripts per call (the client and "
        "the round trip), and how long redis-server waited for a CPU during the receive (`/proc/<pid>/schedstat`: "
        "what the machine's load added), with the 1-minute load average of the machine, shared with other work, "
        f"when each case started; medians of {d['rounds']} rounds ([Per-call caps](keyspace.md#per-call-caps)). "
        "With dead-lettering, a receive that finds expired messages past its cursor gives the sweep 3 ms of the "
        "call and passes over them for 9 ms without expiring them (a read costs a fraction of a dead-lettering), "
        "so the live message comes before the backlog is swept; the receives that follow, finding nothing, "
        "dead-letter the rest. Clean-up: those receives' wall time, until no expired message is left; server CPU "
        "whole: per expired message, the receive and the clean-up together (the backlog's whole cost). A plain "
        "queue and a session queue sweep their backlog in order before the live message (a drop off the log's "
        "head costs about a read)."
    )
    yield ""
    rows = [
        [
            r["case"].replace("_", "-"),
            f"{r['expired']:,}",
            ms(r["wall_ms"]),
            f"{r['wall_ms_spread']:.0%}",
            f"{r['calls']:.0f}",
            ms(r["max_call_us_max"] / 1000),
            f"{r['server_us_per_expired']:.2f}",
            f"{r['client_gap_us'] / 1000:.2f}",
            ms(r.get("clean_ms", 0.0)),
            f"{r.get('server_us_per_expired_clean', r['server_us_per_expired']):.2f}",
            ms(r.get("server_wait_ms", 0.0)),
            f"{r.get('load1', 0.0):.1f}",
        ]
        for r in d["rows"]
    ]
    header = ["case", "expired", "receive ms", "spread", "script calls", "slowest call ms", "server CPU µs/expired"]
    extra = ["client ms/call", "clean-up ms", "server CPU µs/expired, whole", "server waited ms", "load"]
    yield from table([*header, *extra], rows)
    yield (
        "Spread: (max - min) / median of the rounds' receive times. Slowest call: the largest over all rounds. "
        "Each round's figures are in the JSON."
    )
    yield ""
    split = [r for r in d["rows"] if r.get("commands_us_per_expired")]
    if not split:
        return
    yield (
        "Where the server's CPU per expired message goes during the receive (medians; the clean-up not counted): "
        "the commands the scripts call, each its own "
        "time (`INFO commandstats`), and the rest: the Lua code, and the conversion of each command's arguments "
        "and reply between Lua and Redis (a chunk of 500 log entries read into Lua took about three times "
        "the `XRANGE`'s own time)."
    )
    yield ""
    rows = []
    for r in split:
        cmds = r["commands_us_per_expired"]
        top = sorted(cmds.items(), key=lambda kv: -kv[1])
        rows.append(
            [
                r["case"].replace("_", "-"),
                f"{r['expired']:,}",
                ", ".join(f"{c.upper()} {v:.2f}" for c, v in top[:5]),
                f"{max(r['server_us_per_expired'] - sum(cmds.values()), 0.0):.2f}",
            ]
        )
    yield from table(["case", "expired", "commands, µs/expired", "the rest, µs/expired"], rows)


def topics(d: Json) -> Iterator[str]:
    s = d["settings"]
    yield "## Topics"
    yield ""
    yield (
        f"`bench/bench_topics.py`: batches of {s['batch']} messages of {s['body_bytes']} B published to "
        "a 1-partition topic, medians of "
        f"{s['rounds']} rounds of about {s['seconds']:g} s. Half match: each message matches the filter of half "
        "the subscriptions."
    )
    yield ""
    rows = []
    for name, t in d["throughput"].items():
        copies = rate(t["copies_per_s"]) if "copies_per_s" in t else rate(t["msgs_per_s"])
        rows.append([name, rate(t["msgs_per_s"]), copies, f"{t['server_us_per_msg']:.2f}"])
    yield from table(["publish", "msgs/s", "copies/s", "server µs/msg"], rows)
    rows = [[name, ms(t["p50_ms"]), ms(t["p99_ms"]), str(t["n"])] for name, t in d["latency"].items()]
    yield from table(["single publish", "p50 ms", "p99 ms", "n"], rows)


def paired(d: Json) -> Iterator[str]:
    s = d["settings"]
    yield "## Paired namespaces"
    yield ""
    yield (
        f"`bench/bench_paired.py`: {d['messages']} messages of {s['body_bytes']} B sent in batches of "
        f"{s['batch']} to a backlog queue while the primary is down, then moved back by one syphon; the idle "
        f"syphon watches {s['backlog_queue_count']} backlog queues every {s['poll_interval_s']:g} s."
    )
    yield ""
    idle = d["idle_siphon_calls_per_s"]
    rows = [
        ["send to a backlog queue", rate(d["backlog_send_msgs_per_s"]) + " msgs/s"],
        ["syphon to the primary", rate(d["siphon_msgs_per_s"]) + " msgs/s"],
        ["idle syphon, secondary", f"{idle['secondary']:.1f} script calls/s"],
        ["idle syphon, primary", f"{idle['primary']:.1f} script calls/s"],
    ]
    yield from table(["operation", "rate"], rows)


def sessions(d: Json) -> Iterator[str]:
    st = d["settings"]
    yield "## Sessions"
    yield ""
    yield (
        f"`bench/bench_sessions.py`: {st['sessions']} sessions x {st['per_session']} messages of "
        f"{st['body_bytes']} B, {st['partitions']} partitions, one process, medians of {st['rounds']} rounds. "
        "The plain queue's messages carry the session id as their partition key."
    )
    yield ""
    rows = [[name, rate(r["msgs_per_s"]), f"{r['server_us_per_msg']:.1f}"] for name, r in d["throughput"].items()]
    yield from table(["operation", "msgs/s", "server µs/msg"], rows)
    rows = [[name, ratio(v)] for name, v in d["ratios"].items()]
    yield from table(["session queue / plain queue", "msgs/s"], rows)


def transactions(d: Json) -> Iterator[str]:
    st = d["settings"]
    yield "## Transactions"
    yield ""
    yield (
        f"`bench/bench_transactions.py`: one operation at a time on the sync client, {st['body_bytes']} B bodies, "
        f"medians of {st['iterations']} iterations; `via`: the send goes to another queue, delivered before "
        "the commit returns."
    )
    yield ""
    rows = [
        [
            name,
            ms(r["median_ms"]),
            ms(r["p99_ms"]),
            f"{r['server_us_per_op']:.1f}",
            ratio(r["ratio"]) + f" {r['vs']}" if "ratio" in r else "",
        ]
        for name, r in d["rows"].items()
    ]
    yield from table(["operation", "median ms", "p99 ms", "server µs/op", "vs the plain calls"], rows)


def _load(d: Json) -> str:
    m = _machine(d)
    a, b = m.get("loadavg_at_start"), m.get("loadavg_at_end")
    if not a or not b:
        return ""
    return f" (1-minute load average {a[0]:.1f} at its start, {b[0]:.1f} at its end, on 2 cores)"


def _celery_rounds(d: Json, config: str) -> tuple[list[Json], list[Json]]:
    w = d["workers"]
    return (
        w.get(f"Celery {config} | sbredis://", {}).get("round_details", []),
        w.get(f"Celery {config} | redis:// (kombu)", {}).get("round_details", []),
    )


def _all_cpu(r: Json) -> float:
    return float(r["worker_cpu_us_per_task"] + r["redis_cpu_us_per_task"] + r["producer_cpu_us_per_task"])


def _cpu_ratio_celery(d: Json, config: str) -> str:
    """redis:// over sbredis:// in CPU per task of worker, redis-server and producer together
    (medians over the rounds): the ratio of rates if the three had the cores to themselves."""
    sb, rd = _celery_rounds(d, config)
    if not sb or not rd:
        return ""
    return ratio(statistics.median(_all_cpu(r) for r in rd) / statistics.median(_all_cpu(r) for r in sb))


def _below_one(d: Json) -> list[str]:
    """One clause per round whose sbredis:// / redis:// ratio fell below 1.0."""
    out = []
    for config, p in (d.get("celery_sbredis_vs_redis") or {}).items():
        sb, rd = _celery_rounds(d, config)
        for i, x in enumerate(p["ratios"]):
            if x >= 1.0 or i >= len(sb) or i >= len(rd):
                continue
            a, b = sb[i], rd[i]
            out.append(
                f"{config}, round {i + 1}: {x:.2f}x; sbredis:// {_all_cpu(a):.0f} us of CPU per task "
                f"(redis:// {_all_cpu(b):.0f}), its processes busy {_all_cpu(a) * a['tasks_per_s'] / 1e6:.2f} "
                f"cores (redis:// {_all_cpu(b) * b['tasks_per_s'] / 1e6:.2f}), the producer done at "
                f"{a['producer_share']:.0%} of the round (redis:// {b['producer_share']:.0%}), load "
                f"{a['loadavg_1m']:.1f}, longest stall {a['longest_stall_s']:.2f} s"
            )
    return out


def _celery_findings(d: Json) -> Iterator[str]:
    """What the per-round figures of the Celery rows say (bench_workers.py's round_details)."""
    pairs = d.get("celery_sbredis_vs_redis") or {}
    rounds = {c: _celery_rounds(d, c) for c in pairs}
    if not all(sb and rd for sb, rd in rounds.values()):
        return
    evalsha = [
        r["redis_calls_per_task"].get("evalsha", 0.0) for c, (sb, _) in rounds.items() if "prefetch 1" in c for r in sb
    ]
    med = statistics.median

    def share(c: str, i: int) -> float:
        return float(med(r["producer_share"] for r in rounds[c][i]))

    bound = [c for c in pairs if share(c, 0) >= 0.85]
    worker = [
        1 - med(r["worker_cpu_us_per_task"] for r in sb) / med(r["worker_cpu_us_per_task"] for r in rd)
        for sb, rd in rounds.values()
    ]
    server = [
        med(r["redis_cpu_us_per_task"] for r in sb) / med(r["redis_cpu_us_per_task"] for r in rd)
        for sb, rd in rounds.values()
    ]
    yield (
        f"What is left per task is {min(evalsha):.2f}-{max(evalsha):.2f} script calls at prefetch 1 "
        "(a send, a receive and a share of a batched complete; INFO commandstats per round) against "
        "LPUSH, BRPOP and two MULTI/EXEC on redis://. The worker spends "
        f"{min(worker):.0%}-{max(worker):.0%} less CPU per task on sbredis:// than on redis://; "
        f"redis-server spends {min(server):.1f}x-{max(server):.1f}x as much (a script call costs it "
        "tens of microseconds, a list or hash command a few); worker, redis-server and producer "
        "together cost less on sbredis:// in every configuration (the last column)."
    )
    yield ""
    below = _below_one(d)
    stalls = sorted((r["longest_stall_s"], r["loadavg_1m"]) for sb, _ in rounds.values() for r in sb)
    (second, _), (worst, worst_load) = stalls[-2], stalls[-1]
    if worst > 2 * second + 0.05:
        stall_text = (
            f"stalled for {second:.2f} s at most in all rounds but one ({worst:.2f} s, at load {worst_load:.1f})"
        )
    else:
        stall_text = f"stalled for {worst:.2f} s at most (the bench looks every 10 ms)"
    xs = [r["redis_calls_per_task"].get("xread", 0.0) for c in bound for r in rounds[c][0]]
    xread_hi = f"{min(xs):.3f}-{max(xs):.3f}" if xs else "no"
    yield (
        "Why single rounds fall below 1.0x (each Celery round's CPU per task of the worker, "
        "redis-server and the producer, the producer's share of the round, INFO commandstats and "
        "the queue's length every 10 ms, in the JSON): "
        + ("in this run " + "; ".join(below) + ". " if below else "in this run none did. ")
        + "In every such round sbredis:// spent less CPU per task than redis:// and was waiting "
        "rather than computing: its processes kept fewer cores busy than redis://'s in the same "
        "pair. "
        + (
            f"In {len(bound)} of the {len(pairs)} configurations ({'; '.join(bound)}) the sbredis:// "
            "rounds wait for the producer (median share of the round 0.85 or more: the worker keeps "
            "up with tasks sent one by one, so the round times the sends, and its idle waits show "
            f"as {xread_hi} XREAD per task), "
            if bound
            else ""
        )
        + "and a send is a round trip to a single-threaded redis-server that also runs the "
        "worker's scripts: under the load of those rounds (above, on 2 cores) each of its wake-ups "
        "waits for a core, while the redis:// rounds, which wait for their worker's CPU instead (the producer "
        "done earlier), take their share of the cores regardless. It is not the start-up (20 "
        "warm-up tasks run before the timing, and the low rounds are spread over the run), nor "
        f"held acks or a missed wake-up: once the producer was done, the queue {stall_text}. "
        "What would narrow the range is cheaper send and receive scripts on the server; on the "
        "client side the producer spends less CPU per send on sbredis:// than on redis://."
    )


def workers(d: Json) -> Iterator[str]:
    yield "## Workers"
    yield ""
    n = d["tasks_per_round"]
    yield (
        "`bench/bench_workers.py`: no-op tasks through one worker process, medians of each row's "
        f"rounds ({n['native']} tasks a round for the native worker, prefilled; {n['celery']} "
        "for Celery, sent one by one by a producer process while the worker runs, end to end). Celery: "
        "task_acks_late, task_reject_on_worker_lost, without gossip, mingle and heartbeat; both "
        "brokers on the same redis-server in the same run, each config's two brokers back to back "
        "and in alternating order (sbredis:// first in even rounds, redis:// in odd ones). CPU per "
        "task: the worker process (with a prefork worker's children) from /proc, redis-server from "
        "INFO cpu, over the timed span; on a shared machine tasks/s moves with the load, CPU per "
        f"task far less. All rows come from one run of {d['rounds']} rounds, on a machine shared "
        f"with other jobs{_load(d)}."
    )
    yield ""

    def cpu(w: Json, key: str) -> str:
        return f"{w[key]:.0f}" if key in w else ""

    rows = [
        [
            name.replace(" | ", ", "),
            rate(w["median_tasks_per_s"]),
            f"{w['spread_pct']:.0f}%",
            str(len(w["rounds"])),
            cpu(w, "worker_cpu_us_per_task"),
            cpu(w, "redis_cpu_us_per_task"),
            w.get("measured", ""),
        ]
        for name, w in d["workers"].items()
    ]
    yield from table(
        ["worker", "tasks/s", "spread", "rounds", "worker CPU us/task", "redis CPU us/task", "measured"], rows
    )
    native = {k: w["rounds"] for k, w in d["workers"].items() if k.startswith("native")}
    if native:
        yield (
            "The native worker's rounds: "
            + "; ".join(
                f"{k.split(', ', 1)[1]} {rate(min(xs))}-{rate(max(xs))} tasks/s "
                f"(lowest in round {xs.index(min(xs)) + 1})"
                for k, xs in native.items()
            )
            + "."
        )
        yield ""
    yield (
        "Where the native worker's time goes (a no-op handler, 20-40k prefilled messages, the worker "
        "in-process under cProfile and `py-spy record --gil`, CPU per task from /proc and INFO cpu): "
        "a handler's slot frees when the handler returns, not when its message is settled, so "
        "completions go as one `complete_messages` call per batch (mean batch 14 with threads, 29 "
        "with coroutines; holding the slot until settlement caps a batch at `concurrency` and gave "
        "3 and 8, each message paying for its own settlement bookkeeping: the receiver's checks, a "
        "coalescer entry and future, an instrumented operation). Middleware hooks run only when "
        "there is middleware (four calls a message otherwise). Pool threads start only when all are "
        "busy and wake the loop once per batch: 8 threads started at once take turns at the GIL "
        "with the event loop's thread, and each socket send of the loop then waits for one (a "
        "quarter of the loop's wall time). The renewer wakes only for a lock due before its next "
        "pass, not for every registration, which would rescan them all. With none of that (same "
        "machine and hour) a task cost 83 us of worker CPU with threads and 43 us with coroutines, "
        "redis-server 25 and 17 us. Then the completions: pool threads hand their results back to "
        "the loop a few at a time, so a batch per turn of the loop held 4 messages on average with "
        "threads x8 (cProfile: 7,344 complete calls for 30,000 messages), each a script call and a "
        "socket send that waits for the GIL. A batch of fewer than 64 now waits up to 2 ms while "
        "handlers still run: in alternating rounds (4 each, 30,000 prefilled no-op tasks, the worker "
        "in-process, load average about 5) the worker's CPU per task went from 49 to 40 us with "
        "threads (rounds 42-53 and 33-43) and from 26 to 24 with coroutines, redis-server's from 16 "
        "to 10 and from 11 to 9. Then the asyncio task each message ran in (its steps, wake-ups "
        "and coroutine frames, with two futures: the pool's and the completion's): a plain "
        "handler's message, when there is no middleware and no instrumentation, now goes from the "
        "pool's future to the batched complete by callbacks, and only a failed handler's settlement "
        "runs in a task; in 5 alternating rounds the worker's CPU per task went from 38 to 30 us "
        "(rounds 32-45 and 29-37). What is left per message is the hand-off to a pool thread (the "
        "`SimpleQueue.put` that wakes one, 7-17 % of the loop thread's samples holding the GIL, "
        "`py-spy --gil`: with fair concurrency a queued message may not wait behind a running "
        "handler while a thread is free, so each one wakes a parked thread), the receive, the lock "
        "renewer's registration (7 %), and redis-py's command packing and reply parsing, spread "
        "over the batched script calls."
    )
    yield ""
    yield (
        "The command line's defaults (`sbredis worker module:handler`: threads x8, no `--prefetch`) "
        "size the prefetch to the handlers' pace: about a second of their work ahead, at most 256 "
        "messages and the work of a quarter of a lock ([the worker's docs](worker.md) say why). "
        "The fixed default it replaces, 16, made the worker go to Redis every 24 messages or so; "
        "in alternating rounds of 30,000 no-op tasks (3 each) the worker and redis-server spent "
        "58 + 20 us per task at 16, 46 + 15 at 64, 49 + 15 at 256; in another such run 54 + 21 at "
        "16, 50 + 17 at 64 and 54 + 16 adaptive, whose medians were 8.6k, 10.6k and 13.2k tasks/s. "
        "A fixed 64 would lock 64 messages ahead of handlers of any speed, longer than a lock "
        "lasts when they are slow; adapting gives a no-op handler 256 and slow handlers none."
    )
    yield ""
    pairs = d.get("celery_sbredis_vs_redis") or {}
    if pairs:
        yield "Celery on sbredis:// against Celery on redis:// (kombu's Redis transport), same rounds:"
        yield ""

        def both(config: str, broker: str) -> str:
            w = d["workers"].get(f"Celery {config} | {broker}", {})
            if "worker_cpu_us_per_task" not in w:
                return ""
            return f"{w['worker_cpu_us_per_task']:.0f} + {w['redis_cpu_us_per_task']:.0f}"

        prow = [
            [
                config,
                rate(p["sbredis_median"]),
                rate(p["redis_median"]),
                f"{p['ratio_median']:.2f}x ({min(p['ratios']):.2f}-{max(p['ratios']):.2f})",
                both(config, "sbredis://"),
                both(config, "redis:// (kombu)"),
                _cpu_ratio_celery(d, config),
            ]
            for config, p in pairs.items()
        ]
        yield from table(
            [
                "Celery config",
                "sbredis://",
                "redis://",
                "ratio (median, range)",
                "CPU us/task, worker + redis-server, sbredis://",
                "redis://",
                "ratio by CPU (worker, redis-server and producer)",
            ],
            prow,
        )
        yield ""
        yield (
            "Where the time goes (py-spy on the worker's main process, INFO commandstats, CPU per task). "
            "The transport runs in Celery's event loop (the hub, `implements.asynchronous`), as "
            "kombu's Redis transport does; in Celery's blocking loop two pool threads would carry each "
            "task to and from the prefork children while the main thread blocks in its wait. Each "
            "tick hands out what the queues hold as far as the prefetch count allows, and a channel "
            "that found nothing sends an XREAD BLOCK on a connection of its own without reading it; "
            "its reply makes the socket readable. What the profile asked of that design: after a "
            "delivery the transport writes to a socket pair of its own, so the next poll returns at "
            "once (without it, a tick that delivered leaves the loop to poll for up to a second "
            "whenever the hub runs the prefork pool's own tick first, `on_tick` being a set: 41 "
            "tasks/s with the recipe). Each channel (tasks, pidbox) waits on its own connection, and "
            "a channel at its prefetch limit waits for nothing (one wait shared by both has to be cut "
            "short with CLIENT UNBLOCK after every ack). A busy consumer reuses its wait plan's log "
            "positions for up to 0.5 s, moved past the messages it received, and skips the empty "
            "receive after one that got fewer messages than it asked for (planning every wait, plus "
            "a receive to find the queue empty, costs two round trips per task). Acks made in the "
            "loop are held while its ticks keep delivering and completed together: up to 32 in one "
            "script call, within 0.05 s, at once when a tick has nothing to deliver (completing each "
            "ack before the next receive puts two script calls in a row on the main thread at "
            "prefetch 1: py-spy, solo, 37 % and 25-31 % of its samples, mostly waiting for the "
            "reply). Completing acks in a thread of their own while the loop receives costs more: "
            "the thread and the loop take turns at the GIL (worker CPU per task up about a sixth in "
            "solo)."
        )
        yield ""
        yield from _celery_findings(d)
        yield ""
        yield (
            "A prefork child killed mid-task, with the recipe's settings (`worker_lost_wait=1.0`, the "
            "app of tests/contrib/celery_app.py; SIGKILL the child running a task, time until a child "
            "starts it again; 4 kills on each broker, alternating): on redis:// the task came back "
            "after 5.09, 5.16 and 5.58 s and once after 0.19 s (billiard marks the task lost on the "
            "pool's next look, which in the event loop is a 5 s timer); on sbredis:// after 0.10-0.37 s "
            "(median 0.12), because `sbredis.contrib.celery` adds a worker step (`FindLostTasks`) "
            "that makes a prefork worker look every 0.05 s. In the blocking loop billiard's supervisor "
            "thread looked every 0.1 s, and the task came back after `worker_lost_wait` plus about a "
            "second."
        )
        yield ""


def _cpu(x: Json) -> str:
    return f"{x['client']:.0f} / {x['server']:.0f}"


def _cpu_ratio(loop: Json, raw: Json) -> str:
    """loop / raw by CPU: the raw op's client + server CPU over the loop's, per message (what the
    rate ratio would be if the two processes had the cores to themselves)."""
    a, b = loop.get("cpu_us_per_msg"), raw.get("cpu_us_per_op")
    return ratio((b["client"] + b["server"]) / (a["client"] + a["server"])) if a and b else ""


def _load_average(m: Json) -> str:
    """The load average around a run, when the file records it."""
    if "load_average_before" not in m:
        return ""
    before, after = (", ".join(f"{x:.1f}" for x in m[k]) for k in ("load_average_before", "load_average_after"))
    cpus = m.get("cpu_count")
    return f" Load average (1, 5, 15 min) on the {cpus} shared CPUs: {before} before the run, {after} after."


def loops(d: Json) -> Iterator[str]:
    before = d.get("before") or {}
    was = f" ({before['label']})" if before else ""
    yield "## Loops against raw round trips"
    yield ""
    yield (
        f"`bench/bench_loops.py`: each way of looping over messages, {d['messages_per_loop']} messages "
        f"a loop (prefilled, 100 B), next to its raw redis-py counterpart in the same run; medians of "
        f"{d['rounds']} rounds, loops alternating. A raw EVALSHA runs a script that returns 1. CPU µs "
        "per message: the client process's (user + system) / redis-server's (INFO cpu); on this "
        "shared machine they move far less from run to run than the rates do, so the table also "
        "gives the ratio they imply (the raw op's client + server CPU over the loop's)."
        + (
            f" Before: the same benchmark on {before['label']}, "
            + (before.get("when") or "run right after on the same machine.")
            if before
            else ""
        )
        + _load_average(d["machine"])
    )
    yield ""
    rows = []
    for name, lp in d["loops"].items():
        old = before.get("loops", {}).get(name, {})
        for i, (raw, r) in enumerate(lp["raw"].items()):
            first = i == 0
            rows.append(
                [
                    name if first else "",
                    rate(lp["median_msgs_per_s"]) if first else "",
                    f"{lp['spread_pct']:.0f}%" if first else "",
                    _cpu(lp["cpu_us_per_msg"]) if first and "cpu_us_per_msg" in lp else "",
                    raw,
                    rate(r["median_per_s"]),
                    _cpu(r["cpu_us_per_op"]) if "cpu_us_per_op" in r else "",
                    ratio(r["ratio"]),
                    _cpu_ratio(lp, r),
                    ratio(old["raw"][raw]["ratio"]) if raw in old.get("raw", {}) else "",
                    _cpu_ratio(old, old["raw"][raw]) if raw in old.get("raw", {}) else "",
                    _cpu(old["cpu_us_per_msg"]) if first and "cpu_us_per_msg" in old else "",
                ]
            )
    header = [
        "loop",
        "msgs/s",
        "spread",
        "CPU µs/msg",
        "raw counterpart",
        "raw /s",
        "raw CPU µs/op",
        "loop / raw",
        "loop / raw by CPU",
    ]
    if before:
        header += ["loop / raw before", "by CPU before", "CPU µs/msg before"]
    else:
        rows = [r[:9] for r in rows]
    yield from table(header, rows)
    yield (
        f"Single operations, sync, one message at a time ({d['latency_ops']} of each a round, interleaved "
        "with the raw commands); CPU and script µs from a block of each kind:"
    )
    yield ""
    lrows = []
    for op, x in d["latency"].items():
        old = before.get("latency", {}).get(op, {})
        row = [
            op,
            ms(x["p50_ms"]),
            ms(x["p99_ms"]),
            f"{x['p50_spread_pct']:.0f}%",
            f"{x['cpu_us_client']:.0f} / {x['cpu_us_server']:.0f}" if "cpu_us_client" in x else "",
            f"{x['command_us']:.1f}" if "command_us" in x else "",
            ratio(x["vs_raw_evalsha_p50"]),
            f"{ratio(x['vs_comparable_raw_p50'])} {x['comparable_raw']}" if "comparable_raw" in x else "",
        ]
        if before:
            row.append(
                f"{ratio(old['vs_comparable_raw_p50'])}, {old['command_us']:.1f} µs"
                if "vs_comparable_raw_p50" in old
                else ""
            )
        lrows.append(row)
    lheader = [
        "operation",
        "p50 ms",
        "p99 ms",
        "p50 spread",
        "CPU µs client / server",
        "script or command µs",
        "p50 / raw EVALSHA p50",
        "p50 / comparable raw p50",
    ]
    if before:
        lheader.append("before: p50 / comparable raw, script µs")
    yield from table(lheader, lrows)
    if "profile" in d:
        yield f"Where a single operation's p50 goes, µs (after / before{was}):"
        yield ""
        prows = []
        for op, x in d["profile"].items():
            old = before.get("profile", {}).get(op, {})

            def both(key: str, x: Json = x, old: Json = old) -> str:
                return f"{x[key]:.0f} / {old[key]:.0f}" if key in old else f"{x[key]:.0f}"

            raw = next(k.split(" p50_us")[0] for k in x if k.endswith(" p50_us"))
            prows.append(
                [
                    op,
                    both("sbredis_python_us"),
                    both("redis_py_us"),
                    both("script_us"),
                    both("rest_us"),
                    both("p50_us"),
                    f"{raw}: {x[raw + ' p50_us']:.0f} ({x[raw + ' client_cpu_us']:.0f} client CPU, "
                    f"{x[raw + ' command_us']:.1f} command)",
                ]
            )
        yield from table(
            [
                "operation",
                "sbredis Python (client CPU)",
                "the script call: pack, socket calls, parse (client CPU)",
                "script in Redis",
                "the rest: round trip, server I/O, scheduling",
                "p50",
                "comparable raw p50",
            ],
            prows,
        )
    yield from LOOP_FINDINGS
    yield from waiting(d)


# the loops of bench_loops.py that show the wait for a reply: the sbredis loop, the raw round trip
# through redis-py, and on one of its connections sleeping and polled
WAIT_ROWS = [
    (
        "sync iterate",
        "raw EVALSHA (sync)",
        "raw EVALSHA on a connection (sync)",
        "raw EVALSHA on a connection, polled (sync)",
    ),
    (
        "async iterate",
        "raw EVALSHA (async)",
        "raw EVALSHA on a connection (async)",
        "raw EVALSHA on a connection, polled (async)",
    ),
]


def waiting(d: Json) -> Iterator[str]:
    """The iterating loops polling for each reply and sleeping, next to raw round trips both ways."""
    loops = d["loops"]
    if "sync iterate, reply_poll_time=0" not in loops:
        return
    poll_us = d.get("reply_poll_time", 0.0002) * 1e6
    yield "## Waiting for a reply"
    yield ""
    yield (
        "The iterating loops of the table above with the client as it comes, which polls for each "
        f"reply for up to {poll_us:.0f} µs before it sleeps ([Client options](client.md#waiting-for-a-reply)), "
        "and with `reply_poll_time=0`, next to raw EVALSHA round trips (a script returning 1): "
        "through `Redis.evalsha`, and on one of redis-py's connections (`send_command` and the "
        "read, below its per-command layers, as sbredis's transport sends) sleeping until the reply "
        "and polling for it as sbredis polls. Same run and rounds as the loops above; CPU µs per "
        "message, client / server."
    )
    yield ""
    rows = []
    for loop, raw, conn, polled in WAIT_ROWS:
        lp, sleeping = loops[loop], loops[f"{loop}, reply_poll_time=0"]
        raws = lp["raw"]
        for name, x in ((loop, lp), (f"{loop}, reply_poll_time=0", sleeping)):
            rows.append(
                [
                    name,
                    rate(x["median_msgs_per_s"]),
                    _cpu(x["cpu_us_per_msg"]),
                    ratio(x["median_msgs_per_s"] / raws[raw]["median_per_s"]),
                    ratio(x["median_msgs_per_s"] / raws[conn]["median_per_s"]),
                    ratio(x["median_msgs_per_s"] / raws[polled]["median_per_s"]),
                ]
            )
        for name in (raw, conn, polled):
            r = raws[name]
            rows.append([name, rate(r["median_per_s"]), _cpu(r["cpu_us_per_op"]), "", "", ""])
    yield from table(
        ["loop", "msgs/s", "CPU µs/msg", "/ raw EVALSHA", "/ on a connection", "/ on a connection, polled"],
        rows,
    )
    yield from WAIT_FINDINGS


WAIT_FINDINGS = [
    "What a wait costs here (2 vCPUs of a virtual machine; measured beside the code, each in "
    "alternating rounds on redis-server 6.2.14):",
    "",
    "- **A wake-up costs more than a round trip.** A raw socket sending EVALSHA of a script "
    "returning 1 and blocking in `recv` for the reply: 15.9-16.8k round trips/s; the same "
    "polling a non-blocking socket: 42.8-47.5k (five rounds of 5,000, load average 0.3). An idle "
    "virtual CPU halts, and the hypervisor has to wake it for every reply: about 40 µs a round "
    "trip, more than complete's script and the client's Python together. In the single "
    "operations above a raw command's p50 is mostly that wait.",
    "- **On a busy machine there is nothing to save.** With another process keeping one CPU busy "
    "(`yes`), no CPU idles: the sleeping round trip on a connection ran at 29.6k/s against 28.0k "
    "polled, and raw `Redis.evalsha` at 21.4k/s against 8.9-10.1k on the idle machine. There "
    "a polling client takes a core the server or its own next call needs: the sync iterating "
    "loop polling ran at 11.8k/s against 15.1k sleeping, the async one 8.2k against 9.9k (three "
    "rounds each). So a thread that has been waiting for a CPU more than 5 % of the last 50 ms "
    "(Linux's `/proc/thread-self/schedstat`; 0-0.4 % in the loops on the idle machine, 36-47 % "
    "beside one busy process) does not poll: with that rule, beside one busy process, sync "
    "13.1k/s polling against 13.6k sleeping and async 10.9k against 9.4k; beside two, 12.5k "
    "against 13.7k and 3.9k against 4.1k (five rounds, spreads 47-186 %).",
    "- **Three pairs of whole runs** (load average 1.1 to 1.5), this client and one without the "
    "poll alternating: the sync iterating loop 1.15-1.33x the raw `Redis.evalsha` rate "
    "(0.75-0.86x without the poll), the async one 1.07-1.25x the raw redis.asyncio rate "
    "(0.63-0.83x); with `reply_poll_time=0` the same client 0.64-0.84x and 0.57-0.70x. Single "
    "operations' p50: send 0.86-0.90x raw XADD (1.23-1.31x without the poll), receive 0.83-0.89x "
    "raw XREADGROUP (1.17-1.24x), complete 0.74-0.80x raw XACK (1.13-1.21x). Against the polled "
    "round trip on a connection, what sbredis itself adds shows: the sync loop at 0.44-0.50x of "
    "it, the async one at 0.62-0.74x.",
    "- **What it costs.** A polling client spends the server's time on a CPU of its own: in those "
    "runs 69-78 µs client CPU per message in the sync loop against 60-73 without the poll, "
    "81-89 against 76-93 async, and 10-20 µs more per single operation; redis-server spent less "
    "(37-43 µs a message against 53-72), its client answering without a wake-up in between. "
    "By CPU the sync loop stays at 0.71-0.81x a raw EVALSHA. A kind of call whose reply came "
    "later than the limit (a receive of 100 messages, a slow link) sleeps at once the next "
    "time, so a poll costs at most the limit for each late reply. The Celery and native worker "
    "figures above were measured with it; runs with `SBREDIS_REPLY_POLL_TIME=0` alternating "
    "(two rounds each, twice) differed within their spread (Celery on sbredis:// 1.5-2.3k "
    "tasks/s either way, where Celery's own work is 0.3-0.5 ms CPU a task).",
    "",
]


# What the profile of the single operations found (bench_loops.py's split above; the script A/B
# and the per-step timings were separate runs, quoted here with how they were measured).
LOOP_FINDINGS = [
    "On this machine a single operation's wall time is about its client CPU plus its server CPU "
    "(client and redis-server take turns on 2 loaded cores), so its ratio to a raw command is "
    "roughly the ratio of CPU per operation. Where it went (client CPU measured with "
    "`time.process_time` / `time.thread_time` around each layer of the real loop, server CPU with "
    "INFO cpu and script time with INFO commandstats; micro benchmarks of 2,000 to 50,000 calls, "
    "old and new code alternating in one process or on one redis-server), and what was done:",
    "",
    "- **redis-py's per-command layers (client).** A script call through `Redis.evalsha` costs "
    "29-32 µs CPU (retry wrapper, hooks, response callbacks, the pool's get and release); the "
    "transport sends each single script call on a connection it keeps between calls, after the "
    "pool's own readiness check (`Transport._evalsha`): 15-18 µs. A minimal loop of `sendall`, "
    "`recv_into` and a hiredis reader costs 11 µs; the rest is the readiness poll (1.5 µs), "
    "packing (0.8-1.6 µs) and the frames around. Reading the reply straight from the socket with "
    "the connection's own hiredis reader instead of `read_response` measured the same (15.5-17.1 "
    "against 15.6-17.9 µs, four alternating blocks of 20,000) and was not kept.",
    "- **redis.asyncio's write task (async).** Under a socket timeout redis.asyncio sends every "
    "command through `asyncio.wait_for`, a task and an event-loop turn per command; the async "
    "transport writes to the connection's stream and waits only for what the socket did not take "
    "(`_concurrency.async_send_command`).",
    "- **One key per call.** Complete, receive and send take the partition's cfg key alone and "
    "name the other 23 in Lua ([Keyspace](keyspace.md#keys-a-script-names-itself)): 5-8 µs less "
    "client CPU a call than 24 keys through redis-py.",
    "- **A lock check in one read (server).** A lock record now carries its lock's end "
    "([Keyspace](keyspace.md#lock-records)), so complete's one-message path reads the record "
    "alone (no `ZSCORE` of the locked set), and it leaves the partition's last use as the "
    "receive or renewal that set the lock wrote it when that was under 100 ms before (a write "
    "saved per message in a loop; auto-delete on idle is at least 5 minutes). Its commands: "
    "status and lock duration, clock, lock record; log entry, lock record and lock end removed; "
    "size (seven, from nine). Script µs per complete in the single-operation runs: 25-26 before, "
    "19-22 after (two alternating pairs). With the last use still written (completes more than "
    "100 ms after their receive) the `ZSCORE` alone is saved: 23.4 to 21.3 µs (six alternating "
    "blocks of 2,000 on one server). Server CPU "
    "per complete, EVALSHA included: 39-41 to 31-34 µs.",
    "- **complete_message's own Python (client).** The settlement of one caller's one message "
    "skips the grouping by partition, chunking and the second `Call` the generation stamp built "
    "(`_settle_one`): 7.9 to 4.7 µs CPU per call with the script call replaced by its reply "
    "(three blocks of 20,000 each). Iterating over the prefetch buffer costs 0.8 µs a message "
    "and a receive of 100 about 2-2.4 µs a message, so a `complete_message` in the loop (30-33 "
    "µs client CPU, its script call included) is about a raw redis-py EVALSHA (28-29).",
    "- **partition.lua's opening (server, every call).** Naming all 23 keys and building the group "
    "tables costs 3.5-4.5 µs a call over a script that returns at once (1.7-1.9 µs); building "
    "call_many's pad pairs only for a batch large enough to need them saves about 1 µs of it. A "
    "group's and the sessions' keys are named on first use (one shared metatable: a field's name "
    "is its key's name after the group's prefix), so a one-message call builds the three to five "
    "it uses. With the real sync calls, scripts naming all 23 and scripts naming on first use "
    "alternating on one redis-server (four ABBA blocks of 2,000 of each operation): script µs per "
    "call 20.8 to 20.0 (complete), 20.5 to 19.3 (send), 33.9 to 33.1 (receive of one); server CPU "
    "0.7-1.3 µs less per call. With complete's key and arguments the opening costs 1.7 µs over a "
    "script returning `{0}` (2.6 µs).",
    "- **Receive's one-message path** checked that nothing is due for the sweep with three reads "
    "(due schedules, elapsed locks, expiries). Without message TTLs and schedules the schedule and "
    "expiry sets are absent, and one `EXISTS` of the two answers for both: 2.6 µs less per call "
    "than their two reads on absent keys (5.5 against 2.9 µs with the clock read, six alternating "
    "blocks of 20,000); their reads only when one exists. The locked set is read as before: "
    "other receivers' locks usually keep it, and an `EXISTS` of it too would add a call to every "
    "receive among held locks. A receive and a complete one after the other, with this and the "
    "complete above: 29.6 to 26.3 script µs per call at the fastest block, 33.4 to 30.7 at the "
    "median (six alternating blocks of 2,000 on one server, loaded). Its first `EXISTS` asks about "
    "ready too: when none of the three exists (no TTLs or schedules, nothing abandoned or "
    "returned: a receive past the cursor) ready's `ZRANGE` is not sent; when one does, a second "
    "`EXISTS` of the two sweep sets follows (a call more while abandoned messages wait). Script µs "
    "per receive of one against the `EXISTS` of the two sets alone: 34.5 against 36.0 and 30.6 "
    "against 31.4 (two runs of four and six ABBA blocks of 2,000, load average 7-9).",
    "- **send_messages(msg)'s own Python (client).** A caller's one message (not in a transaction, "
    "not pre-settled; a keyed message of a partitioned entity excepted) is planned as its one "
    "script call and its reply read directly (`_store_one`, `send_plan.plan_one`), without packing, "
    "grouping, the generation stamp's list and the per-entry outcome steps; an unreachable "
    "partition of a partitioned entity, a recreated entity, a refusal the metadata may have changed "
    "and topics go on through the general path. Measured alternating with the general path (the "
    "code without `_store_one`) in one run (load average 5.5; four pairs, 2,000 sends each, 100 B, "
    "each send timed next to a raw `XADD`, then CPU over a block of 2,000 sends; the same "
    "redis-server):",
    "",
    "  | send, sync | before | after |",
    "  | --- | --- | --- |",
    "  | p50 / raw XADD p50 (same loop) | 1.55-1.56x (82.6-85.1 / 53.3-54.4 µs) | 1.30-1.31x "
    "(66.2-66.5 / 50.6-51.3 µs) |",
    "  | client CPU µs per send (raw XADD: 28.6-30.5) | 41.7-42.6 | 29.5-30.2 |",
    "  | server CPU µs per send (raw XADD: 13.1-13.9) | 36.1-37.4 | 31.6-32.6 |",
    "  | script µs (INFO commandstats) | 22.9-24.0 | 20.7-24.3 |",
    "",
    "  Async, `await sender.send_messages(msg)` in a loop of 3,000 (three pairs): 6.3-8.4k to "
    "9.5-10.7k sends/s, client CPU 73-100 to 54-61 µs per send, server 42-56 to 39-42. (This loop "
    "times only send and XADD; the table above, where receive, complete and five raw commands run "
    "between sends, put send at 2.17x.) Seven more pairs with send.lua's narrower read below, at a "
    "time when everything cost about twice the CPU (raw XADD 60-84 µs client CPU, load average "
    "1.1-1.2): p50 1.21-1.26x to 1.08-1.13x raw XADD, client CPU per send 70-97 to 53-80 µs.",
    "- **send.lua's fast path (server).** Script µs per call, cutting the script at points of its "
    "fast path (five rounds of 2,000 EVALSHA on one server): a script returning 1, 2.0; "
    "partition.lua's opening, 7.3; with `load_cfg` (the cfg `HMGET`, 1.1 µs in commandstats, and "
    "its table), 10.9-11.1; with the size checks and st's `HMGET`, 12.3; with the clock, 14.6; the "
    "whole send, 22.0-22.4. Its five commands are 3.7 µs of commandstats time; the XADD and the "
    "final `HSET`, the script's first writes, cost 7.4 µs between them in the script (the write's "
    "propagation included). None of the five can go without moving st's fields into cfg (a keyspace "
    "change) or dropping the enqueue time's clock read. What went is `load_cfg`'s table: the fast "
    "path reads the six settings it uses (status, generation, sessions, size limits, default TTL) "
    "as values and the other sends read all ten as before (a session entity's blob-only send reads "
    "cfg twice): 23.0 to 21.5 script µs per send (medians of eight alternating blocks of 2,000 on "
    "one server; 22.5-23.8 and 20.8-25.3), server CPU 36.0 to 34.5 µs. The rest is partition.lua's "
    "opening (5.3 µs over a script returning 1), shared with every script.",
    "- **send.lua's fast path ahead of partition.lua's opening (server).** A script's opening runs "
    "at every call: naming the keys (0.7 µs over a script returning 1), building the group tables "
    "(1.1 more) and the helper closures (1.1 more), 2.9 µs in all on Redis 7.0 (the bench's send "
    "replayed against stand-in scripts, eight alternating rounds of 2,000 on one server). The "
    "fast path of a plain send (blobs alone to an entity without sessions) comes first in send.lua "
    "and names the three keys it uses from the cfg key itself, as partition.lua does (a unit test "
    "runs it in Lua 5.1 against keys.py's names); a batch of more than 15 such messages to an "
    "entity with a default TTL writes its expiry index after the opening, with call_many. The same "
    "fast path placed after the opening costs what the previous one did (23.4 against 23.9 script "
    "µs), so the gain is the opening's. Script µs / server CPU µs per one-message send, medians of "
    "8 to 10 alternating rounds (load average 3.7 to 6): 23.5-24.5 / 36.7-38.6 with the opening, "
    "18.8-19.6 / 32.0-32.6 without; a batch of 100 the same either way (with a default TTL 437 "
    "against 452 script µs, without 268 against 273, within the spread). In bench_loops.py's "
    "single operations (three alternating pairs of whole runs, load average 5 to 6.6; one pair "
    "left out, the machine's speed halved during its second run): send's script µs 17.6-19.1 to "
    "14.9-15.3, server CPU 30.5-32.1 to 27.6-27.8 µs, client CPU 31.9-33.6 to 31.1-31.2 µs, p50 "
    "(medians of three rounds) 76.6-80.1 to 74.3-74.9 µs against raw XADD's 47.0-48.2: 1.63-1.66x "
    "to 1.56-1.58x raw XADD, 1.34-1.36x to 1.28-1.30x a raw EVALSHA; three more pairs at load "
    "average 2.2 to 2.8: script µs 16.9-18.2 to 14.3-14.7, server CPU 29.3-30.7 to 26.7-27.3 µs, "
    "client CPU 28.8-29.9 to 28.3-29.1 µs, p50 74.3-74.9 to 71.9-72.3 µs, 1.57-1.58x to "
    "1.50-1.52x raw XADD and 1.28-1.29x to 1.21-1.23x a raw EVALSHA. What is left in the fast "
    "path, each command left out in turn (a measurement, six alternating rounds): the XADD 4.6 "
    "µs, the cfg `HMGET` 2.0, the "
    "clock 1.6, st's size and last use in the final `HSET` 1.2; its `x` field, and st's writes as "
    "`HINCRBY`s instead of one read and one write, change nothing measurable, nor does leaving the "
    "last use unwritten when it is under 100 ms old. Each of the five commands is needed for a "
    "behaviour (status and generation, sequence and quota, the enqueue time, the message, st's "
    "counts). With a raw EVALSHA of a script returning 1 at 1.21-1.22x raw XADD's p50 on this loaded "
    "machine (1.12x on a quiet one), 1.3x raw XADD leaves a send about 4 µs of script work here; "
    "the fast path's five commands take about 13.",
    "- **complete's and receive's one-message paths ahead of partition.lua's opening (server).** "
    "As send's: a one-message complete (one nonce) and a one-message peek-lock receive of the main "
    "queue come first in their scripts, name the keys they use from the cfg key (the group's log, "
    "lock records, locked set and delivery counts, st; for receive also ready, sched and exp), and "
    "read the caller's generation and the clock in place; a subscription's receive checks its "
    "fan-out journal with one `EXISTS` and, with one left, takes the general path, which decides "
    "whether to finish it. Their commands are unchanged. The bench's calls replayed on one "
    "redis-server 6.2.14, old and new scripts alternating (eight rounds of 2,000 each, load average "
    "6.7 to 8.2), script µs / server CPU µs per call, medians: complete 20.8 / 33.8 to 17.2 / 30.3 "
    "(rounds 20.3-26.3 to 17.0-17.9), a receive of one 36.8 / 47.7 to 29.7 / 42.6 (31.1-38.2 to "
    "25.5-40.6). Whole runs of bench_loops.py, old and new alternating (three pairs of 3 rounds "
    "and three of 5, load average 1.2 to 5.4; one more new run left out, every figure of it, raw "
    "commands included, at 1.5 to 2 times the CPU): complete's p50 1.44-1.51x to 1.36-1.41x raw "
    "XACK (1.12-1.14x to 1.05-1.10x a raw EVALSHA), its script µs 16.8-23.2 to 13.9-18.2 and "
    "server CPU 28.0-35.7 to 25.8-32.0 µs; receive's p50 1.38-1.43x to 1.32-1.35x raw XREADGROUP, "
    "script µs 31.1-35.9 to 26.5-32.2; the sync iterating loop 0.60-0.62x to 0.63-0.68x a raw "
    "EVALSHA by CPU (0.61-0.65x to 0.62-0.70x by rate; one old run at 0.41x while the load rose), "
    "30.9-34.3 to 28.7-34.1 µs client and 34.2-36.9 to 30.7-34.7 µs server CPU per message; the "
    "async iterating loop 0.77-0.83x to 0.77-0.84x by CPU (0.75-0.90x to 0.61-0.88x by rate). "
    "Neither 1.3x raw for a single complete or receive nor 0.8x for the sync loop is reached.",
    "- **What a complete costs the server: the floor of a script call per settlement.** The "
    "loop's complete calls replayed with the same key and arguments against stand-in scripts, "
    "alternating on one server (four rounds of 2,000, load average 7.6), script µs / server CPU µs "
    "per call: a script returning `{0}`, 2.6 / 13.6 (a raw command's round trip); partition.lua's "
    "opening, 4.3 / 15.3; complete's seven commands on keys that hold nothing, 10.2 / 20.6; the "
    "real complete, 20.0 / 30.7. Calling a command from Lua costs about 1 µs; the rest is the "
    "commands' work on real data. Each left out alone, alternating with the whole script (a "
    "measurement, not a change): the log entry's `XDEL` 3.8 µs, the locked set's `ZREM` 3.7 "
    "(17.1-23.5 against 21.3-23.4), the lock record's `HDEL` 1.5, the size's `HINCRBY` 0.7. An "
    "`XDEL` alone costs 2.1 µs at the default `stream-node-max-bytes` (4096), 1.3-1.5 at 1024 or "
    "256, oldest or newest entry first alike. None can go: the status and generation (a disabled "
    "or recreated entity refuses), the lock record (held, not elapsed), the clock, and the log "
    "entry, record, locked-set entry (lock counts, the sweep of elapsed locks) and size (the "
    "quota) that the complete removes.",
    "- **What a complete_message costs the client.** In one run: the loop 33.3 µs CPU per message; "
    "the loop with complete's script call replaced by its reply 7.4 (iterating, with a hundredth "
    "of a receive of 100, 2.5; complete_message's own Python 4.9, of which the settle checks 0.6, "
    "building the `Call` 1.5, the generation stamp 0.6, reading the status 0.4); the transport's "
    "call of the same bytes to a script returning 1, 15.7 (redis-py's `evalsha` of a script "
    "returning 1: 27.5). In the loop the script call itself costs 23.4 µs: a reply that takes 20 "
    "µs or more makes the client block in `recv`, a voluntary context switch per call (0.06 to "
    "0.98 per call by `getrusage`, a raw connection calling scripts of 1.3, 22 and 45 µs, three "
    "rounds of 5,000) and 2-4 µs more client CPU; a raw command's reply is back before the client "
    "blocks.",
    "- **A kept connection's readiness poll (client).** Before it uses a kept connection the "
    "transport makes the check redis-py's pool makes before it hands one out: `can_read`, for the "
    "sync hiredis parser a non-blocking `recv` between two changes of the socket's timeout, 2.2-2.8 "
    "µs CPU a call (`timeit`, 20,000 calls). It finds a connection the server closed while it sat "
    "idle (its `timeout`, `CLIENT KILL`) or a restarted server. A connection whose last reply was "
    "read less than 1 ms before (`FRESH` in the transport) is used without it: two calls of a loop "
    "come a few dozen µs apart, too soon for an idle close, and a connection lost in that moment "
    "fails as one lost during the call does (a retryable connection error), as it can between the "
    "check and the write too. A connection idle longer is checked "
    "(tests/integration/test_transport_apis.py kills the connection between settlements). In the "
    "single operations the sbredis connection is idle for five raw commands "
    "between two calls, about 0.3 ms, so they skip it too. Five pairs of whole runs, the poll at "
    "every call and the 1 ms rule alternating (load average 5.2 to 6.5): the sync iterating loop "
    "32-33 µs client and 34-37 server CPU per message against 33-36 and 35-37, 0.59-0.66x a raw "
    "EVALSHA by CPU against 0.57-0.61x (by rate 0.52-0.77x against 0.58-0.99x, as the load moved); "
    "the single complete 27-31 µs client CPU against 28-32 (a raw XACK 27-29), p50 1.44-1.49x raw "
    "XACK against 1.52-1.59x (1.09-1.14x raw EVALSHA against 1.17-1.21x); receive 1.37-1.43x raw "
    "XREADGROUP against 1.43-1.48x; send 1.58-1.64x raw XADD against 1.62-1.71x. The async loops "
    "did not move beyond the noise (by CPU 0.71-0.81x against 0.75-0.81x): an asyncio "
    "connection's check reads what the stream holds already, with no system call.",
    "- **Doing the client's work while the server works (measured, not built).** A sync call could "
    "prepare the next one (its `Call`, stamp and packing, about 3.5 µs of complete_message's 5) "
    "between writing its request and reading its reply. What that hides was measured first. A raw "
    "socket loop calling a script of about 20 µs (five alternating rounds of 4,000, load average "
    "about 4): 14 µs of client work placed after the write instead of before it, 51.6 against 57.6 "
    "µs a call (38.0 with none), so 6 of the 14 µs hidden; 3.7 µs of work, 41.6 against 42.7. With "
    "nothing between write and read, `sendall` takes 12-22 µs and `recv` 7-14; with 15 µs of work "
    "after the write, `sendall` takes 58-60 and `recv` 3-4: the client is descheduled inside "
    "`sendall` while the woken redis-server runs, and its own work waits behind the server's turn. "
    "In the real sync loop, 15 µs of packing work before and after the write alternating (three "
    "triples, load average 5.6 to 6.4) gave no consistent difference. On these two shared cores "
    "the next call's preparation would hide about a third of its 3.5 µs. Reading the reply by "
    "polling a non-blocking socket for up to 100 µs before blocking (the client not sleeping on "
    "its reply) gave 39.6 against 42.0 µs a call with an 8 µs script and 63.5 against 57.7 with a "
    "22 µs one (five rounds of 4,000, load average 5.8): no consistent gain at that load, where "
    "the CPUs never idle and a polling client takes a core the server may need (on an idle "
    "machine, the next section).",
    "- **Why the async loop costs the server more than the sync loop (server).** The same messages "
    "cost redis-server 41-42 µs CPU each under the async loop (with redis-py's read) and 35-38 "
    "under the sync one (two runs of 5,000 each, alternating; raw async EVALSHA 15). Not from more "
    "requests or wake-ups per request: per message both loops send the same 8.25 commands and "
    "164 bytes and get 204 back (INFO stats), the server does one read, one write and one `epoll_wait` (`strace -c` on "
    "redis-server over 3,000 messages: 3,065, 3,089 and 3,046 async; 3,051, 3,088 and 3,042 sync), "
    "and the async client writes each request in one `sendto` and reads its reply in one "
    "`recvfrom` on its one kept connection (3,033 and 3,066). What differs is how often redis-server "
    "sleeps between two requests (voluntary context switches per message, /proc: 0.94 async, "
    "0.79-0.81 sync) and its script time (INFO commandstats, µs per message: 26.7-27.3 async, "
    "23.0-25.3 sync): the longer the client's turn between a reply and the next request, the more "
    "often the server sleeps and the colder its caches when it wakes. A raw sync EVALSHA of a "
    "script returning 1 shows the same with nothing but a busy wait in the client between calls "
    "(two rounds of 5,000): server CPU per call 12.1 µs with none, 12.6-19.9 with 20 µs, "
    "18.9-19.3 with 50, 14.1-17.1 with 100. What is ours of it is the client's time per message.",
    "- **redis.asyncio's read (async client).** Per awaited script call (a script returning 1, "
    "one process, 6 to 12 alternating blocks of 4,000 to 5,000): a write to the stream and a read "
    "into the connection's hiredis reader cost 18.8 µs CPU, with an `asyncio.timeout` around the "
    "read 25.7, with a `loop.call_at` timer per read 21.8, through `read_response` (four "
    "coroutines, its timeout context and the push check) 28.1-33.3. The async transport's "
    "connections read the reply themselves, RESP3 (redis-py 8's default) included (`read_reply` of "
    "the connection class `_core/packer.py` gives an asyncio pool), under one timer per "
    "connection: reads on a connection come one after another, so a timer armed "
    "once, which moves itself to the deadline of the read in flight when it fires early, enforces "
    "the socket timeout (past it the task is cancelled, and that cancellation is raised as "
    "redis-py's TimeoutError; any other goes on as it came). Per call 23.2-24.4 µs against "
    "30.5-33.3 through `read_response` (with a timer per read, 24.3-26.3). The async iterating "
    "loop, redis-py's read and this one alternating in one process (eight rounds of 3,000): client "
    "CPU 62.6 to 50.8 µs per message, server 42.6 to 40.1, 9.1k to 10.9k messages/s against 13.7k "
    "raw async EVALSHAs (0.67x to 0.80x by rate, 0.68x to 0.78x by CPU). In the three pairs of "
    "whole runs of the table above (load average 2.1 to 3.6): the async iterating loop 0.76-0.88x "
    "the raw async EVALSHA by CPU (from 0.68-0.70x) and 0.66-0.82x by rate (from 0.65-0.68x), "
    "50-71 µs client and 40-52 µs server CPU per message (from 60-86 and 41-57); receive 100 and "
    "complete one at a time 0.73-1.04x by CPU (from 0.69-0.70x).",
    "",
    "With the client sleeping until each reply arrives (`reply_poll_time=0`; the client does so "
    "on its own while its thread waits for a CPU, next section), on a quiet machine (three pairs of "
    "whole runs, load average 0.2 to 0.9, redis-server 6.2.14): the sync iterating loop 0.78-0.81x "
    "the raw EVALSHA rate (0.75-0.78x by CPU), the async one 0.70-0.75x (0.76-0.82x by CPU); single "
    "operations' p50 send 1.19-1.21x raw XADD, receive 1.15-1.18x raw XREADGROUP, complete "
    "1.10-1.14x raw XACK. At load average 5.2 to 6.5 (five pairs of whole runs): the sync loop "
    "0.59-0.66x by CPU (0.52-0.77x by rate), the async one 0.71-0.81x by CPU (0.68-0.86x by rate); "
    "p50 send 1.58-1.64x raw XADD, receive 1.37-1.43x raw XREADGROUP, complete 1.44-1.49x raw XACK "
    "and 1.09-1.14x raw EVALSHA. The sync loop costs 32-33 µs client and 34-37 µs server CPU per "
    "message, a raw EVALSHA 28-32 and 13-14. With no sbredis Python at all the script call in the "
    "loop costs the client 23 µs (the transport's 16 and the wait for a 20 µs script), the server "
    "31 µs (a round trip's 14 and complete's script), and a hundredth of a receive of 100 costs 2.5 "
    "client and 4.8 server µs: about 61 µs, 0.66-0.70x of a raw EVALSHA's 40-43 by CPU. A single "
    "complete's client CPU is about a raw XACK's (27-31 against 28-29 µs); its server CPU is "
    "28-33 µs against 12-13, complete's script (17-21 µs) against XACK's 1. By CPU, 0.8x of a raw "
    "round trip needs a settlement whose script does about a third less work on the server than "
    "complete's seven commands (the status, the lock record, the clock, and four writes). On an "
    "idle machine the wait itself costs more than all of that: the next section.",
    "",
]

SPARK_SHORT = {
    "client send (1 process)": "client send",
    "plain redis-py XRANGE (1 process)": "XRANGE",
    "spark batch read, 1 % by enqueuedTime in Spark": "the filter in Spark",
    "client receive+complete (1 process)": "client consume",
}


SPARK_SCHEMA_READ = "spark batch read, schema 'body binary'"
SPARK_FLOOR = "spark floor: ready Arrow batches"
SPARK_FLOOR_BODY = "spark floor: ready Arrow batches, schema 'body binary'"
SPARK_WINDOW_SPARK = "spark batch read, 1 % by enqueuedTime in Spark"
SPARK_WINDOW_PUSHED = "spark batch read, 1 % by enqueuedTime pushed"


def _reaches(d: Json, target: float = 50_000) -> str:
    """From how many messages each stream's medians reach `target` msgs/s end to end: a query
    takes its start and stop (the median time outside its triggers) plus n / its rate within them."""
    out = []
    for mode in ("peek", "consume"):
        r = next(x for x in d["summary"] if x["operation"] == f"spark stream (mode {mode})")
        fixed = d["n"] / r["rate_median"] - d["n"] / r["rate_in_triggers_median"]
        within = r["rate_in_triggers_median"]
        if within <= target:
            out.append(
                f"mode {mode} runs at {rate(within)} msgs/s within its triggers, so it reaches "
                f"{rate(target)} at no size"
            )
        else:
            n = target * fixed / (1 - target / within)
            out.append(f"mode {mode} ({fixed:.1f} s of start and stop) from about {round(n, -4):,.0f} messages")
    return f"At the medians above a query reaches {rate(target)} msgs/s end to end: " + "; ".join(out) + "."


def _names(figures: list[str]) -> str:
    quoted = [f"'{f}'" for f in figures]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]


def spark(d: Json) -> Iterator[str]:
    yield "## Spark"
    yield ""
    yield (
        f"`bench/bench_spark.py`: {d['n']} messages of {d['body_bytes']} B in {d['partitions']} "
        f"partitions, Spark `{d['master']}`, {d['rounds']} rounds; each round runs every figure once on "
        "fresh queues, the client and Spark alternating. Medians with the spread (min-max) over the "
        "rounds; the ratio is to the baseline in the same round. A stream's time includes its query's "
        "start and stop; \"in triggers\" is its rate over the triggers' time in the query's progress "
        "(`durationMs.triggerExecution`), without them. CPU is per message: for a Spark "
        "figure this process, the Spark JVM, its Python workers (including the Python process that "
        "runs a streaming source's driver side) and redis-server (INFO cpu); for a one-process "
        f"figure that process and redis. Load average at the start: {d['machine']['loadavg_at_start'][0]:.1f} "
        f"on {d['machine']['cpus']} cores; the Spark session took {d['spark_session_start_seconds']:.1f} s "
        "to start (not counted). `--only NAME` runs some figures (with their baselines) and saves nothing; "
        "with `--merge` it replaces those figures in the results and keeps the others."
        + "".join(
            f" {_names(m['figures'])} {'come' if len(m['figures']) > 1 else 'comes'} from a later run "
            f"of {m['rounds']} rounds "
            f"(load average {m['machine']['loadavg_at_start'][0]:.1f} at its start)."
            for m in d.get("merged", [])
        )
    )
    yield ""
    rows = []
    for r in d["summary"]:
        by = r["cpu_us_per_msg_by_process"]
        vs = ""
        if "vs" in r:
            vs = f"{ratio(r['vs_median'])} ({r['vs_min']:.2f}-{r['vs_max']:.2f}) of {SPARK_SHORT.get(r['vs'], r['vs'])}"
        within = ""
        if "rate_in_triggers_median" in r:
            within = (
                f"{rate(r['rate_in_triggers_median'])} "
                f"({rate(r['rate_in_triggers_min'])}-{rate(r['rate_in_triggers_max'])})"
            )
        split = (
            ""
            if not r["operation"].startswith("spark")
            else " / ".join(f"{by[k]:.1f}" for k in ("jvm", "workers", "redis"))
        )
        rows.append(
            [
                r["operation"],
                f"{rate(r['rate_median'])} ({rate(r['rate_min'])}-{rate(r['rate_max'])})",
                within,
                vs,
                f"{r['cpu_us_per_msg_median']:.1f}",
                split,
            ]
        )
    yield from table(["figure", "msgs/s", "in triggers", "vs baseline", "CPU µs/msg", "JVM / workers / redis"], rows)
    by = {r["operation"]: r for r in d["summary"]}

    def vs(op: str) -> str:
        r = by[op]
        return f"{ratio(r['vs_median'])} ({r['vs_min']:.2f}-{r['vs_max']:.2f})"

    def within(op: str) -> str:
        return rate(by[op]["rate_in_triggers_median"])

    yield (
        "Other work shared the machine, so wall times move two- to three-fold between rounds, the "
        "CPU per message far less; the first round is the slow one in most Spark figures (the "
        "JVM still compiles its hot paths: its CPU there is up to four times the later rounds'). "
        "Against the targets: the consume job is "
        f"{vs('spark consume')} of the client; bulk load {vs('spark bulk_load')} against 0.8x; the "
        f"batch read {vs('spark batch read')} of plain XRANGE against 0.5x with every column, "
        f"{vs(SPARK_SCHEMA_READ)} when the query names its one column; streaming against 50k msgs/s "
        f"runs at {within('spark stream (mode peek)')} within the triggers in mode peek and "
        f"{within('spark stream (mode consume)')} in mode consume, not counting the query's start "
        f"and stop: {rate(by['spark stream (mode peek)']['rate_median'])} and "
        f"{rate(by['spark stream (mode consume)']['rate_median'])} at {d['n']:,} messages."
    )
    yield ""
    if SPARK_FLOOR in by:

        def cpu(op: str) -> str:
            c = by[op]["cpu_us_per_msg_by_process"]
            return f"{c['jvm']:.1f} JVM + {c['workers']:.1f} workers"

        yield (
            "The floor figures are Spark's own share of a batch read: a trivial Python data source "
            "(in `bench/bench_spark.py`) whose tasks yield ready Arrow batches of the same rows and "
            "columns, made by Arrow without Redis, read and aggregated as the batch read is. It "
            f"reaches {vs(SPARK_FLOOR)} of XRANGE with every column and {vs(SPARK_FLOOR_BODY)} with "
            f"the body alone, at {cpu(SPARK_FLOOR)} and {cpu(SPARK_FLOOR_BODY)} µs/msg of CPU, "
            f"against the sbredis read's {cpu('spark batch read')} and {cpu(SPARK_SCHEMA_READ)} "
            "(and its redis-server's). So of the batch read's CPU per message, the floor's is "
            "Spark's (the JVM turning Arrow batches into rows, PySpark's worker passing the batches "
            "on), the rest the source's: its Python reading `XRANGE` pages and building the "
            "columns, and Redis serving them. A query's fixed cost is mostly Spark's too: warm, a "
            "read of 1,000 messages takes 0.3-0.4 s, and one of 20,000 took 0.46 s against the "
            "floor source's 0.49 s (`--n 20000`, one round)."
        )
        yield ""
    if SPARK_WINDOW_PUSHED in by and SPARK_WINDOW_SPARK in by:

        def split(op: str) -> str:
            c = by[op]["cpu_us_per_msg_by_process"]
            return f"{by[op]['cpu_us_per_msg_median']:.1f} µs ({c['jvm']:.1f} JVM, {c['workers']:.1f} workers)"

        yield (
            "The two '1 % by enqueuedTime' figures read every message and keep those enqueued in a "
            "window around the median holding about 1 % of them, the filter applied by Spark or "
            "pushed into the source (option `filterPushdown`); their msgs/s and CPU count every "
            "message read. Pushed down, the source tests each message's enqueued time as its page "
            "is read (enqueued time is not in offset order, so every offset is still read), and "
            "the dropped ones never become Arrow rows for the JVM: the read runs at "
            f"{vs(SPARK_WINDOW_PUSHED)} the rate of the filter in Spark, at {split(SPARK_WINDOW_PUSHED)} "
            f"of CPU per message against {split(SPARK_WINDOW_SPARK)}. What is left is reading and "
            "parsing the pages in the workers, and the JVM's per-task and per-query cost."
        )
        yield ""
    yield (
        "Where the time goes (the tasks' Python code profiled standalone against a real "
        "redis-server with cProfile, and in Spark's Python workers with py-spy; each change "
        "measured alternating with and without it):"
    )
    yield ""
    yield (
        "* **Reads (batch, and streams in mode peek).** A page of a partition is one `XRANGE`, "
        "sent with the sizes of the partition's lock, delivery-count, deferred and schedule sets in "
        "one `MULTI` (`Transport.read_many`, `sbredis/_core/log_read.py`); only a page of a "
        "partition where one of those is not empty needs a second `MULTI` for its messages' counts "
        "and states, and none when the schema shows neither. Standalone over 200,000 messages, "
        "Redis spends 0.6 µs/msg on it against 2.5-2.9 in the peek script, which turned each entry "
        "into Lua tables and back. The reply's two lists per entry cost the reading process 1.1-1.5 "
        "µs/msg more in Python's cyclic garbage collector (in a Spark worker its full collections go "
        "over every object of PySpark and pyarrow), until the collector was paused while a page is "
        "read and parsed: the task's CPU is then what it was with the script (2.5 µs/msg with every "
        "column, 1.4 with the body alone). A page's columns are built by Arrow where they can be: "
        "constant columns repeated, sequence numbers and times computed, a header key that no "
        "message of the page has a null column, and `applicationProperties` one map array of every "
        "row's keys and values end to end (`MapArray.from_arrays`), a quarter of the cost of a list "
        "of pairs per row, the priciest column built that way (standalone, every column: 7.4 -> 4.0 "
        "µs/msg with two properties a message, 1.6 -> 1.1 with an id alone). The collector is also "
        "paused while a batch is built (its parsed headers are a dict per row: workers 3.65 -> 3.4 "
        "µs/msg). PySpark 4.3 hands a Python source the full schema whatever the query uses (no "
        "column pruning: its data source API has no call for it), so a query that needs few "
        "columns is cheaper with a schema of those. Every Spark task costs Spark about 60 ms of CPU "
        "(the JVM's and the workers' CPU reading 200,000 messages in 16 tasks: 12.8 µs/msg, in 4: "
        "6.5, in 2: 5.9, in 1: 5.4; 1 to 4 tasks in the same wall time on 2 loaded cores, 4 rounds "
        "alternating), so a batch read packs partitions into tasks of at least "
        "100,000 offsets unless `minOffsetsPerTask` says otherwise (a stream's micro-batch, 50,000). "
        "The Python workers that plan a query (PySpark's `create_data_source` and "
        "`plan_data_source_read`) and run its tasks are forked by one daemon per kind, and an idle "
        "one ends after a minute: a query after a pause starts up to three, each importing sbredis "
        "(about 0.3 s on an idle core) before it does anything."
    )
    yield (
        "* **Streams: the query's start and stop are mostly Spark's.** A trivial Python streaming "
        "source (one batch of one row, `Trigger.AvailableNow`, the noop sink), timed the same way "
        "in the same session, takes 2.3 s from `start()` to its end (median of 5, 1.7-3.3 s, load "
        "average 3-7); an sbredis query of one message 2.5 s in mode peek (1.9-2.6) and 2.7 s in "
        "mode consume (1.5-3.9). What sbredis adds is mostly the import in the Python process that "
        "runs the source's driver side, a new process per query: beside PySpark's own 0.26 s, "
        "redis-py takes 0.11 s and sbredis's modules 0.13 s (0.25 s of that process's CPU in all). "
        "The source's calls there are short: one client per stream reader serves all its offset "
        "calls, and the client hands redis-py its driver info, which redis-py 8 otherwise makes for "
        "every connection by looking its own version up with `importlib.metadata`, a walk of "
        "`sys.path` that in a Spark Python process (PySpark's zip files on it) costs 50-170 ms per "
        "connection, in the source's first offset call and in every task's connections. That "
        "process is started afresh for every query (`python -m "
        "pyspark.sql.streaming.python_streaming_source_runner`, not forked from a daemon as the "
        "workers are), and it imports PySpark from `pyspark.zip`, which Spark puts first on its "
        "path; zipimport keeps no bytecode, so PySpark's modules are compiled from source at "
        "every query start: half of that process's samples in a py-spy profile, and importing the "
        "runner module and the consume reader took 1.6 s (1.15 s CPU) from the zip against 0.83 s "
        "(0.60 s) from the installed package and its bytecode, on the loaded machine, in both "
        "modes alike. Mode consume completes a batch's locks when Spark asks for the next batch's "
        "offsets, once the batch is in Spark's commit log, on a thread while Spark runs that next "
        "batch; the last batch's locks are completed before the query ends (0.3-0.5 s per "
        "100,000 on this machine), with no empty batch after it. That last completion is most of "
        "what mode consume's start and stop add to mode peek's. Traced on the driver, the offset "
        "call between two batches of 100,000 takes 0.03-0.12 s with the completion beside the "
        "next batch against 0.4-1.1 s when it completes them before answering, but on these 2 "
        "cores the next batch's tasks take about that much longer (0.9 s against 0.6 s on the "
        "quieter rounds): its receives and the completion share Redis and the cores. Alternating "
        "the two, 5 rounds each, the query's rate is the same within the spread (53.1k msgs/s "
        "median, 37.3k-54.9k, against 41.4k, 33.5k-55.1k; CPU 23.7 against 23.6 µs/msg): on this "
        "machine it takes the completion out of the offset call without making the query faster. "
        f"{_reaches(d)}"
    )
    yield (
        "* **Mode consume.** Tasks receive in pipelined rounds parsed as columns: standalone over "
        "100,000 messages with every column, a task's Python spends 2.0-2.1 µs/msg once warm "
        "(6.5-7.3 in a process's first read) and Redis 4.2-5.0 in the receive script; the ledger's "
        "appends are 2 ms of Redis per 100,000. The ledger keeps a receive's locks as its lock "
        "nonce and the sequence numbers per partition, which the driver's complete calls take as "
        "they are: as lock-token text, formatting and parsing them cost the task 0.5 µs/msg more "
        "(2.53-2.59) and the completion 0.4 (0.91-0.92), 3 runs alternating. Completing 100,000 "
        "locks takes 0.28-0.5 s: the driver's Python 0.50-0.56 µs/msg (the ledger read, the calls "
        "packed) and Redis 2.3-2.6 (one call per partition and lock nonce), so Redis spends "
        "about 7 µs per consumed message, as for the one-process client's receive and complete. "
        "Of the workers' CPU, the two task workers took 0.9-1.0 s per 200,000 messages and the "
        "process that runs the source's driver side 1.5-2.0 s, most of it its start (above)."
    )
    yield (
        "* **Bulk load.** Rows of a body and a `messageId` (the job's usual input) are encoded column "
        "by column from the Arrow batch into the send planning, without a `ServiceBusMessage` per "
        "row; other rows, and rows the per-row checks must judge (a null body, an empty or too long "
        "id, a message over the size limit), go row by row: standalone 5.6 -> 3.7 µs/msg of writer "
        "CPU over 100,000 rows. The collector is paused while a batch is encoded and sent, as in the "
        "read (its object per row would push older ones into full collections: workers 3.7 -> 3.1 "
        "µs/msg). The JVM's share (reading Parquet and handing the rows to Python as Arrow) is "
        "Spark's; two workers share the 2 cores with the JVM and redis-server."
    )
    yield (
        "* **Consume job.** Each task receives from all its partitions in one pipelined round trip "
        "and completes them in one."
    )
    yield ""


def observability(d: Json) -> Iterator[str]:
    yield "## Observability"
    yield ""
    st = d["settings"]
    yield (
        f"`bench/bench_observability.py`: client CPU per message, {st['single']} single round trips "
        f"(send, receive, complete) and {st['batches']} batches of {st['batch']}, medians of {st['rounds']} "
        f"rounds; the disabled seam costs {d['noop_seam_ns_per_operation']} ns per operation (timeit)."
    )
    yield ""
    rows = [[r["mode"], f"{r['single_cpu_us_per_msg']:.1f}", f"{r['batch_cpu_us_per_msg']:.2f}"] for r in d["rows"]]
    yield from table(["mode", "single (µs CPU/msg)", "batch (µs CPU/msg)"], rows)


def dashboard(d: Json) -> Iterator[str]:
    yield "## Dashboard"
    yield ""
    m = d["machine"]
    load = ""
    if "load_average_before" in m:
        before, after = (", ".join(f"{x:.2f}" for x in m[k]) for k in ("load_average_before", "load_average_after"))
        load = (
            f" Load average (1, 5, 15 min) on the machine ({m.get('cpu_count')} CPUs, shared): {before} before "
            f"the timed rounds, {after} after."
        )
    yield (
        f"`bench/bench_dashboard.py`: the overview of {d['entities']} entities of {d['partitions']} partitions "
        f"each, ms over {d['rounds']} rounds; the page is {d['html_bytes'] / 1024:.0f} KiB of HTML. The "
        f"target is under 300 ms for the page.{load}"
    )
    yield ""
    what = {
        "read": "read the counts (registry + every partition)",
        "page": "GET / (read + rates + HTML)",
        "json": "GET /api/overview (what the page polls)",
    }
    rows = [[what.get(k, k), ms(v["median"]), ms(v["min"]), ms(v["max"])] for k, v in d["ms"].items()]
    yield from table(["what", "median ms", "min ms", "max ms"], rows)
    yield ""


def _leaves(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(v, f"{path}.{k}" if path else str(k))
    elif isinstance(value, (int, float, str, bool)) and path:
        yield path, value


def generic(name: str) -> Callable[[Json], Iterator[str]]:
    def render(d: Json) -> Iterator[str]:
        yield f"## `{name}`"
        yield ""
        yield "No section of its own yet: its figures, as recorded (lists left out)."
        yield ""
        rows = []
        for path, v in _leaves({k: v for k, v in d.items() if k != "machine"}):
            text = f"{v:.4g}" if isinstance(v, float) else str(v)
            rows.append([f"`{path}`", text.replace("|", "\\|")])
        yield from table(["field", "value"], rows[:60])

    return render


SECTIONS: dict[str, Callable[[Json], Iterator[str]]] = {
    "core.json": core,
    "core-redis7.json": functools.partial(core, server_in_title=True),
    "floors.json": floors,
    "peers.json": peers,
    "cluster.json": cluster,
    "latency.json": latency,
    "topics.json": topics,
    "fanout_wide.json": fanout_wide,
    "paired.json": paired,
    "sessions.json": sessions,
    "transactions.json": transactions,
    "workers.json": workers,
    "expiry.json": expiry,
    "loops.json": loops,
    "spark.json": spark,
    "observability.json": observability,
    "dashboard.json": dashboard,
}

INTRO = """# Benchmarks

<!-- Generated by scripts/bench_page.py from bench/results/*.json; do not edit by hand. -->

The figures on this page are the ones in `bench/results/*.json`, written by the scripts in
`bench/` (`bench/README.md` says how each one measures); `python scripts/bench_page.py` writes
this page from them, and the test suite fails when the page and the files differ. Benchmarks print
numbers; they do not assert wall-clock times. Re-run one with `python bench/<script>.py`, then
`python scripts/bench_page.py`.
"""


def render(results_dir: Path = RESULTS) -> str:
    results = {p.name: json.loads(p.read_text()) for p in sorted(results_dir.glob("*.json"))}
    lines = [INTRO, *machines(results)]
    order = [n for n in SECTIONS if n in results] + [n for n in results if n not in SECTIONS]
    for name in order:
        lines += list(SECTIONS.get(name, generic(name))(results[name]))
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        if PAGE.read_text() != text:
            print("docs/benchmarks.md differs from bench/results/*.json: run python scripts/bench_page.py")
            return 1
        return 0
    PAGE.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
