"""Batch reads with enqueuedTime filters pushed down give the rows Spark's own filter gives.

A message's enqueued time is not in offset order: a scheduled message is logged when it is sent,
with its activation time as its enqueued time. Every comparison is checked with pushdown
(option filterPushdown, spark.sql.python.filterPushdown.enabled) against the same query without,
at literals on, just before and just after a message's enqueued time (microseconds around a whole
millisecond), and in a session time zone other than UTC.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from sbredis import ServiceBusMessage

pytestmark = pytest.mark.spark


def load(spark: Any, url: str, entity: str, pushdown: bool) -> Any:
    r = spark.read.format("sbredis").option("url", url).option("entity", entity)
    return r.option("filterPushdown", "true" if pushdown else "false").load()


@pytest.fixture()
def pushdown_on(spark: Any) -> Iterator[None]:
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    yield
    spark.conf.unset("spark.sql.python.filterPushdown.enabled")
    spark.conf.set("spark.sql.session.timeZone", "UTC")


@pytest.fixture()
def out_of_order(make_queue: Any, client: Any) -> str:
    """A queue of 2 partitions where scheduled messages (enqueued in the future) sit between and
    before plain ones, one of them scheduled at a whole second and one at 1 ms past it."""
    q = make_queue(enable_partitioning=True, partition_count=2)
    base = datetime.now(UTC).replace(microsecond=0) + timedelta(hours=1)
    with client.get_queue_sender(q) as s:
        s.schedule_messages(ServiceBusMessage("s0", partition_key="a"), base)
        s.schedule_messages(ServiceBusMessage("s1", partition_key="b"), base + timedelta(milliseconds=1))
        s.send_messages([ServiceBusMessage(f"m{i}", partition_key="ab"[i % 2]) for i in range(6)])
        s.schedule_messages(ServiceBusMessage("s2", partition_key="a"), base - timedelta(minutes=30))
        s.send_messages([ServiceBusMessage(f"n{i}", partition_key="ab"[i % 2]) for i in range(4)])
    return q


def literal(t: datetime) -> str:
    """A TIMESTAMP literal of `t` in the session time zone UTC."""
    return f"TIMESTAMP '{t.astimezone(UTC).strftime('%Y-%m-%d %H:%M:%S.%f')}'"


def rows(df: Any) -> list[tuple[int, int]]:
    return sorted((r.partition, r.offset) for r in df.select("partition", "offset").collect())


def spark_filters(df: Any) -> bool:
    """Whether Spark still evaluates a filter of `df` (a Filter node in its physical plan)."""
    return "Filter " in str(df._jdf.queryExecution().executedPlan().toString())


def test_each_comparison_gives_spark_s_rows_at_and_around_each_enqueued_time(
    spark: Any, url: str, out_of_order: str, pushdown_on: None
) -> None:
    plain, pushed = load(spark, url, out_of_order, False), load(spark, url, out_of_order, True)
    times = sorted({r.enqueuedTime for r in plain.select("enqueuedTime").collect()})
    by_offset = [r.enqueuedTime for r in plain.orderBy("partition", "offset").collect()]
    assert by_offset != sorted(by_offset)  # not in offset order
    assert len(times) >= 3
    micro = timedelta(microseconds=1)
    for t in (times[0], times[-1]):  # a message sent, a message scheduled
        for at in (t - micro, t, t + micro):
            for op in ("=", "<", "<=", ">", ">="):
                condition = f"enqueuedTime {op} {literal(at)}"
                got, want = rows(pushed.where(condition)), rows(plain.where(condition))
                assert got == want, condition
    low, high = times[1], times[-2]
    between = f"enqueuedTime BETWEEN {literal(low)} AND {literal(high)}"
    assert rows(pushed.where(between)) == rows(plain.where(between)) != []
    empty = f"enqueuedTime > {literal(high)} AND enqueuedTime < {literal(low)}"
    assert rows(pushed.where(empty)) == []


def test_whole_millisecond_boundaries_of_scheduled_messages(
    spark: Any, url: str, out_of_order: str, pushdown_on: None
) -> None:
    pushed = load(spark, url, out_of_order, True)
    bodies = {bytes(r.body): r.enqueuedTime for r in pushed.select("body", "enqueuedTime").collect()}
    second = bodies[b"s0"]
    assert bodies[b"s1"] - second == timedelta(milliseconds=1)

    def selected(condition: str) -> list[bytes]:
        return sorted(bytes(r.body) for r in pushed.where(condition).select("body").collect())

    assert selected(f"enqueuedTime = {literal(second)}") == [b"s0"]
    assert selected(f"enqueuedTime = {literal(second + timedelta(microseconds=500))}") == []
    assert selected(f"enqueuedTime > {literal(second)}") == [b"s1"]
    assert selected(f"enqueuedTime >= {literal(second + timedelta(microseconds=1))}") == [b"s1"]
    assert selected(f"enqueuedTime <= {literal(second + timedelta(microseconds=999))}") == sorted(
        b for b, t in bodies.items() if t <= second
    )


def test_a_session_time_zone_other_than_utc(spark: Any, url: str, out_of_order: str, pushdown_on: None) -> None:
    zone = "America/New_York"
    spark.conf.set("spark.sql.session.timeZone", zone)
    plain, pushed = load(spark, url, out_of_order, False), load(spark, url, out_of_order, True)
    first = min(r.enqueuedTime for r in plain.select("enqueuedTime").collect()).astimezone(ZoneInfo(zone))
    first = first.strftime("%Y-%m-%d %H:%M:%S.%f")  # read in the session time zone
    for condition in (
        f"enqueuedTime > TIMESTAMP '{first}'",
        f"enqueuedTime <= '{first}'",
        f"enqueuedTime >= to_timestamp('{first}') + INTERVAL 30 MINUTES",
    ):
        assert rows(pushed.where(condition)) == rows(plain.where(condition)), condition


def test_filters_it_cannot_apply_exactly_stay_with_spark(
    spark: Any, url: str, out_of_order: str, pushdown_on: None
) -> None:
    plain, pushed = load(spark, url, out_of_order, False), load(spark, url, out_of_order, True)
    t = min(r.enqueuedTime for r in plain.select("enqueuedTime").collect())
    for kept in (
        f"enqueuedTime > {literal(t)}",
        # Spark casts a TIMESTAMP_NTZ literal to TIMESTAMP (in the session time zone) before pushing it
        f"enqueuedTime >= TIMESTAMP_NTZ '{t.astimezone(UTC).strftime('%Y-%m-%d %H:%M:%S.%f')}'",
    ):
        df = pushed.where(kept)
        assert not spark_filters(df) and rows(df) == rows(plain.where(kept)), kept  # applied by the read
        assert spark_filters(plain.where(kept))
    for condition in (
        f"enqueuedTime <=> {literal(t)}",  # null-safe equality
        f"NOT (enqueuedTime = {literal(t)})",
        f"enqueuedTime IN ({literal(t)}, {literal(t + timedelta(hours=1))})",
        "enqueuedTime IS NULL",
        f"offset != 2 AND enqueuedTime >= {literal(t)}",
    ):
        df = pushed.where(condition)
        assert spark_filters(df) and rows(df) == rows(plain.where(condition)), condition


def test_a_literal_without_a_time_zone_or_of_another_type_is_left_to_spark() -> None:
    from pyspark.sql.datasource import GreaterThan

    from sbredis.spark._source import Pushed

    pushed = Pushed()
    assert not pushed.take(GreaterThan(("enqueuedTime",), datetime(2030, 1, 1)))
    assert not pushed.take(GreaterThan(("enqueuedTime",), "2030-01-01"))
    assert pushed.enq is None
