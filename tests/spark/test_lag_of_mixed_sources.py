"""``sbredis.spark.lag`` on progress that is not one plain sbredis source: a query that also reads
another source, a source that has not planned a batch yet, and input that is no progress at all."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sbredis import ServiceBusMessage
from sbredis.exceptions import InvalidArgumentError

pytestmark = pytest.mark.spark


def test_a_query_that_also_reads_a_rate_source_reports_only_the_sbredis_lag(
    spark: Any, url: str, make_queue: Any, client: Any, tmp_path: Path
) -> None:
    from sbredis.spark import lag

    q = make_queue()
    with client.get_queue_sender(q) as s:
        s.send_messages([ServiceBusMessage(f"m{i}") for i in range(5)])
    ours = (
        spark.readStream.format("sbredis")
        .option("url", url)
        .option("entity", q)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "2")
        .load()
        .select("offset")
    )
    rate = spark.readStream.format("rate").option("rowsPerSecond", "1").load().selectExpr("value AS offset")
    query = (
        ours.unionByName(rate)
        .writeStream.format("noop")
        .option("checkpointLocation", str(tmp_path / "ckpt"))
        .trigger(once=True)
        .start()
    )
    assert query.awaitTermination(120)
    assert query.exception() is None
    progress = query.lastProgress
    assert len(progress["sources"]) == 2
    (ours_progress,) = [p for p in progress["sources"] if q in str(p["latestOffset"])]
    behind = 5 - ours_progress["numInputRows"]  # one batch: what it did not read of the 5
    assert lag(progress) == [
        {
            "entity": q,
            "minOffsetsBehindLatest": behind,
            "maxOffsetsBehindLatest": behind,
            "avgOffsetsBehindLatest": float(behind),
            "offsetsBehindLatest": behind,
        }
    ]
    assert lag(progress.json) == lag(progress)  # its JSON gives the same


def source(latest: Any, end: Any) -> dict[str, Any]:
    """A source entry of a progress as Spark writes it: offsets are JSON strings or null."""
    return {"description": "x", "startOffset": None, "endOffset": end, "latestOffset": latest, "numInputRows": 0}


def test_sources_without_an_sbredis_latest_offset_are_left_out() -> None:
    from sbredis.spark import lag

    sb = json.dumps({"entity": "orders", "partitions": {"0": 7}})
    progress = {
        "sources": [
            source(None, None),  # a source that reports no latest offset
            source("not json", "not json"),
            source("12", "12"),  # a rate source's offsets are plain numbers
            source(json.dumps({"logOffset": 3}), json.dumps({"logOffset": 3})),  # a file source
            source(sb, None),  # sbredis before its first batch ended
            source(json.dumps({"entity": "empty", "partitions": {}}), json.dumps({"partitions": {}})),
            source(sb, json.dumps({"entity": "orders", "partitions": {"0": 5}})),
        ]
    }
    assert lag(progress) == [
        {
            "entity": "orders",
            "minOffsetsBehindLatest": 2,
            "maxOffsetsBehindLatest": 2,
            "avgOffsetsBehindLatest": 2.0,
            "offsetsBehindLatest": 2,
        }
    ]


def test_a_progress_without_sources_has_no_lag() -> None:
    from sbredis.spark import lag

    assert lag({"id": "q", "sources": []}) == []
    assert lag("{}") == []


@pytest.mark.parametrize("not_progress", [42, None, b"{}", ["sources"]])
def test_what_is_not_a_progress_is_refused(not_progress: Any) -> None:
    from sbredis.spark import lag

    with pytest.raises(InvalidArgumentError, match="expected a StreamingQueryProgress, its dict or JSON"):
        lag(not_progress)
