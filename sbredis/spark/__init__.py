"""PySpark (4.x) data source ``sbredis`` and the helpers of the Spark jobs in ``spark_jobs/``.

Registration — how ``format("sbredis")`` finds this source:

* ``sbredis.spark.register(spark)`` registers it on a session (``spark.dataSource.register``);
  it is idempotent and what the jobs in ``spark_jobs/`` call. Always works.
* Automatically: when Spark first resolves a Python data source, it imports every top-level
  module whose name starts with ``pyspark_`` and registers its ``DefaultSource`` (PySpark's
  static data source lookup). The ``pyspark_sbredis`` module shipped with the package is one
  line, ``from sbredis.spark import DefaultSource``, so once sbredis is installed (with the
  ``spark`` extra) ``spark.read.format("sbredis")`` works with no call at all. The lookup runs
  once per Spark application, in the Python environment of the driver's workers.

Read (batch: a snapshot; streaming: by offset, Kafka-style)::

    df = (spark.read.format("sbredis").option("url", url).option("entity", "orders")
          .option("subQueue", "deadletter")           # optional: the dead-letter subqueue
          .option("startingOffsets", '{"0": 10}')     # earliest | latest | JSON per partition
          .load())

Write (batch or streaming sink): ``df.write.format("sbredis").option("url", url)
.option("entity", "orders").mode("append").save()``; columns ``body`` plus optional
messageId, partitionKey, sessionId, applicationProperties, timeToLive (seconds or interval),
scheduledEnqueueTime, contentType, correlationId, subject. See ``_options`` for every option
and ``_columns`` for the columns.

Topics and subscriptions: option ``topic`` alone writes to a topic (fan-out to its subscriptions);
``topic`` + ``subscription`` (or entity ``<topic>/Subscriptions/<name>``) reads a subscription.
Reading a topic or writing to a subscription raises :class:`UnsupportedEntityError`.
"""

from __future__ import annotations

from typing import Any

try:
    import pyspark  # noqa: F401
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError("sbredis.spark needs PySpark 4: pip install 'sbredis[spark]'") from e

from ._columns import READ_SCHEMA, WRITE_COLUMNS
from ._options import UnsupportedEntityError
from ._sink import BadRowError
from ._source import SbRedisDataSource

DefaultSource = SbRedisDataSource  # the name PySpark's static lookup (pyspark_* modules) imports


def register(spark: Any) -> None:
    """Register the ``sbredis`` data source on `spark` (a SparkSession); safe to call again."""
    spark.dataSource.register(SbRedisDataSource)


__all__ = [
    "READ_SCHEMA",
    "WRITE_COLUMNS",
    "BadRowError",
    "DefaultSource",
    "SbRedisDataSource",
    "UnsupportedEntityError",
    "register",
]
