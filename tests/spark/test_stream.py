"""Streaming: reads by offset with maxMessagesPerTrigger and a checkpoint restart; the streaming sink."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from sbredis import ServiceBusMessage

pytestmark = pytest.mark.spark


def stream(spark: Any, url: str, entity: str, **options: str) -> Any:
    r = spark.readStream.format("sbredis").option("url", url).option("entity", entity)
    for k, v in options.items():
        r = r.option(k, v)
    return r.load()


def run_available_now(df: Any, checkpoint: Path) -> list[list[tuple[int, int, bytes]]]:
    """Run the query until it has read what was there when it started; the rows of each batch."""
    batches: list[list[tuple[int, int, bytes]]] = []

    def collect(batch: Any, batch_id: int) -> None:
        batches.append([(r.partition, r.offset, bytes(r.body)) for r in batch.collect()])

    query = (
        df.writeStream.foreachBatch(collect)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(120), "the streaming query did not finish in 120 s"
    assert query.exception() is None
    return batches


def test_offsets_per_trigger_and_restart_from_checkpoint(
    spark: Any, url: str, make_queue: Any, client: Any, tmp_path: Path
) -> None:
    q = make_queue(enable_partitioning=True, partition_count=2)
    with client.get_queue_sender(q) as s:
        for i in range(10):  # one send per message: round robin over the two partitions
            s.send_messages(ServiceBusMessage(f"m{i}"))
    df = stream(spark, url, q, startingOffsets="earliest", maxOffsetsPerTrigger="4")
    first = run_available_now(df, tmp_path / "ckpt")
    assert all(len(b) <= 4 for b in first), [len(b) for b in first]
    rows = [r for b in first for r in b]
    assert sorted(body for _, _, body in rows) == sorted(f"m{i}".encode() for i in range(10))
    assert len({(p, o) for p, o, _ in rows}) == 10 and len(first) >= 3

    with client.get_queue_sender(q) as s:
        for i in range(10, 15):
            s.send_messages(ServiceBusMessage(f"m{i}"))
    again = run_available_now(df, tmp_path / "ckpt")  # the same checkpoint: only what is new
    assert sorted(body for b in again for _, _, body in b) == sorted(f"m{i}".encode() for i in range(10, 15))


def test_streaming_sink_copies_a_queue(spark: Any, url: str, make_queue: Any, client: Any, tmp_path: Path) -> None:
    src = make_queue()
    dst = src + "-copy"
    from sbredis.management import ServiceBusAdministrationClient

    with ServiceBusAdministrationClient.from_connection_string(url) as admin:
        admin.create_queue(dst, requires_duplicate_detection=True)
    with client.get_queue_sender(src) as s:
        s.send_messages([ServiceBusMessage(f"c{i}", message_id=f"id-{i}", subject="s") for i in range(5)])
    query = (
        stream(spark, url, src, startingOffsets="earliest")
        .writeStream.format("sbredis")
        .option("url", url)
        .option("entity", dst)
        .option("checkpointLocation", str(tmp_path / "sink-ckpt"))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(120)
    with client.get_queue_receiver(dst, max_wait_time=1) as r:
        got = r.receive_messages(10, max_wait_time=1)
    assert sorted((m.message_id, m.body_bytes, m.subject) for m in got) == [
        (f"id-{i}", f"c{i}".encode(), "s") for i in range(5)
    ]


def test_checkpoint_names_its_entity_and_progress_reports_the_latest_offsets(
    spark: Any, url: str, make_queue: Any, admin: Any, client: Any, tmp_path: Path
) -> None:
    q = make_queue(enable_partitioning=True, partition_count=2)
    with client.get_queue_sender(q) as s:
        s.send_messages([ServiceBusMessage(f"m{i}") for i in range(4)])
    query = (
        stream(spark, url, q, startingOffsets="earliest")
        .writeStream.format("noop")
        .option("checkpointLocation", str(tmp_path / "ckpt"))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(120)
    progress = [p for p in query.recentProgress if p.numInputRows]
    source = progress[0].sources[0]
    latest = json.loads(source.latestOffset)
    assert latest["entity"] == q and sum(latest["partitions"].values()) == 4 + 2  # next offset per partition
    assert json.loads(source.endOffset)["entity"] == q

    other = q + "-other"
    admin.create_queue(other, enable_partitioning=True, partition_count=2)
    query = (
        stream(spark, url, other)
        .writeStream.format("noop")
        .option("checkpointLocation", str(tmp_path / "ckpt"))  # the first query's checkpoint
        .trigger(availableNow=True)
        .start()
    )
    with pytest.raises(Exception, match=f"this checkpoint belongs to entity '{q}'"):
        query.awaitTermination(120)


def test_lag_under_kafka_metric_names(spark: Any, url: str, make_queue: Any, client: Any, tmp_path: Path) -> None:
    """sbredis.spark.lag: how far each batch ended behind the entity's latest offsets."""
    from sbredis.spark import lag

    q = make_queue(enable_partitioning=True, partition_count=2)
    with client.get_queue_sender(q) as s:
        for i in range(12):  # one send per message: round robin, 6 per partition
            s.send_messages(ServiceBusMessage(f"m{i}"))
    query = (
        stream(spark, url, q, startingOffsets="earliest", maxOffsetsPerTrigger="4")
        .writeStream.format("noop")
        .option("checkpointLocation", str(tmp_path / "ckpt"))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(120)
    progress = [p for p in query.recentProgress if p.numInputRows]
    figures = [lag(p) for p in progress]
    assert all(len(f) == 1 and f[0]["entity"] == q for f in figures)
    behind = [f[0]["offsetsBehindLatest"] for f in figures]
    read = [p.numInputRows for p in progress]
    # each batch takes at most 4; what is left behind shrinks by what was read, to nothing
    assert behind == [12 - sum(read[: i + 1]) for i in range(len(read))], (behind, read)
    last = figures[-1][0]
    assert (last["minOffsetsBehindLatest"], last["maxOffsetsBehindLatest"], last["avgOffsetsBehindLatest"]) == (0, 0, 0)
    first = figures[0][0]
    assert first["minOffsetsBehindLatest"] <= first["avgOffsetsBehindLatest"] <= first["maxOffsetsBehindLatest"]
    assert lag(progress[0].json) == figures[0]  # the progress' JSON gives the same


def test_lag_listener_reports_every_batch(spark: Any, url: str, make_queue: Any, client: Any, tmp_path: Path) -> None:
    """sbredis.spark.lag_listener: a StreamingQueryListener handing each progress' lag to a callback."""
    from sbredis.spark import lag, lag_listener

    q = make_queue(enable_partitioning=True, partition_count=2)
    with client.get_queue_sender(q) as s:
        for i in range(6):
            s.send_messages(ServiceBusMessage(f"m{i}"))
    seen: list[dict[str, Any]] = []
    listener = lag_listener(lambda progress, figures: seen.extend(f for f in figures if f["entity"] == q))
    spark.streams.addListener(listener)
    try:
        query = (
            stream(spark, url, q, startingOffsets="earliest", maxOffsetsPerTrigger="2")
            .writeStream.format("noop")
            .option("checkpointLocation", str(tmp_path / "ckpt"))
            .trigger(availableNow=True)
            .start()
        )
        assert query.awaitTermination(120)
        expected = [f for p in query.recentProgress for f in lag(p)]
        deadline = time.monotonic() + 30  # listener events arrive asynchronously
        while len(seen) < len(expected) and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        spark.streams.removeListener(listener)
    assert seen == expected
    assert seen[-1]["offsetsBehindLatest"] == 0
