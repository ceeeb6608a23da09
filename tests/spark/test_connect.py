"""Spark Connect: the jobs, a consuming stream and the docs samples run on a local Connect server."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.integration]
ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(find_spec("grpc") is None, reason="Spark Connect needs pyspark[connect] (grpcio)")
@pytest.mark.timeout(600)  # the subprocess's own limit: a Connect server and every job, slower under coverage
def test_jobs_and_samples_run_over_spark_connect(redis_server: Any, tmp_path: Path) -> None:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    env.update(SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable, SBREDIS_TEST_URL=redis_server.url)
    cmd = [sys.executable, "-m", "tests.spark.connect_jobs", redis_server.url, str(tmp_path)]
    done = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    # the JVM's stack traces fill stderr's end: the Python traceback and error lines come first
    lines = done.stderr.splitlines()
    python_side = [ln for ln in lines if not ln.lstrip().startswith(("at ", "\tat ")) and "\tat " not in ln]
    assert done.returncode == 0, (done.stdout[-2000:], "\n".join(python_side)[-6000:])
    assert "connect: all jobs ran" in done.stdout
