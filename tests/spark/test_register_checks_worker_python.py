"""``sbredis.spark.register`` refuses a session whose Python workers could not import sbredis.spark.

Without PYSPARK_PYTHON (or spark.pyspark.python), Spark starts its Python workers with ``python3``
from PATH. register() checks that interpreter before registering, so the mistake shows on the
driver with the interpreter to set instead of as an ImportError in every task. Each case runs
against the suite's real session with PATH and PYSPARK_PYTHON changed for the call only.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from sbredis.exceptions import InvalidOperationError

pytestmark = pytest.mark.spark


def python3_on_path(monkeypatch: pytest.MonkeyPatch, folder: Path, script: str | None) -> None:
    """PATH holds only `folder`, with a ``python3`` running `script` (none when `script` is None)."""
    folder.mkdir()
    if script is not None:
        exe = folder / "python3"
        exe.write_text(script)
        exe.chmod(0o755)
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    monkeypatch.setenv("PATH", str(folder))


def test_a_python3_that_cannot_import_sbredis_is_refused_naming_the_interpreter_to_set(
    spark: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from sbredis.spark import register

    # a real interpreter that cannot import sbredis: this one without site-packages or PYTHONPATH
    python3_on_path(monkeypatch, tmp_path / "bin", f'#!/bin/sh\nexec "{sys.executable}" -I -S "$@"\n')
    with pytest.raises(InvalidOperationError) as info:
        register(spark)
    message = str(info.value)
    assert str(tmp_path / "bin" / "python3") in message and "cannot import sbredis.spark" in message
    assert f"PYSPARK_PYTHON={sys.executable}" in message


def test_no_python3_on_path_is_refused(spark: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from sbredis.spark import register

    python3_on_path(monkeypatch, tmp_path / "empty", None)
    with pytest.raises(InvalidOperationError, match=r"python3 \(not on PATH\)"):
        register(spark)


def test_a_python3_that_imports_sbredis_is_accepted(
    spark: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Another interpreter (here a wrapper of this one) is probed: it imports sbredis.spark, so the
    source is registered."""
    from sbredis.spark import register

    python3_on_path(monkeypatch, tmp_path / "bin", f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    register(spark)


def test_this_interpreter_as_python3_is_accepted(spark: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from sbredis.spark import register

    python3_on_path(monkeypatch, tmp_path / "bin", None)
    (tmp_path / "bin" / "python3").symlink_to(sys.executable)
    register(spark)
