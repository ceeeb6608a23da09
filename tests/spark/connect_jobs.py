"""Run by test_connect.py in a process of its own: every job of spark_jobs/, a consuming stream
and the documentation's Spark samples over Spark Connect (a local Connect server, local[2]).

    python -m tests.spark.connect_jobs <redis url> <scratch dir>

Exits non-zero, with the failing assertion, when something does not work as on classic Spark.
"""

from __future__ import annotations

import os
import sys
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import redis

from sbredis import ServiceBusClient, ServiceBusMessage
from sbredis.management import ServiceBusAdministrationClient
from sbredis.spark._bulk import bulk_load
from sbredis.spark._consume import consume
from sbredis.spark._dlq import export, resubmit
from sbredis.spark._jobs import is_connect, session
from sbredis.spark._report import report
from tests.docs import samples
from tests.spark.handlers import handled


def main(url: str, scratch: Path) -> None:
    spark = session("sbredis-connect-tests", remote="local[2]")
    assert is_connect(spark)
    q = "connect-" + uuid.uuid4().hex[:8]
    with ServiceBusAdministrationClient.from_connection_string(url) as admin:
        admin.create_queue(q, enable_partitioning=True, partition_count=2, max_delivery_count=1)
    rows = scratch / "in.parquet"
    pq.write_table(pa.table({"body": [f"b{i}".encode() for i in range(30)]}), rows)
    assert bulk_load(spark, url, q, [str(rows)]).messages == 30

    s = consume(spark, url, q, "tests.spark.handlers:flaky", batch_size=10, idle_seconds=0.5)
    assert s.messages == 30 and len(handled(url, q)) == 30, s.line()

    with ServiceBusClient.from_connection_string(url) as c, c.get_queue_sender(q) as sender:
        sender.send_messages([ServiceBusMessage("fail-x"), ServiceBusMessage("fail-y")])
    s = consume(spark, url, q, "tests.spark.handlers:flaky", batch_size=10, idle_seconds=0.5)
    assert s.counts["dead_lettered"] == 2, s.line()
    assert export(spark, url, q, str(scratch / "dlq")).messages == 2
    assert resubmit(spark, url, q, reason="HandlerError").messages == 2
    report(spark, url, [q], str(scratch / "report"))
    assert (scratch / "report" / "report.csv").exists()

    stream = spark.readStream.format("sbredis").option("url", url).option("entity", q).option("mode", "consume").load()
    query = stream.writeStream.format("memory").queryName("consumed").trigger(availableNow=True).start()
    query.awaitTermination(120)
    got = sorted(bytes(r.body) for r in spark.sql("select body from consumed").collect())
    assert got == [b"fail-x", b"fail-y"], got

    sample_url = url.rsplit("/", 1)[0] + "/14"
    os.environ["SBREDIS_URL"] = sample_url  # the samples read it, as a user's program would
    raw = redis.Redis.from_url(sample_url)
    for block in samples.runnable(with_tag="spark"):
        raw.flushdb()
        samples.run_chain(block, {"__name__": "__main__", "spark": spark}, {**os.environ, "SBREDIS_URL": sample_url})
    raw.flushdb()
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))
    print("connect: all jobs ran")
