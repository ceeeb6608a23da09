"""dlq_export and dlq_resubmit restricted to some dead letters: a SQL condition, an age, exports
appended to an earlier one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sbredis import ServiceBusMessage
from sbredis.spark._dlq import export, resubmit
from tests.spark.test_spark_jobs import _dead_letter_all, peek_all

pytestmark = pytest.mark.spark


@pytest.fixture()
def dead_lettered(make_queue: Any, client: Any) -> str:
    q = make_queue(enable_partitioning=True, partition_count=2)
    reasons = {b"a1": "A", b"a2": "A", b"b1": "B", b"b2": "B"}
    with client.get_queue_sender(q) as sender:
        sender.send_messages([ServiceBusMessage(b, message_id=b.decode()) for b in reasons])
    _dead_letter_all(client, q, reasons)
    return q


def test_export_appends_the_rows_matching_a_condition(spark: Any, url: str, dead_lettered: str, tmp_path: Path) -> None:
    out = str(tmp_path / "dlq.parquet")
    first = export(spark, url, dead_lettered, out, mode="append", where="deadLetterReason = 'B'")  # no export yet
    assert first.messages == 2
    second = export(spark, url, dead_lettered, out, mode="append", where="messageId = 'a1'")
    assert second.messages == 1
    got = sorted(r.messageId for r in spark.read.parquet(out).select("messageId").collect())
    assert got == ["a1", "b1", "b2"]


def test_resubmit_only_what_is_old_enough_and_matches(spark: Any, url: str, dead_lettered: str, client: Any) -> None:
    too_young = resubmit(spark, url, dead_lettered, older_than=3600)
    assert (too_young.messages, too_young.counts) == (0, {"selected": 0})
    done = resubmit(spark, url, dead_lettered, older_than=0.001, where="messageId IN ('a2', 'b1')")
    assert (done.messages, done.counts["selected"]) == (2, 2)
    assert sorted(m.body_bytes for m in peek_all(client, dead_lettered)) == [b"a2", b"b1"]
    assert sorted(m.body_bytes for m in peek_all(client, dead_lettered, dead_letter=True)) == [b"a1", b"b2"]


def test_large_dead_letters_are_resubmitted_in_batches_within_the_size_limit(
    spark: Any, url: str, make_queue: Any, client: Any
) -> None:
    q = make_queue()  # 256 KB per message or batch: three messages of 100 KB need two sends
    bodies = {f"big-{i}".encode() + b"x" * 100_000: "Big" for i in range(3)}
    with client.get_queue_sender(q) as sender:
        for body in bodies:
            sender.send_messages(ServiceBusMessage(body))
    _dead_letter_all(client, q, bodies)
    done = resubmit(spark, url, q, reason="Big")
    assert (done.messages, done.counts["selected"]) == (3, 3)
    assert sorted(m.body_bytes for m in peek_all(client, q)) == sorted(bodies)
    assert peek_all(client, q, dead_letter=True) == []
