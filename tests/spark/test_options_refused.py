"""A bad option of the sbredis data source fails ``load()`` on the driver with a message naming the
option and the value, before any task runs (sbredis/spark/_options.py checks them all once)."""

from __future__ import annotations

import re
from typing import Any

import pytest

pytestmark = pytest.mark.spark

BAD = [
    ({"subQueue": "transfer"}, "option subQueue must be 'deadletter'"),
    ({"socketTimeout": "soon"}, "option socketTimeout must be seconds, not 'soon'"),
    ({"socketTimeout": "-1"}, "option socketTimeout must be positive"),
    ({"pageSize": "many"}, "option pageSize must be a positive integer, not 'many'"),
    ({"pageSize": "9999"}, "option pageSize must be between 1 and 5000, not 9999"),
    ({"mode": "browse"}, "option mode must be 'peek' or 'consume', not 'browse'"),
    ({"receiveWaitSeconds": "x"}, "option receiveWaitSeconds must be seconds, not 'x'"),
    ({"maxLockRenewalSeconds": "0"}, "option maxLockRenewalSeconds must be positive, not '0'"),
    ({"partialEndingOffsets": "skip"}, "option partialEndingOffsets must be 'error' or 'latest', not 'skip'"),
    ({"filterPushdown": "yes"}, "option filterPushdown must be 'true' or 'false', not 'yes'"),
    ({"deliveryGuarantee": "maybe"}, "option deliveryGuarantee must be 'exactlyOnce' or 'atLeastOnce'"),
    ({"startingOffsets": "first"}, "option startingOffsets must be 'earliest', 'latest' or JSON"),
    ({"startingOffsets": "[5]"}, "the JSON must be an object of partition -> offset"),
    ({"endingOffsets": '{"p0": 5}'}, "'p0' is not a partition number"),
    ({"endingOffsets": '{"0": -3}'}, "partition 0: offset -3 is not -2, -1 or >= 0"),
    ({"topic": "t", "subscription": "s"}, "give either option 'entity' or options 'topic'"),
]


@pytest.mark.parametrize(
    ("options", "message"), BAD, ids=[next(iter(o)) + "=" + next(iter(o.values())) for o, _ in BAD]
)
def test_a_bad_option_fails_load_with_a_message_naming_it(
    spark: Any, url: str, queue_name: str, options: dict[str, str], message: str
) -> None:
    reader = spark.read.format("sbredis").option("url", url).option("entity", queue_name)
    for k, v in options.items():
        reader = reader.option(k, v)
    with pytest.raises(Exception, match=re.escape(message)) as info:
        reader.load()
    assert "InvalidArgumentError" in str(info.value)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"subscription": "s"}, "option 'subscription' needs option 'topic'"),
        ({}, "option 'entity' .* is required"),
    ],
)
def test_the_entity_must_be_named_one_way(spark: Any, url: str, options: dict[str, str], message: str) -> None:
    reader = spark.read.format("sbredis").option("url", url)
    for k, v in options.items():
        reader = reader.option(k, v)
    with pytest.raises(Exception, match=message):
        reader.load()
