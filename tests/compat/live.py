"""Run one of azure-servicebus's own test files, ported mechanically, against a real redis-server.

The sdist's tests/ folder is ported into a work folder with tests/compat/port.py's rules (the same
for every file), and pytest runs one file there in a subprocess with tests/compat/live_plugin.py,
against a fresh redis-server whose ACL user is the connection strings' key name and key. The
result is each test's outcome (tests/compat/test_live.py compares them with the lists).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.compat.port import port_source
from tests.compat.samples import PASSWORD, ROOT, USER, add_acl_user
from tests.redis_server import RedisServer

FILE_TIMEOUT = float(os.environ.get("SBREDIS_COMPAT_FILE_TIMEOUT", "900"))
TEST_TIMEOUT = os.environ.get("SBREDIS_COMPAT_TEST_TIMEOUT", "60")


def port_tree(source: Path, into: Path) -> Path:
    """The sdist's tests/ folder, every .py file ported, under `into`."""
    target = into / "tests"
    if target.exists():
        shutil.rmtree(target)
    for path in (source / "tests").rglob("*"):
        dest = target / path.relative_to(source / "tests")
        if path.is_dir():
            dest.mkdir(parents=True, exist_ok=True)
        elif path.suffix == ".py":
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_text(port_source(path.read_text()))
    return target


def run_file(tree: Path, relative: str, workdir: Path) -> dict[str, dict[str, Any]]:
    """Each test's outcome in the ported file `relative` (a path under the sdist's tests/)."""
    results = workdir / "results.json"
    srv = RedisServer().start()
    try:
        add_acl_user(srv.url)
        test_file = tree / relative
        env = dict(os.environ)
        env.update(
            SBREDIS_COMPAT_HOST="127.0.0.1",
            SBREDIS_COMPAT_PORT=str(srv.port),
            SBREDIS_COMPAT_USER=USER,
            SBREDIS_COMPAT_PASSWORD=PASSWORD,
            SBREDIS_COMPAT_RESULTS=str(results),
            SERVICEBUS_FULLY_QUALIFIED_NAMESPACE=f"127.0.0.1:{srv.port}",
            SERVICEBUS_CONNECTION_STR=(
                f"Endpoint=sb://127.0.0.1:{srv.port}/;SharedAccessKeyName={USER};SharedAccessKey={PASSWORD};"
                "UseDevelopmentEmulator=true"
            ),
            AZURE_TEST_RUN_LIVE="true",
            PYTHONPATH=os.pathsep.join([str(test_file.parent), str(tree), str(ROOT)]),
        )
        cmd = [sys.executable, "-m", "pytest", str(test_file), "-p", "tests.compat.live_plugin", "-q"]
        cmd += ["-p", "no:cacheprovider", f"--timeout={TEST_TIMEOUT}", "--rootdir", str(tree), "-o", "addopts="]
        cmd += ["-W", "ignore::DeprecationWarning", "-o", "asyncio_mode=auto"]
        try:
            done = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True, timeout=FILE_TIMEOUT)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"{relative} did not finish within {FILE_TIMEOUT} s") from None
        if not results.exists():
            raise AssertionError(
                f"{relative}: pytest wrote no results (exit {done.returncode}):\n{done.stdout[-4000:]}"
            )
        return dict(json.loads(results.read_text()))
    finally:
        srv.stop()
