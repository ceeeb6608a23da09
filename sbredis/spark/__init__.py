"""PySpark (4.x) data source ``sbredis`` and the helpers of the Spark jobs in ``spark_jobs/``.

Registration — how ``format("sbredis")`` finds this source:

* ``sbredis.spark.register(spark)`` registers it on a session (``spark.dataSource.register``);
  it is idempotent and what the jobs in ``spark_jobs/`` call. It first checks that the
  interpreter the source's workers run (the SparkContext's ``pythonExec``: PYSPARK_PYTHON, else
  ``python3`` from PATH) imports sbredis.spark, and names the one to set if not.
* Automatically: when Spark first resolves a Python data source, it imports every top-level
  module whose name starts with ``pyspark_`` and registers its ``DefaultSource`` (PySpark's
  static data source lookup). The ``pyspark_sbredis`` module shipped with the package is one
  line, ``from sbredis.spark import DefaultSource``, so once sbredis is installed (with the
  ``spark`` extra) ``spark.read.format("sbredis")`` works with no call at all. The lookup runs
  once per Spark application, in a Python worker running PYSPARK_DRIVER_PYTHON or PYSPARK_PYTHON
  from the Spark JVM's environment, else ``python3`` from PATH; when that interpreter lacks
  sbredis, Spark reports ``DATA_SOURCE_NOT_FOUND`` and no sbredis code runs to say why.

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
        InvalidOperationError: the Python workers that run a registered source would run an
            interpreter that cannot import sbredis.spark (``python3`` from PATH when the driver
            started without PYSPARK_PYTHON); the message names the interpreter to set.
    """
    _check_worker_python(spark)
    spark.dataSource.register(SbRedisDataSource)


def _check_worker_python(spark: Any) -> None:
    """The interpreter a registered source's Python workers run is the SparkContext's
    ``pythonExec``: PYSPARK_PYTHON from the driver's environment when the context started, else
    ``python3`` from PATH. The Spark conf spark.pyspark.python does not change it for a driver
    started with ``python`` (spark-submit turns that conf into the driver's PYSPARK_PYTHON)."""
    import os
    import shutil
    import subprocess
    import sys

    try:
        exe = spark.sparkContext.pythonExec
    except Exception:  # Spark Connect has no SparkContext on the client: the server decides
        return
    found = shutil.which(exe)
    if found and os.path.realpath(found) == os.path.realpath(sys.executable):
        return
    if found and subprocess.run([found, "-c", "import sbredis.spark"], capture_output=True, timeout=60).returncode == 0:
        return
    raise InvalidOperationError(
        f"Spark's Python workers would run {found or f'{exe} (not found)'}, which cannot import sbredis.spark; "
        f"set the environment variable PYSPARK_PYTHON={sys.executable} before the Spark session starts"
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
