"""``sbredis.spark.register`` refuses a session whose Python workers could not import sbredis.spark.

A source's Python workers run the SparkContext's ``pythonExec``: PYSPARK_PYTHON from the driver's
environment when the session started, else ``python3`` from PATH (the Spark conf
spark.pyspark.python does not change it for a driver started with ``python``). register() checks
that interpreter before registering, so the mistake shows on the driver with the interpreter to
set. The refusals run in a driver of their own (a subprocess with a PATH whose ``python3`` cannot
import sbredis), as a user's script would; the suite's session, started with PYSPARK_PYTHON, is
accepted whatever PATH holds.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]

DRIVER = """
import json, os, sys
from pyspark.sql import SparkSession

spark = (
    SparkSession.builder.master("local[1]")
    .config("spark.ui.enabled", "false")
    .config("spark.pyspark.python", sys.executable)  # does not steer the workers of a python driver
    .getOrCreate()
)
out = {"pythonExec": spark.sparkContext.pythonExec}
try:
    spark.read.format("sbredis").option("url", sys.argv[1]).option("entity", "q").load()
except Exception as e:  # PySpark looked the source up in python3 from PATH, which lacks sbredis
    out["load"] = "DATA_SOURCE_NOT_FOUND" if "DATA_SOURCE_NOT_FOUND" in str(e) else str(e)[:500]
import sbredis.spark

for case, path in (("lacking", sys.argv[2]), ("missing", sys.argv[3]), ("having", sys.argv[4])):
    os.environ["PATH"] = path
    try:
        sbredis.spark.register(spark)
        out[case] = "registered"
    except Exception as e:
        out[case] = f"{type(e).__name__}: {e}"
spark.stop()
print(json.dumps(out))
"""


def path_without_sbredis(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A folder with a ``python3`` that cannot import sbredis (this interpreter without its
    site-packages) and java, and an environment with it first on PATH and no PYSPARK_*."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    python3 = bin_dir / "python3"
    python3.write_text(f'#!/bin/sh\nexec "{sys.executable}" -S "$@"\n')
    python3.chmod(0o755)
    java = Path(os.environ.get("JAVA_HOME", ""), "bin", "java")
    (bin_dir / "java").symlink_to(java if java.exists() else Path("/usr/bin/java"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_")}
    env["PATH"] = f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin"
    # only the coverage hook: the repository (and its pyspark_sbredis) must not reach the workers
    env["PYTHONPATH"] = os.pathsep.join(p for p in env.get("PYTHONPATH", "").split(os.pathsep) if "worker_site" in p)
    return python3, env


def test_a_python_driver_whose_python3_lacks_sbredis_is_told_the_interpreter_to_set(
    spark: Any, url: str, tmp_path: Path
) -> None:
    python3, env = path_without_sbredis(tmp_path)
    empty, having = tmp_path / "empty", tmp_path / "having"
    empty.mkdir()
    having.mkdir()
    (having / "python3").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')  # another python3, with sbredis
    (having / "python3").chmod(0o755)
    script = tmp_path / "driver.py"
    script.write_text(DRIVER)
    run = subprocess.run(
        [sys.executable, str(script), url, env["PATH"], str(empty), str(having)],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["pythonExec"] == "python3"
    assert out["load"] == "DATA_SOURCE_NOT_FOUND"
    assert out["lacking"].startswith("InvalidOperationError")
    assert f"would run {python3}, which cannot import sbredis.spark" in out["lacking"]
    assert f"PYSPARK_PYTHON={sys.executable}" in out["lacking"]
    assert "python3 (not found)" in out["missing"]
    assert out["having"] == "registered"


def test_a_session_started_with_pyspark_python_is_accepted_whatever_path_holds(
    spark: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from sbredis.spark import register

    assert os.path.realpath(spark.sparkContext.pythonExec) == os.path.realpath(sys.executable)
    monkeypatch.setenv("PATH", str(tmp_path))  # no python3 at all
    register(spark)


def test_a_job_started_with_python_runs_whatever_python3_is_on_path(
    spark: Any, url: str, make_queue: Any, client: Any, tmp_path: Path
) -> None:
    from sbredis import ServiceBusMessage

    q = make_queue()
    with client.get_queue_sender(q) as s:
        s.send_messages(ServiceBusMessage("hello"))
    _, env = path_without_sbredis(tmp_path)
    job = [sys.executable, str(ROOT / "spark_jobs" / "report.py"), "--url", url, "--entity", q, "--master", "local[1]"]
    run = subprocess.run(job, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "report: 1 messages" in run.stdout
