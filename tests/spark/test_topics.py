"""Topics and subscriptions in Spark: write to a topic (fan-out), read a subscription (and its
dead-letter subqueue), consume a subscription; and the uses that cannot work, refused clearly."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from sbredis import ServiceBusMessage
from sbredis.management import SqlRuleFilter
from sbredis.spark._consume import consume
from sbredis.spark._dlq import export, resubmit
from tests.spark.handlers import handled

pytestmark = pytest.mark.spark


@pytest.fixture()
def topic(admin: Any) -> Iterator[str]:
    """A 3-partition topic with subscriptions 'all' ($Default) and 'red' (color = 'red')."""
    name = f"st-{uuid.uuid4().hex[:10]}"
    admin.create_topic(name, enable_partitioning=True, partition_count=3, requires_duplicate_detection=True)
    admin.create_subscription(name, "all", max_delivery_count=2)
    admin.create_subscription(name, "red")
    admin.delete_rule(name, "red", "$Default")
    admin.create_rule(name, "red", "r", filter=SqlRuleFilter("color = 'red'"))
    yield name
    admin.delete_topic(name)


def rows_df(spark: Any, n: int) -> Any:
    from pyspark.sql import Row

    colors = ["red", "blue"]
    data = [
        Row(body=f"m{i}".encode(), messageId=f"id-{i}", applicationProperties={"color": colors[i % 2]})
        for i in range(n)
    ]
    return spark.createDataFrame(data, "body binary, messageId string, applicationProperties map<string,string>")


def write(df: Any, url: str, **options: str) -> None:
    w = df.write.format("sbredis").option("url", url).mode("append")
    for k, v in options.items():
        w = w.option(k, v)
    w.save()


def read(spark: Any, url: str, **options: str) -> Any:
    r = spark.read.format("sbredis").option("url", url)
    for k, v in options.items():
        r = r.option(k, v)
    return r.load()


def test_rows_written_to_a_topic_reach_the_matching_subscriptions(spark: Any, url: str, topic: str) -> None:
    df = rows_df(spark, 40).repartition(2)
    write(df, url, topic=topic)
    write(df, url, topic=topic)  # a retried write: the topic's duplicate detection drops it all
    everything = read(spark, url, topic=topic, subscription="all", minOffsetsPerTask="1")
    assert everything.rdd.getNumPartitions() == 3
    assert sorted(r.messageId for r in everything.collect()) == sorted(f"id-{i}" for i in range(40))
    reds = read(spark, url, entity=f"{topic}/Subscriptions/red").collect()
    assert sorted(r.messageId for r in reds) == sorted(f"id-{i}" for i in range(0, 40, 2))
    assert {r.applicationProperties["color"] for r in reds} == {"red"}
    # the subscription path is case-insensitive in its middle part, as Service Bus paths are
    assert read(spark, url, entity=f"{topic}/subscriptions/red").count() == 20


def test_consume_a_subscription_then_export_its_dead_letters(
    spark: Any, url: str, topic: str, client: Any, tmp_path: Any
) -> None:
    with client.get_topic_sender(topic) as s:
        s.send_messages([ServiceBusMessage(f"ok{i}") for i in range(9)] + [ServiceBusMessage("fail-1")])
    path = f"{topic}/Subscriptions/all"
    summary = consume(spark, url, path, "tests.spark.handlers:flaky", batch_size=4, idle_seconds=0.5)
    assert summary.messages == 9
    assert sorted(handled(url, path)) == sorted(f"ok{i}".encode() for i in range(9))
    dlq = read(spark, url, topic=topic, subscription="all", subQueue="deadletter").collect()
    assert [bytes(r.body) for r in dlq] == [b"fail-1"]
    assert dlq[0].deliveryCount == 1
    export(spark, url, path, str(tmp_path / "dlq"))
    assert spark.read.parquet(str(tmp_path / "dlq")).count() == 1
    with pytest.raises(Exception, match="cannot resubmit the dead letters of the subscription"):
        resubmit(spark, url, path)
    with client.get_subscription_receiver(topic, "red") as r:  # 'red' was not touched
        assert r.peek_messages(10) == []


def test_uses_that_cannot_work_are_refused_clearly(spark: Any, url: str, topic: str) -> None:
    with pytest.raises(Exception, match="is a topic, which keeps no messages of its own"):
        read(spark, url, topic=topic).collect()
    with pytest.raises(Exception, match="is a topic, which keeps no messages of its own"):
        read(spark, url, entity=topic).collect()
    with pytest.raises(Exception, match="cannot write to the subscription"):
        write(rows_df(spark, 1), url, topic=topic, subscription="all")
    with pytest.raises(Exception, match="not both"):
        read(spark, url, entity="q", topic=topic)
    with pytest.raises(Exception, match="needs option 'topic'"):
        read(spark, url, subscription="all")
    with pytest.raises(Exception, match="invalid subscription name"):
        read(spark, url, topic=topic, subscription="bad name!")
    with pytest.raises(Exception, match="was not found"):
        read(spark, url, topic=topic, subscription="nope").collect()


def test_the_report_covers_subscriptions_by_default(url: str, topic: str) -> None:
    from sbredis.spark._report import all_entities

    names = all_entities(url)
    assert f"{topic}/Subscriptions/all" in names and f"{topic}/Subscriptions/red" in names
    assert topic not in names  # a topic has nothing of its own to count
