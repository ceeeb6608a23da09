"""The bulk load job with bad rows set aside (rejectPath), a row limit, a repartition, and input
whose format it cannot use."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from sbredis.exceptions import InvalidArgumentError
from sbredis.spark._bulk import bulk_load
from tests.spark.test_spark_jobs import peek_all

pytestmark = pytest.mark.spark


def test_bad_rows_go_to_the_reject_path_with_their_columns_readable(
    spark: Any, url: str, make_queue: Any, client: Any, tmp_path: Path
) -> None:
    q = make_queue()
    when = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
    ttl = timedelta(seconds=90)
    rows = [
        (b"ok-1", "m1", None, ttl, None, {"region": "eu"}),
        (b"\xffbad", "m2", "s" * 200, ttl, when, {"region": "us"}),  # a session id over 128 characters
        (None, "m3", None, None, None, None),  # no body
        (b"ok-2", "m4", None, None, None, None),
    ]
    schema = (
        "body BINARY, messageId STRING, sessionId STRING, timeToLive INTERVAL DAY TO SECOND,"
        " scheduledEnqueueTime TIMESTAMP, applicationProperties MAP<STRING, STRING>"
    )
    spark.createDataFrame(rows, schema).write.parquet(str(tmp_path / "in.parquet"))
    rejects = tmp_path / "rejects"
    s = bulk_load(spark, url, q, [str(tmp_path / "in.parquet")], reject_path=str(rejects), partitions=1)
    assert (s.messages, s.counts["rejected"]) == (2, 2)
    stored = peek_all(client, q)
    assert sorted(m.message_id for m in stored) == ["m1", "m4"]
    assert {m.message_id: m.time_to_live for m in stored}["m1"] == ttl
    records = sorted(
        (json.loads(line) for f in rejects.iterdir() for line in f.read_text().splitlines()),
        key=lambda r: r["columns"]["messageId"],
    )
    assert [r["columns"]["messageId"] for r in records] == ["m2", "m3"]
    bad = records[0]
    assert "session_id is longer than 128 characters" in bad["error"]
    assert bad["columns"]["body"] == {"base64": base64.b64encode(b"\xffbad").decode()}
    assert bad["columns"]["timeToLive"] == 90.0
    assert datetime.fromisoformat(bad["columns"]["scheduledEnqueueTime"]).astimezone(UTC) == when
    assert bad["columns"]["applicationProperties"] in ({"region": "us"}, [["region", "us"]])
    assert records[1]["error"] == "body is null" and records[1]["columns"]["body"] is None


def test_limit_sends_only_that_many_rows(spark: Any, url: str, make_queue: Any, client: Any, tmp_path: Path) -> None:
    q = make_queue()
    (tmp_path / "in.jsonl").write_text("".join(json.dumps({"body": f"b{i}"}) + "\n" for i in range(20)))
    s = bulk_load(spark, url, q, [str(tmp_path / "in.jsonl")], limit=5, partitions=2)
    assert s.messages == 5
    assert len(peek_all(client, q)) == 5


def test_input_of_an_unknown_format_is_refused_before_sending(
    spark: Any, url: str, make_queue: Any, client: Any, tmp_path: Path
) -> None:
    q = make_queue()
    (tmp_path / "in.txt").write_text("body\nx\n")
    with pytest.raises(InvalidArgumentError, match=r"cannot tell the format of .*in\.txt.*pass --format"):
        bulk_load(spark, url, q, [str(tmp_path / "in.txt")])
    with pytest.raises(InvalidArgumentError, match="--format must be one of parquet, json, csv, not 'text'"):
        bulk_load(spark, url, q, [str(tmp_path / "in.txt")], fmt="text")
    assert peek_all(client, q) == []
