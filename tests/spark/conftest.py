"""One local Spark session (local[2]) for all Spark tests, against the suite's redis-server.

The session starts once per test session; the Spark UI is off and shuffles use 2 partitions.
Every process the Spark tests start has ``worker_site`` on its PYTHONPATH: its sitecustomize makes
each of Spark's Python workers save its coverage data after every task (Spark kills them).
Python workers get this interpreter (PYSPARK_PYTHON) and a PYTHONPATH with the repository (so
`tests.spark.handlers` imports in workers) and, when the installed package does not provide it
yet, a temporary ``pyspark_sbredis`` shim: the module PySpark's static lookup imports, which is
what makes ``format("sbredis")`` work with no registration call.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import pytest

if find_spec("pyspark") is None or find_spec("pyarrow") is None:  # the spark extra is not installed
    collect_ignore_glob = ["test_*.py"]

ROOT = Path(__file__).resolve().parents[2]
WORKER_SITE = Path(__file__).resolve().parent / "worker_site"  # its sitecustomize saves the workers' coverage
SHIM = "from sbredis.spark import DefaultSource  # noqa: F401\n"


def pytest_configure(config: Any) -> None:
    config.addinivalue_line("markers", "spark: needs PySpark 4 and Java (a local[2] Spark session)")


@pytest.fixture(scope="session", autouse=True)
def worker_site() -> Iterator[None]:
    """WORKER_SITE on the PYTHONPATH of every process the Spark tests start (the session's Python
    workers, spark-submit, a Connect server and theirs)."""
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(WORKER_SITE), old) if p)
    yield
    if old is None:
        os.environ.pop("PYTHONPATH", None)
    else:
        os.environ["PYTHONPATH"] = old


def _python_path(extra: list[str]) -> str:
    parts = [*extra, str(ROOT)]
    old = os.environ.get("PYTHONPATH")
    if old:
        parts.append(old)
    return os.pathsep.join(parts)


@pytest.fixture(scope="session")
def spark(redis_server: Any) -> Iterator[Any]:
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ["SBREDIS_TEST_URL"] = redis_server.url  # for tests.spark.handlers in Python workers
    extra = []
    shim_dir = None
    if find_spec("pyspark_sbredis") is None:
        shim_dir = tempfile.mkdtemp(prefix="sbredis-spark-shim-")
        pkg = Path(shim_dir, "pyspark_sbredis")
        pkg.mkdir()
        (pkg / "__init__.py").write_text(SHIM)
        extra.append(shim_dir)
    os.environ["PYTHONPATH"] = _python_path(extra)
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("sbredis-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.driver.memory", "1g")
        .config("spark.python.worker.reuse", "true")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
