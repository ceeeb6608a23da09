"""The jobs of spark_jobs/: consume, dlq_export, dlq_resubmit, bulk_load, report (and one spark-submit)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from sbredis import ServiceBusMessage, ServiceBusSubQueue
from sbredis.spark._bulk import bulk_load
from sbredis.spark._consume import consume
from sbredis.spark._dlq import export, resubmit
from sbredis.spark._report import report
from tests.spark.handlers import handled

pytestmark = pytest.mark.spark
ROOT = Path(__file__).resolve().parents[2]


def send(client: Any, q: str, bodies: list[str], **kwargs: Any) -> None:
    with client.get_queue_sender(q) as s:
        for b in bodies:  # one call each: round robin over the partitions
            s.send_messages(ServiceBusMessage(b, **kwargs))


def peek_all(client: Any, q: str, dead_letter: bool = False) -> list[Any]:
    sub = ServiceBusSubQueue.DEAD_LETTER if dead_letter else None
    with client.get_queue_receiver(q, sub_queue=sub) as r:
        return list(r.peek_messages(1000, sequence_number=1))


def test_consume_completes_abandons_then_dead_letters(spark: Any, url: str, make_queue: Any, client: Any) -> None:
    q = make_queue(enable_partitioning=True, partition_count=3, max_delivery_count=2)
    send(client, q, [f"ok{i}" for i in range(20)] + ["fail-1", "fail-2"])
    s = consume(spark, url, q, "tests.spark.handlers:flaky", batch_size=8, idle_seconds=0.5)
    assert s.messages == 20
    assert (s.counts["completed"], s.counts["abandoned"], s.counts["dead_lettered"]) == (20, 2, 2)
    assert sorted(handled(url, q)) == sorted(f"ok{i}".encode() for i in range(20))
    assert peek_all(client, q) == []
    dead = peek_all(client, q, dead_letter=True)
    assert sorted(m.body_bytes for m in dead) == [b"fail-1", b"fail-2"]
    assert {m.dead_letter_reason for m in dead} == {"HandlerError"}
    assert all("ValueError: cannot handle" in (m.dead_letter_error_description or "") for m in dead)
    assert "consume: 20 messages" in s.line() and "msgs/s" in s.line()


def test_consume_renews_locks_while_a_slow_handler_works(spark: Any, url: str, make_queue: Any, client: Any) -> None:
    q = make_queue(lock_duration=timedelta(seconds=1))
    send(client, q, [f"s{i}" for i in range(5)])  # one batch of 5 x 0.4 s: twice the lock duration
    s = consume(spark, url, q, "tests.spark.handlers:slow", batch_size=5, idle_seconds=0.3)
    assert (s.messages, s.counts["lock_lost"], s.counts["abandoned"]) == (5, 0, 0)  # the locks were renewed
    assert peek_all(client, q) == []


def test_a_killed_worker_loses_nothing(spark: Any, url: str, make_queue: Any, client: Any) -> None:
    q = make_queue(enable_partitioning=True, partition_count=2, lock_duration=timedelta(seconds=1))
    bodies = [f"k{i}" for i in range(9)] + ["crash"]
    send(client, q, bodies)
    with pytest.raises(Exception, match=r"(?i)python worker|crash|exit"):
        consume(spark, url, q, "tests.spark.handlers:crash_once", batch_size=4, idle_seconds=0.3)
    s = consume(spark, url, q, "tests.spark.handlers:crash_once", batch_size=4, idle_seconds=2.5)
    assert set(handled(url, q)) == {b.encode() for b in bodies}  # at least once each
    assert peek_all(client, q) == [] and peek_all(client, q, dead_letter=True) == []
    assert s.counts["handler_errors"] == 0


def _dead_letter_all(client: Any, q: str, reasons: dict[bytes, str]) -> None:
    with client.get_queue_receiver(q, max_wait_time=1) as r:
        left = len(reasons)
        while left:
            for m in r.receive_messages(10, max_wait_time=1):
                r.dead_letter_message(m, reason=reasons[m.body_bytes], error_description="test")
                left -= 1


def test_dlq_export_and_resubmit_remove_only_what_was_stored(
    spark: Any, url: str, make_queue: Any, client: Any, tmp_path: Path
) -> None:
    q = make_queue(enable_partitioning=True, partition_count=2, requires_duplicate_detection=True)
    reasons = {b"a1": "A", b"a2": "A", b"b1": "B", b"b2": "B"}
    with client.get_queue_sender(q) as sender:
        sender.send_messages([ServiceBusMessage(b, message_id=b.decode(), subject="s") for b in reasons])
    _dead_letter_all(client, q, reasons)

    out = str(tmp_path / "dlq.parquet")
    e = export(spark, url, q, out)
    assert e.messages == 4
    rows = spark.read.parquet(out).select("messageId", "deadLetterReason").collect()
    got = sorted((r.messageId, r.deadLetterReason) for r in rows)
    assert got == [("a1", "A"), ("a2", "A"), ("b1", "B"), ("b2", "B")]

    assert resubmit(spark, url, q, reason="A", dry_run=True).counts == {"selected": 2}
    # Same message ids within the duplicate-detection window: the copies are dropped, so the
    # dead-lettered messages must stay.
    kept = resubmit(spark, url, q, reason="A")
    assert (kept.messages, kept.counts["duplicates_kept_in_dlq"]) == (0, 2)
    assert len(peek_all(client, q, dead_letter=True)) == 4 and peek_all(client, q) == []

    done = resubmit(spark, url, q, reason="A", new_message_id=True)
    assert (done.messages, done.counts["not_found"]) == (2, 0)
    main = peek_all(client, q)
    assert sorted((m.body_bytes, m.subject) for m in main) == [(b"a1", "s"), (b"a2", "s")]
    dead = peek_all(client, q, dead_letter=True)
    assert sorted(m.body_bytes for m in dead) == [b"b1", b"b2"]
    assert all(m.delivery_count == 0 for m in dead)  # scanned past, given back uncounted


def test_bulk_load_from_parquet_json_and_csv_then_report(
    spark: Any, url: str, make_queue: Any, client: Any, tmp_path: Path
) -> None:
    q = make_queue(enable_partitioning=True, partition_count=2, requires_duplicate_detection=True)
    rows = [(f"p{i}", f"id-{i}") for i in range(30)]
    spark.createDataFrame(rows[:10], "payload STRING, messageId STRING").write.parquet(str(tmp_path / "in.parquet"))
    lines = [json.dumps({"payload": b, "messageId": m}) for b, m in rows[10:20]]
    (tmp_path / "in.json").write_text("\n".join(lines) + "\n")
    (tmp_path / "in.csv").write_text("payload,messageId\n" + "".join(f"{b},{m}\n" for b, m in rows[20:]))
    for name in ("in.parquet", "in.json", "in.csv"):
        s = bulk_load(spark, url, q, [str(tmp_path / name)], rename={"payload": "body"})
        assert (s.messages, s.counts["rejected"]) == (10, 0)
    again = bulk_load(spark, url, q, [str(tmp_path / "in.csv")], rename={"payload": "body"})
    assert (again.messages, again.counts["duplicates"]) == (0, 10)
    assert sorted(m.message_id for m in peek_all(client, q)) == sorted(m for _, m in rows)

    with client.get_queue_receiver(q, max_wait_time=1) as r:
        m = r.receive_messages(1, max_wait_time=1)[0]
        r.dead_letter_message(m, reason="Broken")
    summary, counted, text = report(spark, url, [q], str(tmp_path / "report"))
    assert summary.messages == 30
    by = {(r["subqueue"], r["state"], r["deadLetterReason"]): 0 for r in counted}
    for r in counted:
        by[(r["subqueue"], r["state"], r["deadLetterReason"])] += r["count"]
    assert by == {("main", "active", None): 29, ("deadletter", "active", "Broken"): 1}
    assert {r["age"] for r in counted} == {"<1m"} and {r["partition"] for r in counted} <= {0, 1}
    assert "deadLetterReason" in text.splitlines()[0]
    assert (tmp_path / "report" / "report.csv").read_text().count("\n") == len(counted) + 1
    assert (tmp_path / "report" / "report.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_job_runs_under_spark_submit(url: str, make_queue: Any, client: Any, tmp_path: Path) -> None:
    q = make_queue()
    send(client, q, ["x", "y"])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    env.update(SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    cmd = [
        "spark-submit",
        "--master",
        "local[1]",
        "--conf",
        "spark.ui.enabled=false",
        str(ROOT / "spark_jobs" / "consume.py"),
        "--url",
        url,
        "--entity",
        q,
        "--handler",
        "tests.spark.handlers:record",
        "--idle-seconds",
        "0.3",
    ]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "consume: 2 messages" in done.stdout
    assert sorted(handled(url, q)) == [b"x", b"y"]
