"""Streaming in mode 'consume' from a subscription's dead-letter subqueue, and a checkpoint of a
peek query refused by a consuming one."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from sbredis import ServiceBusMessage, ServiceBusSubQueue
from tests.spark.test_consume_stream import consuming, run

pytestmark = pytest.mark.spark


def test_consumes_the_dead_letters_of_a_subscription(
    spark: Any, url: str, admin: Any, client: Any, tmp_path: Path
) -> None:
    topic = f"ct-{time.time_ns()}"
    admin.create_topic(topic)
    admin.create_subscription(topic, "audit")
    try:
        with client.get_topic_sender(topic) as s:
            s.send_messages([ServiceBusMessage(f"d{i}") for i in range(3)])
        with client.get_subscription_receiver(topic, "audit", max_wait_time=1) as r:
            got: list[Any] = []
            while len(got) < 3:
                got += r.receive_messages(3 - len(got), max_wait_time=1)
            r.dead_letter_messages(got, reason="Audit", error_description="held for review")
        rows: list[tuple[bytes, str]] = []

        def collect(batch: Any, batch_id: int) -> None:
            rows.extend((bytes(r.body), r.deadLetterReason) for r in batch.collect())

        df = consuming(spark, url, f"{topic}/Subscriptions/audit", subQueue="deadletter")
        query = run(df, tmp_path / "ckpt", collect)
        assert query.exception() is None
        assert sorted(rows) == [(b"d0", "Audit"), (b"d1", "Audit"), (b"d2", "Audit")]
        props = admin.get_subscription_runtime_properties(topic, "audit")
        assert (props.active_message_count, props.dead_letter_message_count) == (0, 0)
        with client.get_subscription_receiver(topic, "audit", sub_queue=ServiceBusSubQueue.DEAD_LETTER) as dlq:
            assert dlq.peek_messages(10) == []
    finally:
        admin.delete_topic(topic)


def test_a_peek_query_checkpoint_is_refused_by_a_consuming_query(
    spark: Any, url: str, make_queue: Any, client: Any, admin: Any, tmp_path: Path
) -> None:
    q = make_queue()
    with client.get_queue_sender(q) as s:
        s.send_messages(ServiceBusMessage("kept"))
    peek = spark.readStream.format("sbredis").option("url", url).option("entity", q).load()
    assert run(peek, tmp_path / "ckpt", lambda batch, batch_id: None).exception() is None
    query = run(consuming(spark, url, q), tmp_path / "ckpt", lambda batch, batch_id: None)
    assert "written by a query in mode 'peek'; a consuming query needs its own checkpointLocation" in str(
        query.exception()
    )
    assert admin.get_queue_runtime_properties(q).active_message_count == 1  # nothing taken
