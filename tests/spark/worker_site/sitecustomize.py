"""Coverage of Spark's Python workers: each one saves its data after every task.

This folder is on the PYTHONPATH of every process the Spark tests start (tests/spark/conftest.py),
so Python imports this module at start-up; it acts only in PySpark's daemon under coverage.
Coverage starts in the daemon and in each worker the daemon forks (``patch`` in pyproject.toml),
but a worker never exits by itself: Spark kills it (SIGKILL once done with it or idle, SIGHUP when
the daemon shuts down), and its data would be lost. After a fork, the child's ``worker`` function
is wrapped to save after each task, before Spark can kill it: what Spark's own coverage run does
(python/test_coverage/coverage_daemon.py), here also for the daemons of the data source planner,
which Spark starts as ``pyspark.daemon`` whatever ``spark.python.daemon.module`` says.
"""

from __future__ import annotations

import os
import sys
from typing import Any


def _save_after_each_task() -> None:
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    worker = getattr(main, "worker", None)
    if spec is None or spec.name != "pyspark.daemon" or worker is None or hasattr(worker, "saves_coverage"):
        return

    def saving(*args: Any, **kwargs: Any) -> Any:
        try:
            return worker(*args, **kwargs)
        finally:
            import coverage

            cov = coverage.Coverage.current()
            if cov is not None:
                cov.save()

    saving.saves_coverage = True  # type: ignore[attr-defined]
    main.worker = saving  # type: ignore[union-attr]


if os.environ.get("COVERAGE_PROCESS_CONFIG") or os.environ.get("COVERAGE_PROCESS_START"):
    os.register_at_fork(after_in_child=_save_after_each_task)
