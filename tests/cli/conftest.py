"""`sbredis` run as a real subprocess (``python -m sbredis``) against the test redis-server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


class Run:
    """A finished `sbredis` command: exit code, stdout, stderr."""

    def __init__(self, proc: subprocess.CompletedProcess[str]) -> None:
        self.code = proc.returncode
        self.out = proc.stdout
        self.err = proc.stderr

    def json(self) -> Any:
        return json.loads(self.out)

    def __repr__(self) -> str:
        return f"Run(code={self.code}, out={self.out[-2000:]!r}, err={self.err[-2000:]!r})"


def run_cli(*args: str, url: str | None = None, stdin: str | None = None, timeout: float = 60) -> Run:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("SBREDIS_URL", None)
    if url is not None:
        env["SBREDIS_URL"] = url
    proc = subprocess.run(
        [sys.executable, "-m", "sbredis", *args],
        cwd=ROOT,
        env=env,
        input=stdin if stdin is not None else "",
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return Run(proc)


@pytest.fixture()
def sb(url: str) -> Callable[..., Run]:
    """Run `sbredis ARGS` with SBREDIS_URL set to the test server (stdin: `stdin` or empty, not a TTY)."""

    def run(*args: str, stdin: str | None = None) -> Run:
        return run_cli(*args, url=url, stdin=stdin)

    return run
