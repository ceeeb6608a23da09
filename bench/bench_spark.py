#!/usr/bin/env python
"""Spark jobs against the single-process client on the same data: bulk load and consume.

    python bench/bench_spark.py [--n 200000] [--body-bytes 170] [--partitions 16] [--rounds 3]
                                [--master local[2]] [--url redis://host:port/db] [--only NAME [--merge]]

The input is --n rows (body of --body-bytes random bytes, messageId) in 4 Parquet files, made
once with pyarrow. The figures, each one run over all N messages, every round (client and Spark
alternating, fresh queues each round):

  * client send       one process: the Parquet rows as ServiceBusMessage lists of 500 through
                      ``sender.send_messages`` (reading the files is not timed)
  * client consume    one process: ``receive_messages(100)`` + ``complete_messages`` until empty
  * spark bulk_load   ``sbredis.spark._bulk.bulk_load`` (spark_jobs/bulk_load.py) from the files
  * spark consume     ``sbredis.spark._consume.consume`` (spark_jobs/consume.py), handler
                      ``builtins:id`` (a no-op), batches of 100, one task per Spark core
  * plain XRANGE      one process: every partition's log read with redis-py XRANGE (pages of
                      1000), the floor a read is compared with
  * spark batch read  ``spark.read.format("sbredis")``, count and total body length; and the
                      same with ``.schema("body binary")`` (PySpark hands a source the full
                      schema whatever the query uses)
  * spark floor       what Spark itself costs for such a read: a trivial Python data source whose
                      tasks yield ready Arrow batches of the same rows and columns (made with
                      Arrow, no Redis), with every column and with ``body`` alone; the gap
                      between it and the batch read is the sbredis source's own
  * spark batch read, 1 % by enqueuedTime   the batch read's aggregate over the messages
                      enqueued in a window around the median holding about 1 % of them
                      (found with XRANGE, untimed), the filter applied by Spark ("in Spark",
                      option filterPushdown false) and pushed into the source ("pushed"); msgs/s
                      and CPU per message count every message read, and "pushed" is compared
                      with "in Spark"
  * spark stream      ``readStream`` mode peek (from earliest) and mode consume (a fresh load of
                      the same rows, maxOffsetsPerTrigger 100,000), Trigger.AvailableNow into
                      the noop sink; the time includes the query's start (the figure's rate
                      in its triggers, from the query's progress, leaves start and stop out)

Each figure records wall time and CPU seconds of this process, the Spark JVM, the Python workers
under it (exited workers through their parent's reaped-children time) and redis-server (INFO
cpu); the summary gives, per figure, the median and spread over the rounds of msgs/s, of the
ratio to its baseline in the same round, and of CPU microseconds per message, which moves far
less than wall time on a loaded machine.

Each queue has --partitions partitions and no duplicate detection. The Spark session starts once
and runs a small bulk_load and consume on a scratch queue first, so that Python workers are up
(both are reported, not timed into the figures); the consume job's figure includes its idle
check at the end (--idle-seconds). Results go to bench/results/spark.json. Without --url a
private redis-server is started (tests/redis_server.py).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

import sbredis  # noqa: E402
from sbredis import ServiceBusClient, ServiceBusMessage  # noqa: E402
from sbredis.management import ServiceBusAdministrationClient  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "spark.json"
TCK = os.sysconf("SC_CLK_TCK")
FILES = 4
SEND_BATCH = 500
RECEIVE_BATCH = 100
pc = time.perf_counter


def _proc_table() -> dict[int, tuple[str, int, float, float]]:
    """pid -> (name, parent pid, CPU seconds of it, CPU seconds of its reaped children)."""
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2 :].split()
        own, reaped = sum(int(x) for x in fields[11:13]) / TCK, sum(int(x) for x in fields[13:15]) / TCK
        out[int(d)] = (name, int(fields[1]), own, reaped)
    return out


def cpu_split(redis: Any) -> dict[str, float]:
    """CPU seconds so far of this process ("driver"), the Spark JVM it started ("jvm"), the
    Python workers under that JVM ("workers") and the redis-server ("redis", from INFO cpu). A
    worker that exited is counted through its parent's reaped-children time: the JVM's children
    are all Python processes (the worker daemon, and the process that runs a streaming source's
    driver side, which exits with its query)."""
    ps = _proc_table()
    me = os.getpid()
    kids: dict[int, list[int]] = {}
    for pid, (_, ppid, _, _) in ps.items():
        kids.setdefault(ppid, []).append(pid)
    out = {"driver": sum(ps[me][2:]) if me in ps else 0.0, "jvm": 0.0, "workers": 0.0, "redis": 0.0}
    todo = [(k, "") for k in kids.get(me, [])]
    while todo:
        pid, under = todo.pop()
        name = ps[pid][0]
        if under:
            kind = "workers" if name.startswith("python") or under == "workers" else "jvm"
        else:
            kind = "jvm" if name == "java" else ""
        if kind == "jvm":
            out["jvm"] += ps[pid][2]
            out["workers"] += ps[pid][3]
        elif kind:
            out[kind] += ps[pid][2] + ps[pid][3]
        todo += [(k, kind) for k in kids.get(pid, [])]
    cpu = redis.info("cpu")
    out["redis"] = float(cpu["used_cpu_sys"]) + float(cpu["used_cpu_user"])
    return out


class Measured:
    """Wall seconds and per-process CPU seconds of one operation."""

    def __init__(self, redis: Any) -> None:
        self.redis = redis

    def __enter__(self) -> Measured:
        self.cpu0 = cpu_split(self.redis)
        self.t0 = pc()
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = pc() - self.t0
        after = cpu_split(self.redis)
        self.cpu = {k: max(0.0, after[k] - self.cpu0[k]) for k in after}


def make_input(directory: Path, n: int, body_bytes: int) -> list[str]:
    paths = []
    per = -(-n // FILES)
    for f in range(FILES):
        lo, hi = f * per, min(n, (f + 1) * per)
        if lo >= hi:
            break
        bodies = [os.urandom(body_bytes) for _ in range(hi - lo)]
        ids = [f"m-{i}" for i in range(lo, hi)]
        table = pa.table({"body": pa.array(bodies, pa.binary()), "messageId": pa.array(ids, pa.string())})
        path = directory / f"part-{f}.parquet"
        pq.write_table(table, path)
        paths.append(str(path))
    return paths


def client_send(url: str, q: str, paths: list[str]) -> tuple[int, float]:
    tables = [pq.read_table(p) for p in paths]
    n, elapsed = 0, 0.0
    with ServiceBusClient.from_connection_string(url) as c, c.get_queue_sender(q) as s:
        for t in tables:
            bodies = t.column("body").to_pylist()
            ids = t.column("messageId").to_pylist()
            t0 = pc()
            for i in range(0, len(bodies), SEND_BATCH):
                s.send_messages(
                    [
                        ServiceBusMessage(b, message_id=m)
                        for b, m in zip(bodies[i : i + SEND_BATCH], ids[i : i + SEND_BATCH], strict=True)
                    ]
                )
            elapsed += pc() - t0
            n += len(bodies)
    return n, elapsed


def client_consume(url: str, q: str) -> tuple[int, float]:
    n = 0
    with ServiceBusClient.from_connection_string(url) as c, c.get_queue_receiver(q) as r:
        t0 = pc()
        while True:
            got = r.receive_messages(RECEIVE_BATCH, max_wait_time=0.2)
            if not got:
                break
            for m in got:
                id(m)  # the Spark run's handler
            r.complete_messages(got)
            n += len(got)
        return n, pc() - t0


def plain_xrange(url: str, q: str, partitions: int) -> tuple[int, float]:
    """Every message's log entry read with plain redis-py XRANGE, pages of 1000: the floor for a read."""
    import redis

    from sbredis._core.keys import entity_keys

    r = redis.Redis.from_url(url)
    logs = [k for p in range(partitions) for k in entity_keys(q, p) if k.endswith(":log") and ":d:" not in k]
    n = 0
    t0 = pc()
    for key in logs:
        start = "-"
        while True:
            page = r.xrange(key, start, "+", count=1000)
            n += len(page)
            if len(page) < 1000:
                break
            start = "(" + page[-1][0].decode()
    r.close()
    return n, pc() - t0


