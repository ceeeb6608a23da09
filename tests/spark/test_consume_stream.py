"""Streaming in mode 'consume': peek-lock per micro-batch, completed when Spark commits the batch."""

from __future__ import annotations

import json
import threading
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from pyspark.errors import StreamingQueryException

from sbredis import ServiceBusMessage
from tests.conftest import eventually

pytestmark = pytest.mark.spark


def consuming(spark: Any, url: str, entity: str, **options: str) -> Any:
    r = spark.readStream.format("sbredis").option("url", url).option("entity", entity).option("mode", "consume")
    for k, v in options.items():
        r = r.option(k, v)
    return r.load()


def send(client: Any, q: str, bodies: list[str]) -> None:
    with client.get_queue_sender(q) as s:
        s.send_messages([ServiceBusMessage(b, message_id=b) for b in bodies])


def counts(admin: Any, q: str) -> tuple[int, int]:
    p = admin.get_queue_runtime_properties(q)
    return p.active_message_count, p.dead_letter_message_count


def run(df: Any, checkpoint: Path, on_batch: Any, timeout: float = 120) -> Any:
    query = (
        df.writeStream.foreachBatch(on_batch)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    try:
        query.awaitTermination(timeout)
    except StreamingQueryException:
        pass  # the caller looks at query.exception()
    return query


def test_consumes_the_queue_beside_a_competing_receiver(
    spark: Any, url: str, make_queue: Any, client: Any, admin: Any, tmp_path: Path
) -> None:
    q = make_queue(enable_partitioning=True, partition_count=4, lock_duration=timedelta(seconds=2))
    bodies = [f"m{i:03d}" for i in range(400)]
    send(client, q, bodies)
    theirs: list[str] = []
    stop = threading.Event()

    def compete() -> None:
        with client.get_queue_receiver(q) as r:
            while not stop.is_set():
                got = r.receive_messages(2, max_wait_time=0.2)
                theirs.extend(m.body_bytes.decode() for m in got)
                if got:
                    r.complete_messages(got)
                time.sleep(0.1)

    other = threading.Thread(target=compete)
    ours: list[str] = []
    sizes: list[int] = []

    def collect(batch: Any, batch_id: int) -> None:
        rows = [r.body.decode() for r in batch.select("body").collect()]
        sizes.append(len(rows))
        ours.extend(rows)
        if not other.is_alive() and not stop.is_set():  # compete from the first batch on
            other.start()

    try:
        query = run(consuming(spark, url, q, maxOffsetsPerTrigger="100"), tmp_path / "ckpt", collect)
        assert query.exception() is None
    finally:
        stop.set()
        if other.is_alive():
            other.join()
    assert sorted(ours + theirs) == bodies  # every message once: nothing missed, nothing twice
    assert ours and theirs and max(sizes) <= 100 and len([s for s in sizes if s]) >= 3
    assert eventually(lambda: counts(admin, q) == (0, 0), timeout=10)  # all completed, none left locked


class BoomError(Exception):
    pass


def failing(batch: Any, batch_id: int) -> None:
    if batch.count():
        raise BoomError("the sink failed")


def test_a_failed_batch_comes_back_with_its_delivery_counted(
    spark: Any, url: str, make_queue: Any, client: Any, admin: Any, tmp_path: Path
) -> None:
    q = make_queue(enable_partitioning=True, partition_count=2, lock_duration=timedelta(seconds=1))
    bodies = [f"f{i:02d}" for i in range(20)]
    send(client, q, bodies)
    df = consuming(spark, url, q, receiveWaitSeconds="3")
    query = run(df, tmp_path / "ckpt", failing)
    assert query.exception() is not None and "the sink failed" in str(query.exception())
    assert counts(admin, q) == (20, 0)  # nothing completed
    time.sleep(1.5)  # the 1 s locks elapse: nothing renews them once the query is gone

    seen: list[tuple[str, int]] = []

    def collect(batch: Any, batch_id: int) -> None:
        seen.extend((r.body.decode(), r.deliveryCount) for r in batch.select("body", "deliveryCount").collect())

    query = run(df, tmp_path / "ckpt", collect)  # the same checkpoint: the failed batch again
    assert query.exception() is None
    assert sorted(seen) == [(b, 1) for b in bodies]  # one delivery before this one
    assert eventually(lambda: counts(admin, q) == (0, 0), timeout=10)


def test_kill_and_restart_with_a_sink_idempotent_by_batch_id_is_exactly_once(
    spark: Any, url: str, make_queue: Any, client: Any, admin: Any, tmp_path: Path
) -> None:
    q = make_queue(enable_partitioning=True, partition_count=4, lock_duration=timedelta(seconds=2))
    bodies = [f"k{i:03d}" for i in range(300)]
    send(client, q, bodies)
    out = tmp_path / "out"

    def write(batch: Any, batch_id: int, die_at: int | None = None) -> None:
        # one folder per batch id, overwritten when Spark runs that batch again
        batch.select("body", "messageId").write.mode("overwrite").parquet(str(out / f"batch={batch_id}"))
        if batch_id == die_at:
            raise BoomError("killed after the sink wrote, before Spark committed")

    df = consuming(spark, url, q, maxMessagesPerTrigger="100")
    query = run(df, tmp_path / "ckpt", lambda b, i: write(b, i, die_at=1))
    assert query.exception() is not None
    query = run(df, tmp_path / "ckpt", write)
    assert query.exception() is None
    got = sorted(r.messageId for r in spark.read.parquet(str(out)).select("messageId").collect())
    assert got == bodies  # nothing lost, nothing twice
    assert eventually(lambda: counts(admin, q) == (0, 0), timeout=10)


def test_dead_lettered_after_the_maximum_delivery_count(
    spark: Any, url: str, make_queue: Any, client: Any, admin: Any, tmp_path: Path
) -> None:
    q = make_queue(max_delivery_count=2, lock_duration=timedelta(seconds=1))
    send(client, q, ["d0", "d1", "d2"])
    df = consuming(spark, url, q, receiveWaitSeconds="3")
    for _ in range(2):
        assert run(df, tmp_path / "ckpt", failing).exception() is not None
        time.sleep(1.2)  # the 1 s locks elapse: the next run gets the messages again
    from sbredis import ServiceBusSubQueue

    dead: list[Any] = []
    with client.get_queue_receiver(q, sub_queue=ServiceBusSubQueue.DEAD_LETTER) as r:
        eventually(lambda: dead.extend(r.receive_messages(10, max_wait_time=0.2)) or len(dead) == 3, timeout=10)
    assert sorted(m.body_bytes for m in dead) == [b"d0", b"d1", b"d2"]
    assert {m.dead_letter_reason for m in dead} == {"MaxDeliveryCountExceeded"}


def test_progress_shows_the_backlog_and_a_checkpoint_stays_with_its_entity(
    spark: Any, url: str, make_queue: Any, client: Any, admin: Any, tmp_path: Path
) -> None:
    q = make_queue(enable_partitioning=True, partition_count=2)
    send(client, q, [f"p{i}" for i in range(30)])
    query = run(consuming(spark, url, q, maxOffsetsPerTrigger="10"), tmp_path / "ckpt", lambda b, i: b.count())
    assert query.exception() is None
    first = next(p for p in query.recentProgress if p.numInputRows)
    latest = json.loads(first.sources[0].latestOffset)
    assert latest["entity"] == q and latest["activeMessages"] == 30  # the backlog when the batch was planned
    from sbredis.spark import lag

    assert lag(first) == [{"entity": q, "activeMessagesBehindLatest": 30}]
    assert counts(admin, q) == (0, 0)

    other = q + "-other"
    admin.create_queue(other)
    query = run(consuming(spark, url, other), tmp_path / "ckpt", lambda b, i: b.count())
    assert f"this checkpoint belongs to entity '{q}'" in str(query.exception())
