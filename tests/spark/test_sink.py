"""The batch sink: rows become messages; duplicates dropped on retry; bad rows fail or are rejected."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from sbredis import ServiceBusMessage

pytestmark = pytest.mark.spark


def writer(df: Any, url: str, entity: str, **options: str) -> Any:
    w = df.write.format("sbredis").option("url", url).option("entity", entity).mode("append")
    for k, v in options.items():
        w = w.option(k, v)
    return w


def drain(client: Any, q: str) -> list[Any]:
    out: list[Any] = []
    with client.get_queue_receiver(q, max_wait_time=0.5) as r:
        while True:
            got = r.receive_messages(100, max_wait_time=0.5)
            if not got:
                return out
            r.complete_messages(got)
            out += got


def test_rows_become_messages_with_their_properties(spark: Any, url: str, make_queue: Any, client: Any) -> None:
    q = make_queue(enable_partitioning=True, partition_count=2)
    later = datetime.now(UTC) + timedelta(hours=1)
    df = spark.createDataFrame(
        [
            ("plain", None, None, None, None, None, None, None, None),
            ("full", "id-1", "pk", {"n": "1"}, 60.0, None, "text/plain", "corr", "subj"),
            ("sched", "id-2", None, None, None, later, None, None, None),
        ],
        "body STRING, messageId STRING, partitionKey STRING, applicationProperties MAP<STRING,STRING>, "
        "timeToLive DOUBLE, scheduledEnqueueTime TIMESTAMP, contentType STRING, correlationId STRING, "
        "subject STRING",
    )
    writer(df, url, q).save()
    got = {m.body_bytes: m for m in drain(client, q)}
    assert set(got) == {b"plain", b"full"}  # the scheduled one is not due yet
    full = got[b"full"]
    assert (full.message_id, full.partition_key, full.content_type, full.correlation_id, full.subject) == (
        "id-1",
        "pk",
        "text/plain",
        "corr",
        "subj",
    )
    assert full.sent_application_properties == {"n": "1"}
    assert full.expires_at_utc - full.enqueued_time_utc == timedelta(seconds=60)
    with client.get_queue_receiver(q) as r:
        (sched,) = [m for m in r.peek_messages(10, sequence_number=1) if m.message_id == "id-2"]
        assert abs(sched.enqueued_time_utc - later) < timedelta(milliseconds=2)


def test_a_failed_write_redone_adds_no_duplicates(spark: Any, url: str, make_queue: Any, tmp_path: Path) -> None:
    q = make_queue(enable_partitioning=True, partition_count=2, requires_duplicate_detection=True)
    rows = [(f"b{i}", f"id-{i}") for i in range(10)]
    good = spark.createDataFrame(rows, "body STRING, messageId STRING").coalesce(1)
    bad = spark.createDataFrame([*rows, (None, "id-bad")], "body STRING, messageId STRING").coalesce(1)
    with pytest.raises(Exception, match=r"row 10 of Spark partition 0 \(messageId='id-bad'\).*body is null"):
        writer(bad, url, q, sendBatchSize="3").save()  # 9 rows were stored before the task failed
    report = tmp_path / "report.json"
    writer(good, url, q, reportPath=str(report)).save()  # the retry
    assert json.loads(report.read_text()) == {"sent": 1, "duplicates": 9, "rejected": 0, "tasks": 1}
    counts = spark.read.format("sbredis").option("url", url).option("entity", q).load().count()
    assert counts == 10


def test_bad_rows_go_to_the_reject_path_when_asked(
    spark: Any, url: str, make_queue: Any, client: Any, tmp_path: Path
) -> None:
    q = make_queue(max_message_size_in_kilobytes=1)
    df = spark.createDataFrame(
        [("ok", "a"), (None, "no-body"), ("x" * 2000, "too-big"), ("fine", "b" * 200)],
        "body STRING, messageId STRING",
    ).coalesce(1)
    with pytest.raises(Exception, match=r"row 1 of Spark partition 0 \(messageId='no-body'\)"):
        writer(df, url, q).save()
    rejects, report = tmp_path / "rejects", tmp_path / "report.json"
    writer(df, url, q, rejectPath=str(rejects), reportPath=str(report)).save()
    records = [json.loads(line) for f in sorted(rejects.glob("*.jsonl")) for line in f.read_text().splitlines()]
    reasons = {r["columns"]["messageId"][:7]: r["error"] for r in records}
    assert set(reasons) == {"no-body", "too-big", "bbbbbbb"}
    assert reasons["no-body"] == "body is null"
    assert "over the maximum of 1024 bytes" in reasons["too-big"]
    assert "longer than 128" in reasons["bbbbbbb"]
    assert json.loads(report.read_text())["rejected"] == 3
    assert [m.body_bytes for m in drain(client, q)] == [b"ok"]


def test_writes_that_cannot_work_are_refused_before_sending(spark: Any, url: str, make_queue: Any) -> None:
    q = make_queue()
    df = spark.createDataFrame([("a", "x")], "body STRING, mesageId STRING")
    with pytest.raises(Exception, match=r"unknown column.*mesageId"):
        writer(df, url, q).save()
    ok = spark.createDataFrame([("a",)], "body STRING")
    with pytest.raises(Exception, match="cannot be overwritten"):
        writer(ok, url, q).mode("overwrite").save()
    with pytest.raises(Exception, match="dead-letter"):
        writer(ok, url, q, subQueue="deadletter").save()
    with pytest.raises(Exception, match="needs a 'body' column"):
        writer(spark.createDataFrame([("a",)], "text STRING"), url, q).save()


def test_streaming_sink_is_exactly_once_when_spark_runs_a_batch_again(
    spark: Any, url: str, make_queue: Any, client: Any, admin: Any, tmp_path: Path
) -> None:
    src = make_queue()
    dst = src + "-dst"
    admin.create_queue(dst, requires_duplicate_detection=True)
    with client.get_queue_sender(src) as s:
        s.send_messages([ServiceBusMessage(f"r{i}") for i in range(50)])  # no message ids

    def copy() -> None:
        query = (
            spark.readStream.format("sbredis")
            .option("url", url)
            .option("entity", src)
            .option("startingOffsets", "earliest")
            .load()
            .select("body")
            .writeStream.format("sbredis")
            .option("url", url)
            .option("entity", dst)
            .option("checkpointLocation", str(tmp_path / "ckpt"))
            .trigger(availableNow=True)
            .start()
        )
        assert query.awaitTermination(120)

    copy()
    for marker in (tmp_path / "ckpt" / "commits").iterdir():
        marker.unlink()  # as if the query died after the sink wrote, before Spark recorded the commit
    copy()  # Spark runs batch 0 again: the same rows, the same derived message ids
    assert admin.get_queue_runtime_properties(dst).active_message_count == 50

    plain = src + "-plain"
    admin.create_queue(plain)
    with pytest.raises(Exception, match="has no duplicate detection"):
        spark.readStream.format("sbredis").option("url", url).option("entity", src).load().select(
            "body"
        ).writeStream.format("sbredis").option("url", url).option("entity", plain).option(
            "checkpointLocation", str(tmp_path / "c2")
        ).start().awaitTermination(60)
