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

Streaming reads have two modes: ``mode=peek`` (default) reads by offset without locking, a view
of the log; ``mode=consume`` takes messages with peek-lock each micro-batch and completes them
when Spark commits the batch (at least once; see ``_consume_stream``).

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

from ..exceptions import InvalidOperationError
from ._columns import READ_SCHEMA, WRITE_COLUMNS
from ._lag import lag, lag_listener
from ._options import UnsupportedEntityError
from ._sink import BadRowError
from ._source import SbRedisDataSource

DefaultSource = SbRedisDataSource  # the name PySpark's static lookup (pyspark_* modules) imports


def register(spark: Any) -> None:
    """Register the ``sbredis`` data source on `spark` (a SparkSession); safe to call again.

    Raises:
        InvalidOperationError: Spark's Python workers would run an interpreter without sbredis
            (``python3`` from PATH, no PYSPARK_PYTHON or spark.pyspark.python set); the message
            names the interpreter to set.
    """
    _check_worker_python(spark)
    spark.dataSource.register(SbRedisDataSource)


def _check_worker_python(spark: Any) -> None:
    import os
    import shutil
    import subprocess
    import sys

    if os.environ.get("PYSPARK_PYTHON"):
        return
    try:
        if spark.conf.get("spark.pyspark.python", None):
            return
    except Exception:  # Spark Connect may not show static confs: the server decides
        return
    found = shutil.which("python3")
    if found and os.path.realpath(found) == os.path.realpath(sys.executable):
        return
    probe = [found, "-c", "import sbredis.spark"] if found else None
    if probe and subprocess.run(probe, capture_output=True, timeout=60).returncode == 0:
        return
    raise InvalidOperationError(
        f"Spark's Python workers would run {found or 'python3 (not on PATH)'}, which cannot import sbredis.spark; "
        f"set PYSPARK_PYTHON={sys.executable} (or the Spark conf spark.pyspark.python) before the session starts"
    )


__all__ = [
    "READ_SCHEMA",
    "WRITE_COLUMNS",
    "BadRowError",
    "DefaultSource",
    "SbRedisDataSource",
    "UnsupportedEntityError",
    "lag",
    "lag_listener",
    "register",
]
