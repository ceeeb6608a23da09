"""The documentation's Spark samples (tagged ``<!-- sample: spark -->``, tests/docs/samples.py) run
with the suite's Spark session bound to ``spark`` and SBREDIS_URL naming the suite's redis-server
(a database of their own, emptied before and after)."""

from __future__ import annotations

import os
from typing import Any

import pytest
import redis

from tests.docs import samples

pytestmark = [pytest.mark.spark, pytest.mark.integration]

SPARK = samples.runnable(with_tag="spark")
SAMPLE_DB = 14


def test_the_site_has_spark_samples() -> None:
    assert SPARK, "docs/recipes/spark.md should have a sample tagged spark"


@pytest.mark.parametrize("block", SPARK, ids=[b.id for b in SPARK])
def test_spark_sample(block: samples.Block, spark: Any, redis_server: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"redis://127.0.0.1:{redis_server.port}/{SAMPLE_DB}"
    raw = redis.Redis.from_url(url)
    raw.flushdb()
    monkeypatch.setenv("SBREDIS_URL", url)
    try:
        samples.run_chain(block, {"__name__": "__main__", "spark": spark}, dict(os.environ))
    finally:
        raw.flushdb()
        raw.close()
