"""Batch reads: registration, the snapshot's columns and partitions, offsets, the dead-letter subqueue."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from sbredis import ServiceBusMessage, ServiceBusSubQueue
from sbredis._core.ops import partition_of

pytestmark = pytest.mark.spark


def read(spark: Any, url: str, entity: str, **options: str) -> Any:
    r = spark.read.format("sbredis").option("url", url).option("entity", entity)
    for k, v in options.items():
        r = r.option(k, v)
    return r.load()


def test_format_sbredis_resolves_without_a_register_call(spark: Any, url: str, make_queue: Any, client: Any) -> None:
    # This file runs first: nothing has called sbredis.spark.register yet, so the name comes from
    # PySpark's static lookup of pyspark_* modules (pyspark_sbredis).
    q = make_queue()
    with client.get_queue_sender(q) as s:
        s.send_messages(ServiceBusMessage("hello"))
    rows = read(spark, url, q).select("body").collect()
    assert [bytes(r.body) for r in rows] == [b"hello"]
    jvm = spark.sparkContext._jvm
    found = jvm.org.apache.spark.sql.execution.datasources.v2.python.UserDefinedPythonDataSource
    assert "sbredis" in list(found.lookupAllDataSourcesInPython().names())


def test_register_is_idempotent(spark: Any, url: str, make_queue: Any) -> None:
    import sbredis.spark

    q = make_queue()
    sbredis.spark.register(spark)
    sbredis.spark.register(spark)
    assert read(spark, url, q).count() == 0


def test_snapshot_has_one_spark_partition_per_broker_partition_and_changes_nothing(
    spark: Any, url: str, make_queue: Any, client: Any, admin: Any
) -> None:
    q = make_queue(enable_partitioning=True, partition_count=3, dead_lettering_on_message_expiration=True)
    future = datetime.now(UTC) + timedelta(hours=1)
    with client.get_queue_sender(q) as s:
        s.send_messages(
            ServiceBusMessage(
                b"\x00\x01",
                message_id="m-1",
                partition_key="k",
                correlation_id="c-1",
                subject="greeting",
                content_type="application/octet-stream",
                application_properties={"n": 7, "flag": True, "name": "x"},
                time_to_live=timedelta(minutes=5),
            )
        )
        s.send_messages([ServiceBusMessage(f"b{i}") for i in range(6)])
        s.schedule_messages(ServiceBusMessage("later", message_id="sched"), future)
    with client.get_queue_receiver(q, max_wait_time=2) as r:
        deferred = None
        while deferred is None:
            for m in r.receive_messages(10, max_wait_time=2):
                if m.body_bytes == b"b0":
                    r.defer_message(m)
                    deferred = m.sequence_number
                else:
                    r.abandon_message(m)
    before = admin.get_queue_runtime_properties(q)

    df = read(spark, url, q, minOffsetsPerTask="1")
    rows = df.collect()
    assert len(rows) == 8
    # one task per broker partition that holds messages (where the sends landed is the client's choice)
    assert df.rdd.getNumPartitions() == len({r.partition for r in rows})
    by_id = {r.messageId: r for r in rows}
    m = by_id["m-1"]
    assert bytes(m.body) == b"\x00\x01"
    assert (m.entity, m.partitionKey, m.correlationId, m.subject) == (q, "k", "c-1", "greeting")
    assert m.contentType == "application/octet-stream"
    assert m.applicationProperties == {"n": "7", "flag": "true", "name": "x"}
    assert m.sequenceNumber == (m.partition << 40) | m.offset
    assert m.expiresAt - m.enqueuedTime == timedelta(minutes=5)
    assert by_id["sched"].state == "scheduled"
    states = {r.sequenceNumber: r.state for r in rows}
    assert states[deferred] == "deferred"
    assert sorted(states.values()).count("active") == 6
    assert all(r.deliveryCount >= 0 and r.deadLetterReason is None for r in rows)

    after = admin.get_queue_runtime_properties(q)
    assert (after.active_message_count, after.scheduled_message_count) == (
        before.active_message_count,
        before.scheduled_message_count,
    )
    with client.get_queue_receiver(q, max_wait_time=1) as r:
        got = r.receive_messages(20, max_wait_time=1)
        assert len(got) == 6  # the active ones; nothing was locked or removed by the read


def test_small_partitions_are_packed_into_one_task_with_the_same_rows(
    spark: Any, url: str, make_queue: Any, client: Any
) -> None:
    q = make_queue(enable_partitioning=True, partition_count=4)
    with client.get_queue_sender(q) as s:
        for i in range(40):  # one send each: they spread over the partitions
            s.send_messages(ServiceBusMessage(f"b{i}", message_id=f"m-{i}"))
    packed = read(spark, url, q, pageSize="3")  # default minOffsetsPerTask: every partition in one task
    assert packed.rdd.getNumPartitions() == 1
    rows = packed.collect()
    assert sorted(r.messageId for r in rows) == sorted(f"m-{i}" for i in range(40))
    assert len({r.partition for r in rows}) > 1
    one_each = read(spark, url, q, minOffsetsPerTask="1")
    assert one_each.rdd.getNumPartitions() == 4
    assert sorted((r.partition, r.offset) for r in one_each.collect()) == sorted((r.partition, r.offset) for r in rows)


def test_pack_groups_consecutive_partitions_until_the_minimum() -> None:
    from sbredis.spark._source import pack

    got = pack([(0, 1, 11), (1, 1, 1), (2, 5, 30), (3, 1, 4)], 20)
    assert [r.ranges for r in got] == [[(0, 1, 11), (2, 5, 30)], [(3, 1, 4)]]  # the empty one left out
    assert [r.ranges for r in pack([(0, 1, 5), (1, 1, 5)], 1)] == [[(0, 1, 5)], [(1, 1, 5)]]
    assert [r.ranges for r in pack([(0, 7, 7), (1, 3, 3)], 20)] == [[(0, 7, 7)]]  # nothing to read: one task


def test_starting_and_ending_offsets(spark: Any, url: str, make_queue: Any, client: Any) -> None:
    q = make_queue(enable_partitioning=True, partition_count=2)
    with client.get_queue_sender(q) as s:
        for i in range(6):
            s.send_messages(ServiceBusMessage(f"a{i}", partition_key="a"))  # all in one partition
    p = partition_of("a", 2)
    rows = read(spark, url, q, startingOffsets=f'{{"{p}": 3}}', endingOffsets=f'{{"{p}": 5, "{1 - p}": -1}}').collect()
    assert [(r.partition, r.offset, bytes(r.body)) for r in rows] == [(p, 3, b"a2"), (p, 4, b"a3")]
    with pytest.raises(Exception, match=rf"endingOffsets leaves out partition\(s\) \[{1 - p}\]"):
        read(spark, url, q, startingOffsets=f'{{"{p}": 3}}', endingOffsets=f'{{"{p}": 5}}').collect()
    rows = read(
        spark, url, q, startingOffsets=f'{{"{p}": 3}}', endingOffsets=f'{{"{p}": 5}}', partialEndingOffsets="latest"
    ).collect()
    assert len(rows) == 2
    rows = read(spark, url, q, startingOffsets=f'{{"{q}": {{"{p}": 6}}}}').collect()  # Kafka's nesting
    assert [bytes(r.body) for r in rows] == [b"a5"]
    assert read(spark, url, q, startingOffsets="latest").count() == 0
    with pytest.raises(Exception, match="startingOffsets"):
        read(spark, url, q, startingOffsets="yesterday").collect()
    with pytest.raises(Exception, match=r"partition\(s\) \[7\]"):
        read(spark, url, q, startingOffsets='{"7": 1}').collect()


def test_dead_letter_subqueue(spark: Any, url: str, make_queue: Any, client: Any) -> None:
    q = make_queue()
    with client.get_queue_sender(q) as s:
        s.send_messages([ServiceBusMessage("ok"), ServiceBusMessage("poison", message_id="p")])
    with client.get_queue_receiver(q, max_wait_time=2) as r:
        for m in r.receive_messages(2, max_wait_time=2):
            if m.body_bytes == b"poison":
                r.dead_letter_message(m, reason="Bad", error_description="cannot parse")
            else:
                r.abandon_message(m)
    rows = read(spark, url, q, subQueue="deadletter").collect()
    assert [(r.messageId, r.deadLetterReason, r.deadLetterErrorDescription, r.deliveryCount) for r in rows] == [
        ("p", "Bad", "cannot parse", 0)
    ]
    with client.get_queue_receiver(q, sub_queue=ServiceBusSubQueue.DEAD_LETTER) as dlq:
        assert len(dlq.peek_messages(5)) == 1  # still there


def test_missing_entities_and_options_are_refused_clearly(spark: Any, url: str) -> None:
    with pytest.raises(Exception, match="was not found"):
        read(spark, url, "no-such-queue").collect()
    with pytest.raises(Exception, match="'url' is required"):
        spark.read.format("sbredis").option("entity", "x").load()


def test_unknown_options_are_refused(spark: Any, url: str, make_queue: Any) -> None:
    q = make_queue()
    with pytest.raises(Exception, match=r"unknown option\(s\) kafka.bootstrap.servers"):
        read(spark, url, q, **{"kafka.bootstrap.servers": "x"}).collect()
    with pytest.raises(Exception, match="unknown option"):
        spark.readStream.format("sbredis").option("url", url).option("entity", q).option(
            "maxFilesPerTrigger", "1"
        ).load()


def test_a_schema_of_some_columns_and_pushed_filters(spark: Any, url: str, make_queue: Any, client: Any) -> None:
    q = make_queue(enable_partitioning=True, partition_count=2)
    with client.get_queue_sender(q) as s:
        for i in range(8):
            s.send_messages(ServiceBusMessage(f"b{i}", message_id=f"id{i}", partition_key=f"k{i % 2}"))
    df = spark.read.format("sbredis").schema("body binary, messageId string").option("url", url).option("entity", q)
    rows = df.load().collect()
    assert sorted((bytes(r.body), r.messageId) for r in rows) == [(f"b{i}".encode(), f"id{i}") for i in range(8)]
    p = partition_of("k0", 2)
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    try:
        pushed = read(spark, url, q, filterPushdown="true")
        narrowed = pushed.where(f"partition = {p} and offset >= 2 and offset < 4")
        assert sorted((r.partition, r.offset) for r in narrowed.collect()) == [(p, 2), (p, 3)]
        seq = pushed.where(f"sequenceNumber > {(p << 40) + 3}").select("partition", "offset").collect()
        everything = [(r.partition, r.offset) for r in read(spark, url, q).collect()]
        assert sorted((r.partition, r.offset) for r in seq) == sorted(x for x in everything if x[0] == p and x[1] >= 4)
    finally:
        spark.conf.unset("spark.sql.python.filterPushdown.enabled")
