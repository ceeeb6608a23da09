#!/usr/bin/env python
"""Spark jobs against the single-process client on the same data: bulk load and consume.

    python bench/bench_spark.py [--n 1000000] [--body-bytes 64] [--partitions 16] [--master local[2]]
                                [--url redis://host:port/db]

The input is --n rows (body of --body-bytes random bytes, messageId) in 4 Parquet files, made
once with pyarrow. Four figures, each one run over all N messages:

  * client send       one process: the Parquet rows as ServiceBusMessage lists of 500 through
                      ``sender.send_messages`` (reading the files is not timed)
  * client consume    one process: ``receive_messages(100)`` + ``complete_messages`` until empty
  * spark bulk_load   ``sbredis.spark._bulk.bulk_load`` (spark_jobs/bulk_load.py) from the files
  * spark consume     ``sbredis.spark._consume.consume`` (spark_jobs/consume.py), handler
                      ``builtins:id`` (a no-op), batches of 100, one task per Spark core
  * plain XRANGE      one process: every partition's log read with redis-py XRANGE (pages of
                      1000), the floor a read is compared with
  * spark batch read  ``spark.read.format("sbredis")``, count and total body length
  * spark stream      ``readStream`` mode peek (from earliest) and mode consume (a fresh load of
                      the same rows, maxOffsetsPerTrigger 100,000), Trigger.AvailableNow into
                      the noop sink; the time includes the query's start

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
FILES = 4
SEND_BATCH = 500
RECEIVE_BATCH = 100
pc = time.perf_counter


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


def spark_read(spark: Any, url: str, q: str) -> tuple[int, float]:
    from pyspark.sql import functions as F  # noqa: N812

    t0 = pc()
    df = spark.read.format("sbredis").option("url", url).option("entity", q).load()
    row = df.agg(F.count("*").alias("n"), F.sum(F.length("body")).alias("b")).collect()[0]
    return int(row["n"]), pc() - t0


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
    return sum(p["numInputRows"] for p in query.recentProgress), seconds


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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1_000_000, help="messages (default 1,000,000)")
    ap.add_argument("--body-bytes", type=int, default=64)
    ap.add_argument("--partitions", type=int, default=16)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--idle-seconds", type=float, default=0.5)
    ap.add_argument("--url", help="an existing server (default: a private redis-server)")
    ap.add_argument("--no-save", action="store_true", help="do not write bench/results/spark.json")
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
    tag = f"bench-{uuid.uuid4().hex[:8]}"
    work = Path(tempfile.mkdtemp(prefix="sbredis-bench-spark-"))
    info = machine()
    rows: list[dict[str, Any]] = []
    try:
        t0 = pc()
        paths = make_input(work, args.n, args.body_bytes)
        print(f"input: {args.n} rows of {args.body_bytes} B bodies in {len(paths)} Parquet files ({pc() - t0:.1f} s)")
        admin = ServiceBusAdministrationClient.from_connection_string(url)
        qc, qs, qw = f"{tag}-client", f"{tag}-spark", f"{tag}-warmup"
        qs2 = f"{tag}-stream"
        for q in (qc, qs, qw, qs2):
            admin.create_queue(
                q, enable_partitioning=True, partition_count=args.partitions, max_size_in_megabytes=81920
            )

        n, s = client_send(url, qc, paths)
        rows.append({"operation": "client send (1 process)", "messages": n, "seconds": s})
        print(f"client send: {n} in {s:.1f} s")
        assert active(admin, qc) == args.n
        n, s = client_consume(url, qc)
        rows.append({"operation": "client receive+complete (1 process)", "messages": n, "seconds": s})
        print(f"client consume: {n} in {s:.1f} s")

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
        startup = pc() - t0
        t0 = pc()
        bulk_load(spark, url, qw, paths[:1], limit=1000)  # starts the Python workers
        spark_read(spark, url, qw)  # the data source's planning and read paths, too
        consume(spark, url, qw, "builtins:id", idle_seconds=0.1)
        warmup = pc() - t0
        print(f"spark session: {startup:.1f} s, warm-up jobs: {warmup:.1f} s")
        try:
            summary = bulk_load(spark, url, qs, paths)
            rows.append({"operation": "spark bulk_load", "messages": summary.messages, "seconds": summary.seconds})
            print(summary.line())
            assert active(admin, qs) == args.n
            n, s = plain_xrange(url, qs, args.partitions)
            rows.append({"operation": "plain redis-py XRANGE (1 process)", "messages": n, "seconds": s})
            n, s = spark_read(spark, url, qs)
            rows.append({"operation": "spark batch read", "messages": n, "seconds": s})
            n, s = spark_stream(spark, url, qs, "peek", work)
            rows.append({"operation": "spark stream (mode peek)", "messages": n, "seconds": s})
            for r in rows[-3:]:
                print(f"{r['operation']}: {r['messages']} in {r['seconds']:.1f} s")
            summary = consume(spark, url, qs, "builtins:id", batch_size=RECEIVE_BATCH, idle_seconds=args.idle_seconds)
            rows.append({"operation": "spark consume", "messages": summary.messages, "seconds": summary.seconds})
            print(summary.line())
            bulk_load(spark, url, qs2, paths)
            n, s = spark_stream(spark, url, qs2, "consume", work)
            rows.append({"operation": "spark stream (mode consume)", "messages": n, "seconds": s})
            print(f"spark stream consume: {n} in {s:.1f} s")
            assert active(admin, qs2) == 0
        finally:
            spark.stop()
        for q in (qc, qs, qw, qs2):
            admin.delete_queue(q)
        admin.close()
    finally:
        if server is not None:
            server.stop()
        import shutil

        shutil.rmtree(work, ignore_errors=True)

    for r in rows:
        r["rate"] = r["messages"] / r["seconds"]
    base = {"send": rows[0]["rate"], "consume": rows[1]["rate"]}
    xrange_rate = next((r["rate"] for r in rows if "XRANGE" in r["operation"]), 0.0)
    for r in rows:
        op = r["operation"]
        if "read" in op or "peek" in op:
            r["vs_client"] = r["rate"] / xrange_rate if xrange_rate else 0.0  # vs plain XRANGE
        else:
            r["vs_client"] = r["rate"] / (base["consume"] if "consume" in op or "receive" in op else base["send"])
    head = f"{'operation':<38} | {'messages':>9} | {'seconds':>8} | {'msgs/s':>9} | vs client (reads: vs XRANGE)"
    print()
    print(head)
    print("-" * len(head))
    for r in rows:
        print(
            f"{r['operation']:<38} | {r['messages']:>9} | {r['seconds']:>8.2f} | {r['rate']:>9,.0f} | "
            f"{r['vs_client']:.2f}x"
        )
    print(
        f"N={args.n}, {args.body_bytes} B bodies, {args.partitions} partitions, master {args.master}, "
        f"spark session start {startup:.1f} s and warm-up jobs {warmup:.1f} s (not included); "
        f"machine {info['cpus']} cpus, load at start "
        f"{info['loadavg_at_start']}"
    )
    if not args.no_save:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(
            json.dumps(
                {
                    "n": args.n,
                    "body_bytes": args.body_bytes,
                    "partitions": args.partitions,
                    "master": args.master,
                    "idle_seconds": args.idle_seconds,
                    "spark_session_start_seconds": round(startup, 2),
                    "spark_warmup_jobs_seconds": round(warmup, 2),
                    "rows": rows,
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