def spark_read(spark: Any, url: str, q: str, schema: str | None = None) -> tuple[int, float]:
    from pyspark.sql import functions as F  # noqa: N812

    t0 = pc()
    reader = spark.read.format("sbredis").option("url", url).option("entity", q)
    df = (reader.schema(schema) if schema else reader).load()
    row = df.agg(F.count("*").alias("n"), F.sum(F.length("body")).alias("b")).collect()[0]
    return int(row["n"]), pc() - t0


def enqueued_window(url: str, q: str, partitions: int, share: float) -> tuple[Any, Any, int]:
    """A window [lo, hi) of enqueued times (aware datetimes) holding about `share` of the queue's
    messages, around the median, and how many it holds: read from the logs with XRANGE (untimed)."""
    import redis

    from sbredis._core.keys import entity_keys

    r = redis.Redis.from_url(url)
    times = []
    for key in (k for p in range(partitions) for k in entity_keys(q, p) if k.endswith(":log") and ":d:" not in k):
        start = "-"
        while page := r.xrange(key, start, "+", count=1000):
            times += [int(v[b"e"]) for _, v in page]
            start = "(" + page[-1][0].decode()
    r.close()
    times.sort()
    half = int(len(times) * share / 2)
    lo, hi = times[len(times) // 2 - half], times[len(times) // 2 + half] + 1
    kept = sum(lo <= t < hi for t in times)
    as_time = lambda ms: dt.datetime.fromtimestamp(ms / 1000, dt.UTC)  # noqa: E731
    return as_time(lo), as_time(hi), kept


def spark_read_window(spark: Any, url: str, q: str, window: tuple[Any, Any], pushdown: bool) -> tuple[int, float]:
    """The batch read's aggregate over the messages enqueued in `window` only, with the filter
    pushed into the source or applied by Spark."""
    from pyspark.sql import functions as F  # noqa: N812

    t0 = pc()
    df = (
        spark.read.format("sbredis")
        .option("url", url)
        .option("entity", q)
        .option("filterPushdown", str(pushdown).lower())
        .load()
        .where((F.col("enqueuedTime") >= F.lit(window[0])) & (F.col("enqueuedTime") < F.lit(window[1])))
    )
    row = df.agg(F.count("*").alias("n"), F.sum(F.length("body")).alias("b")).collect()[0]
    return int(row["n"]), pc() - t0


def floor_source() -> Any:
    """The trivial data source of the floor figures (``format("sbredis_bench_floor")``, option
    ``n``): READ_SCHEMA's columns for n messages shaped as the bench's (170 B bodies, an id, one
    partition per task), in Arrow batches of the read's size, made column-wise by Arrow so that
    the tasks' Python costs next to nothing. Defined in the script: cloudpickle ships it by value."""
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    class FloorReader(DataSourceReader):
        def __init__(self, names: list[str], n: int, tasks: int) -> None:
            self.names, self.n, self.tasks = names, n, tasks

        def partitions(self) -> list[InputPartition]:
            return [InputPartition(i) for i in range(self.tasks)]

        def read(self, partition: InputPartition) -> Any:
            import pyarrow as pa
            import pyarrow.compute as pc

            from sbredis.spark import _columns

            kinds, types = dict(_columns.READ_FIELDS), _columns._arrow_types()
            per = -(-self.n // self.tasks)
            lo, hi = partition.value * per, min(self.n, (partition.value + 1) * per)
            for start in range(lo, hi, _columns.BATCH_ROWS):
                rows = min(_columns.BATCH_ROWS, hi - start)
                seq = pa.array(range(start + 1, start + rows + 1), pa.int64())
                offsets = pa.array(range(0, 170 * (rows + 1), 170), pa.int32())
                cols = {
                    "entity": pa.repeat(pa.scalar("floor"), rows),
                    "partition": pa.repeat(pa.scalar(partition.value, pa.int32()), rows),
                    "offset": seq,
                    "sequenceNumber": seq,
                    "body": pa.BinaryArray.from_buffers(
                        pa.binary(), rows, [None, offsets.buffers()[1], pa.py_buffer(os.urandom(170 * rows))]
                    ),
                    "messageId": pc.binary_join_element_wise("m-", pc.cast(seq, pa.string()), ""),
                    "enqueuedTime": pc.cast(pc.multiply(seq, 1000), types["TIMESTAMP"]),
                    "state": pa.repeat(pa.scalar("active"), rows),
                    "deliveryCount": pa.repeat(pa.scalar(0, pa.int32()), rows),
                }
                yield pa.RecordBatch.from_arrays(
                    [cols[c] if c in cols else pa.nulls(rows, types[kinds[c]]) for c in self.names], names=self.names
                )

    class FloorSource(DataSource):
        @classmethod
        def name(cls) -> str:
            return "sbredis_bench_floor"

        def schema(self) -> str:
            from sbredis.spark._columns import READ_SCHEMA

            return READ_SCHEMA

        def reader(self, schema: Any) -> DataSourceReader:
            n = int(self.options["n"])
            return FloorReader(schema.fieldNames(), n, max(1, -(-n // 100_000)))

    return FloorSource


def spark_floor(spark: Any, n: int, schema: str | None = None) -> tuple[int, float]:
    """The floor source's read, counted and summed as spark_read's."""
    from pyspark.sql import functions as F  # noqa: N812

    t0 = pc()
    reader = spark.read.format("sbredis_bench_floor").option("n", str(n))
    df = (reader.schema(schema) if schema else reader).load()
    row = df.agg(F.count("*").alias("n"), F.sum(F.length("body")).alias("b")).collect()[0]
    return int(row["n"]), pc() - t0


STREAM_TRIGGERS: dict[str, float] = {}  # mode -> seconds in the last query's triggers


def spark_stream(spark: Any, url: str, q: str, mode: str, work: Path) -> tuple[int, float]:
    """A streaming query (Trigger.AvailableNow, noop sink) over the queue; rows and seconds."""
    reader = spark.readStream.format("sbredis").option("url", url).option("entity", q).option("mode", mode)
    if mode == "peek":
        reader = reader.option("startingOffsets", "earliest")
    else:
        reader = reader.option("maxOffsetsPerTrigger", "100000")
    t0 = pc()
    query = (
        reader.load()
        .writeStream.format("noop")
        .option("checkpointLocation", str(work / f"ckpt-{mode}"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    seconds = pc() - t0
    progress = query.recentProgress
    STREAM_TRIGGERS[mode] = sum(p["durationMs"].get("triggerExecution", 0) for p in progress) / 1000
    return sum(p["numInputRows"] for p in progress), seconds


def active(admin: Any, q: str) -> int:
    return int(admin.get_queue_runtime_properties(q).active_message_count)


def machine() -> dict[str, Any]:
    import pyspark

    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=False
        ).stdout.strip()
    except OSError:
        commit = ""
    try:
        load = os.getloadavg()
    except OSError:
        load = (0.0, 0.0, 0.0)
    return {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "loadavg_at_start": [round(x, 2) for x in load],
        "pyspark": pyspark.__version__,
        "sbredis": sbredis.__version__,
        "git": commit,
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }


OPS = (
    "client send (1 process)",
    "spark bulk_load",
    "plain redis-py XRANGE (1 process)",
    "spark batch read",
    "spark stream (mode peek)",
    "client receive+complete (1 process)",
    "spark consume",
    "spark stream (mode consume)",
    "spark batch read, schema 'body binary'",
    "spark floor: ready Arrow batches",
    "spark floor: ready Arrow batches, schema 'body binary'",
    "spark batch read, 1 % by enqueuedTime in Spark",
    "spark batch read, 1 % by enqueuedTime pushed",
)
BASELINE = {  # what each figure is compared with, in the same round
    "spark bulk_load": "client send (1 process)",
    "spark consume": "client receive+complete (1 process)",
    "spark batch read": "plain redis-py XRANGE (1 process)",
    "spark batch read, schema 'body binary'": "plain redis-py XRANGE (1 process)",
    "spark stream (mode peek)": "plain redis-py XRANGE (1 process)",
    "spark floor: ready Arrow batches": "plain redis-py XRANGE (1 process)",
    "spark floor: ready Arrow batches, schema 'body binary'": "plain redis-py XRANGE (1 process)",
    "spark batch read, 1 % by enqueuedTime in Spark": "plain redis-py XRANGE (1 process)",
    "spark batch read, 1 % by enqueuedTime pushed": "spark batch read, 1 % by enqueuedTime in Spark",
}


def one_round(
    spark: Any, url: str, admin: Any, paths: list[str], n_expected: int, args: Any, work: Path, index: int = 0
) -> list[dict[str, Any]]:
    """Every figure once, client and Spark alternating, on fresh queues (round `index`)."""
    import redis

    from sbredis.spark._bulk import bulk_load
    from sbredis.spark._consume import consume

    tag = f"bench-{uuid.uuid4().hex[:8]}"
    qc, qs, qs2 = f"{tag}-client", f"{tag}-spark", f"{tag}-stream"
    for q in (qc, qs, qs2):
        admin.create_queue(q, enable_partitioning=True, partition_count=args.partitions, max_size_in_megabytes=81920)
    r = redis.Redis.from_url(url)
    rows: list[dict[str, Any]] = []

    def record(op: str, m: Measured, n: int, in_triggers: float | None = None) -> None:
        rows.append({"operation": op, "messages": n, "seconds": m.seconds, "cpu_seconds": m.cpu})
        if in_triggers:
            rows[-1]["trigger_seconds"] = in_triggers
        print(f"  {op}: {n} in {m.seconds:.2f} s, cpu " + ", ".join(f"{k} {v:.2f}" for k, v in m.cpu.items()))

    def want(op: str) -> bool:
        return not args.only or any(w in op for w in args.only)

    try:
        if want(OPS[0]) or want(OPS[5]):
            with Measured(r) as m:
                n, _ = client_send(url, qc, paths)
            record(OPS[0], m, n)
            assert active(admin, qc) == n_expected
        if any(want(op) for op in OPS[1:5] + OPS[6:7] + OPS[8:]):
            with Measured(r) as m:
                summary = bulk_load(spark, url, qs, paths)
            record(OPS[1], m, summary.messages)
            assert active(admin, qs) == n_expected
        if any(want(op) for op in OPS[2:5] + OPS[8:]):
            with Measured(r) as m:
                n, _ = plain_xrange(url, qs, args.partitions)
            record(OPS[2], m, n)
        if want(OPS[3]):
            with Measured(r) as m:
                n, _ = spark_read(spark, url, qs)
            record(OPS[3], m, n)
        if want(OPS[8]):  # the same read naming its one column (PySpark prunes none itself)
            with Measured(r) as m:
                n, _ = spark_read(spark, url, qs, "body binary")
            record(OPS[8], m, n)
        for op, schema in ((OPS[9], None), (OPS[10], "body binary")):
            if want(op):
                with Measured(r) as m:
                    n, _ = spark_floor(spark, n_expected, schema)
                record(op, m, n)
        if want(OPS[11]) or want(OPS[12]):  # messages read per second, of which about 1 % are kept
            lo, hi, kept = enqueued_window(url, qs, args.partitions, 0.01)
            spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
            try:
                pair = [(OPS[11], False), (OPS[12], True)]
                for op, pushdown in pair if index % 2 else pair[::-1]:  # which goes first alternates
                    with Measured(r) as m:
                        got, _ = spark_read_window(spark, url, qs, (lo, hi), pushdown)
                    assert got == kept, (op, got, kept)
                    record(op, m, n_expected)
            finally:
                spark.conf.unset("spark.sql.python.filterPushdown.enabled")
        if want(OPS[4]):
            with Measured(r) as m:
                n, _ = spark_stream(spark, url, qs, "peek", work / tag)
            record(OPS[4], m, n, STREAM_TRIGGERS["peek"])
        if want(OPS[5]) or want(OPS[6]) or want(OPS[7]):
            if not (want(OPS[0]) or want(OPS[5])):
                client_send(url, qc, paths)
            with Measured(r) as m:
                n, _ = client_consume(url, qc)
            record(OPS[5], m, n)
        if want(OPS[6]):
            with Measured(r) as m:
                summary = consume(
                    spark, url, qs, "builtins:id", batch_size=RECEIVE_BATCH, idle_seconds=args.idle_seconds
                )
            record(OPS[6], m, summary.messages)
        if want(OPS[7]):
            bulk_load(spark, url, qs2, paths)
            with Measured(r) as m:
                n, _ = spark_stream(spark, url, qs2, "consume", work / tag)
            record(OPS[7], m, n, STREAM_TRIGGERS["consume"])
            assert active(admin, qs2) == 0
    finally:
        r.close()
        for q in (qc, qs, qs2):
            admin.delete_queue(q)
    by = {row["operation"]: row for row in rows}
    for row in rows:
        row["rate"] = row["messages"] / row["seconds"]
    for row in rows:
        if "trigger_seconds" in row:  # a stream's rate once started: its triggers' time only
            row["rate_in_triggers"] = row["messages"] / row["trigger_seconds"]
        base = BASELINE.get(row["operation"])
        if base in by:
            row["vs"] = row["rate"] / by[base]["rate"]
        # a one-process figure: that process and redis (the idle Spark JVM's own ticks are not its)
        own = ("driver", "redis") if not row["operation"].startswith("spark") else tuple(row["cpu_seconds"])
        row["cpu_us_per_msg"] = 1e6 * sum(row["cpu_seconds"][k] for k in own) / max(row["messages"], 1)
    return rows


def _median(xs: list[float]) -> float:
    xs = sorted(xs)
    k = len(xs)
    return xs[k // 2] if k % 2 else (xs[k // 2 - 1] + xs[k // 2]) / 2


def summarize(rounds: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Per operation: medians and spreads over the rounds."""
    out = []
    for op in OPS:
        rs = [row for rnd in rounds for row in rnd if row["operation"] == op]
        if not rs:
            continue
        rates = [row["rate"] for row in rs]
        cpu = [row["cpu_us_per_msg"] for row in rs]
        s: dict[str, Any] = {
            "operation": op,
            "messages": rs[0]["messages"],
            "rounds": len(rs),
            "rate_median": _median(rates),
            "rate_min": min(rates),
            "rate_max": max(rates),
            "cpu_us_per_msg_median": _median(cpu),
            "cpu_us_per_msg_by_process": {
                k: _median([1e6 * row["cpu_seconds"][k] / row["messages"] for row in rs]) for k in rs[0]["cpu_seconds"]
            },
        }
        if "rate_in_triggers" in rs[0]:
            it = [row["rate_in_triggers"] for row in rs]
            s.update(rate_in_triggers_median=_median(it), rate_in_triggers_min=min(it), rate_in_triggers_max=max(it))
        if "vs" in rs[0]:
            vs = [row["vs"] for row in rs]
            s.update(vs=BASELINE[op], vs_median=_median(vs), vs_min=min(vs), vs_max=max(vs))
        out.append(s)
    return out


def merge(summary: list[dict[str, Any]], rounds: list[list[dict[str, Any]]], args: Any, info: dict[str, Any]) -> None:
    """Replace the figures named by --only (their summaries and per-round rows) in the saved
    results, in OPS order, and note the run they came from under "merged"."""
    picked = {op for op in OPS if any(w in op for w in args.only)}
    saved = json.loads(RESULTS.read_text())
    if (saved["n"], saved["partitions"], saved["master"]) != (args.n, args.partitions, args.master):
        raise SystemExit("--merge: the saved results were made with other --n/--partitions/--master")
    fresh = {s["operation"]: s for s in summary if s["operation"] in picked}
    kept = {s["operation"]: s for s in saved["summary"] if s["operation"] not in fresh}
    saved["summary"] = [{**kept, **fresh}[op] for op in OPS if op in kept or op in fresh]
    for i, rnd in enumerate(rounds):
        if i < len(saved["rows"]):
            saved["rows"][i] = [r for r in saved["rows"][i] if r["operation"] not in fresh] + [
                r for r in rnd if r["operation"] in fresh
            ]
    saved.setdefault("merged", [])
    # an earlier merge keeps the figures this one does not replace
    earlier = [{**m, "figures": [f for f in m["figures"] if f not in fresh]} for m in saved["merged"]]
    saved["merged"] = [m for m in earlier if m["figures"]]
    saved["merged"].append({"figures": sorted(fresh, key=OPS.index), "rounds": len(rounds), "machine": info})
    RESULTS.write_text(json.dumps(saved, indent=2) + "\n")
    print(f"merged {len(fresh)} figure(s) into {RESULTS.relative_to(ROOT)}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=200_000, help="messages (default 200,000)")
    ap.add_argument("--body-bytes", type=int, default=170)
    ap.add_argument("--partitions", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=3, help="rounds of every figure (default 3)")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--idle-seconds", type=float, default=0.5)
    ap.add_argument("--url", help="an existing server (default: a private redis-server)")
    ap.add_argument("--no-save", action="store_true", help="do not write bench/results/spark.json")
    ap.add_argument(
        "--only",
        action="append",
        default=[],
        help="run only the figures whose name contains this (repeatable), with their baselines; implies --no-save",
    )
    ap.add_argument(
        "--merge",
        action="store_true",
        help="with --only: replace those figures (not their baselines) in bench/results/spark.json, keep the others",
    )
    args = ap.parse_args()

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    server = None
    url = args.url
    if url is None:
        from tests.redis_server import RedisServer

        server = RedisServer().start()
        url = server.url
    work = Path(tempfile.mkdtemp(prefix="sbredis-bench-spark-"))
    info = machine()
    rounds: list[list[dict[str, Any]]] = []
    try:
        t0 = pc()
        paths = make_input(work, args.n, args.body_bytes)
        print(f"input: {args.n} rows of {args.body_bytes} B bodies in {len(paths)} Parquet files ({pc() - t0:.1f} s)")
        admin = ServiceBusAdministrationClient.from_connection_string(url)
        qw = f"bench-{uuid.uuid4().hex[:8]}-warmup"
        admin.create_queue(qw, enable_partitioning=True, partition_count=args.partitions, max_size_in_megabytes=81920)

        from pyspark.sql import SparkSession

        from sbredis.spark import register
        from sbredis.spark._bulk import bulk_load
        from sbredis.spark._consume import consume

        t0 = pc()
        spark = (
            SparkSession.builder.master(args.master)
            .appName("sbredis-bench")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.shuffle.partitions", "4")
            .getOrCreate()
        )
        spark.sparkContext.setLogLevel("ERROR")
        register(spark)
        spark.dataSource.register(floor_source())
        startup = pc() - t0
        t0 = pc()
        bulk_load(spark, url, qw, paths[:1], limit=1000)  # starts the Python workers
        spark_read(spark, url, qw)  # the data source's planning and read paths, too
        spark_floor(spark, 1000)
        consume(spark, url, qw, "builtins:id", idle_seconds=0.1)
        warmup = pc() - t0
        admin.delete_queue(qw)
        print(f"spark session: {startup:.1f} s, warm-up jobs: {warmup:.1f} s")
        try:
            for i in range(args.rounds):
                print(f"round {i + 1} of {args.rounds}")
                rounds.append(one_round(spark, url, admin, paths, args.n, args, work, i))
        finally:
            spark.stop()
        admin.close()
    finally:
        if server is not None:
            server.stop()
        import shutil

        shutil.rmtree(work, ignore_errors=True)

    summary = summarize(rounds)
    head = (
        f"{'operation':<38} | {'msgs/s median':>13} | {'min-max':>15} | {'CPU us/msg':>10} | "
        "vs (same round): median, min-max"
    )
    print()
    print(head)
    print("-" * len(head))
    for s in summary:
        vs = f"{s['vs_median']:.2f}x ({s['vs_min']:.2f}-{s['vs_max']:.2f}) of {s['vs']}" if "vs" in s else ""
        spread = f"{s['rate_min'] / 1000:.1f}k-{s['rate_max'] / 1000:.1f}k"
        print(
            f"{s['operation']:<38} | {s['rate_median']:>13,.0f} | {spread:>15} | "
            f"{s['cpu_us_per_msg_median']:>10.1f} | {vs}"
        )
    for s in summary:
        if "rate_in_triggers_median" in s:
            print(
                f"  {s['operation']}: in its triggers (query start and stop left out) "
                f"{s['rate_in_triggers_median']:,.0f} msgs/s "
                f"({s['rate_in_triggers_min'] / 1000:.1f}k-{s['rate_in_triggers_max'] / 1000:.1f}k)"
            )
    print("CPU us/msg by process (median):")
    for s in summary:
        print(f"  {s['operation']:<38} " + ", ".join(f"{k} {v:.1f}" for k, v in s["cpu_us_per_msg_by_process"].items()))
    print(
        f"N={args.n}, {args.body_bytes} B bodies, {args.partitions} partitions, master {args.master}, "
        f"{args.rounds} rounds, spark session start {startup:.1f} s and warm-up jobs {warmup:.1f} s (not included); "
        f"machine {info['cpus']} cpus, load at start {info['loadavg_at_start']}"
    )
    if args.merge and args.only and not args.no_save:
        merge(summary, rounds, args, info)
    if not args.no_save and not args.only:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(
            json.dumps(
                {
                    "n": args.n,
                    "body_bytes": args.body_bytes,
                    "partitions": args.partitions,
                    "master": args.master,
                    "rounds": args.rounds,
                    "idle_seconds": args.idle_seconds,
                    "spark_session_start_seconds": round(startup, 2),
                    "spark_warmup_jobs_seconds": round(warmup, 2),
                    "summary": summary,
                    "rows": rounds,
                    "machine": info,
                },
                indent=2,
            )
            + "\n"
        )
        print(f"written to {RESULTS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
