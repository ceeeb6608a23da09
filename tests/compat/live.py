"""Run one of azure-servicebus's own test files, ported mechanically, against a real redis-server.

The sdist's tests/ folder is ported into a work folder with tests/compat/port.py's rules (the same
for every file), and pytest runs one file there in a subprocess with tests/compat/live_plugin.py,
against a fresh redis-server whose ACL user is the connection strings' key name and key. The
result is each test's outcome (tests/compat/test_live.py compares them with the lists).
"""

from __future__ import annotations

import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from tests.compat.port import port_source
from tests.compat.samples import PASSWORD, ROOT, USER, add_acl_user
from tests.redis_server import RedisServer

FILE_TIMEOUT = float(os.environ.get("SBREDIS_COMPAT_FILE_TIMEOUT", "900"))
TEST_TIMEOUT = os.environ.get("SBREDIS_COMPAT_TEST_TIMEOUT", "60")
# The SDK's tests that wait on the clock longer than TEST_TIMEOUT (a message scheduled 2 minutes
# ahead, a 5-minute idle link): each runs alone, beside everything else, with this limit.
SLOW_TIMEOUT = os.environ.get("SBREDIS_COMPAT_SLOW_TIMEOUT", "600")

Results = dict[str, dict[str, Any]]  # nodeid -> {"outcome", "internals", "message"}


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


def run_file(
    tree: Path,
    relative: str,
    workdir: Path,
    *,
    only: Sequence[str] = (),
    skip: Iterable[str] = (),
    timeout: str = TEST_TIMEOUT,
) -> Results:
    """Each test's outcome in the ported file `relative` (a path under the sdist's tests/): all of
    its tests, or the node ids in `only`, less those in `skip` (node ids relative to `tree`)."""
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
        targets = [str(tree / nodeid) for nodeid in only] or [str(test_file)]
        cmd = [sys.executable, "-m", "pytest", *targets, "-p", "tests.compat.live_plugin", "-q"]
        cmd += ["-p", "no:cacheprovider", f"--timeout={timeout}", "--rootdir", str(tree), "-o", "addopts="]
        cmd += ["-W", "ignore::DeprecationWarning", "-o", "asyncio_mode=auto"]
        for nodeid in skip:
            cmd += ["--deselect", nodeid]
        try:
            out = _PROCESSES.run(cmd, cwd=tree, env=env, timeout=FILE_TIMEOUT)
        except subprocess.TimeoutExpired:
            what = only[0] if len(only) == 1 else relative
            raise AssertionError(f"{what} did not finish within {FILE_TIMEOUT} s") from None
        if not results.exists():
            raise AssertionError(f"{relative}: pytest wrote no results:\n{out[-4000:]}")
        return dict(json.loads(results.read_text()))
    finally:
        srv.stop()


def run_all(tree: Path, files: Sequence[str], workdir: Path, parallel: int, slow: Iterable[str]) -> dict[str, Results]:
    """Every file's results. The `slow` node ids each run in a process of their own, all at once
    (they spend their time waiting on the clock); the rest of each file `parallel` at a time."""
    slow_of: dict[str, list[str]] = collections.defaultdict(list)
    for nodeid in slow:
        slow_of[nodeid.split("::", 1)[0]].append(nodeid)

    def one(relative: str, only: Sequence[str] = ()) -> Results:
        run = Path(tempfile.mkdtemp(dir=workdir))
        try:
            if only:
                return run_file(tree, relative, run, only=only, timeout=SLOW_TIMEOUT)
            return run_file(tree, relative, run, skip=slow_of[relative])
        except Exception as e:  # one file's failure (a server that did not start, bad results) is its own
            key = only[0] if len(only) == 1 else relative
            message = str(e) if isinstance(e, AssertionError) else f"{type(e).__name__}: {e}"
            limit = 300 if isinstance(e, AssertionError) else 1500  # keep a server's log tail readable
            return {key: {"outcome": "error", "internals": False, "message": message[:limit]}}

    singles = [(relative, nodeid) for relative in files for nodeid in slow_of[relative]]
    with ThreadPoolExecutor(max(1, len(singles))) as waiting, ThreadPoolExecutor(parallel) as pool:
        alone = [(relative, waiting.submit(one, relative, [nodeid])) for relative, nodeid in singles]
        results = dict(zip(files, pool.map(one, files), strict=True))
        for relative, future in alone:
            results[relative].update(future.result())
    return results


class _Processes:
    """The live runs' pytest processes, so that a suite that ends early can stop them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: set[subprocess.Popen[str]] = set()
        self.stopped = False

    def run(self, cmd: list[str], cwd: Path, env: dict[str, str], timeout: float) -> str:
        with self._lock:
            if self.stopped:
                raise AssertionError("the live run was stopped")
            proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            self._running.add(proc)
        try:
            out, _ = proc.communicate(timeout=timeout)
            return out
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise
        finally:
            with self._lock:
                self._running.discard(proc)

    def stop(self) -> None:
        with self._lock:
            self.stopped = True
            for proc in self._running:
                proc.kill()


_PROCESSES = _Processes()


class Background:
    """The whole live run, started as soon as the suite is collected, so that its waiting overlaps
    the rest of the suite; tests/compat/test_live.py collects the results."""

    def __init__(self) -> None:
        self._future: Future[dict[str, Results]] | None = None
        self._workdir: Path | None = None

    def start(self, files: Sequence[str], parallel: int, slow: Iterable[str]) -> None:
        if self._future is not None:
            return
        from tests.compat.sdist import azure_servicebus_source

        self._workdir = Path(tempfile.mkdtemp(prefix="sbredis-compat-live-"))
        tree = port_tree(azure_servicebus_source(), self._workdir)
        slow = list(slow)
        pool = ThreadPoolExecutor(1, thread_name_prefix="compat-live")
        self._future = pool.submit(run_all, tree, files, self._workdir, parallel, slow)
        pool.shutdown(wait=False)

    def results(self, files: Sequence[str], parallel: int, slow: Iterable[str]) -> tuple[dict[str, Results], Path]:
        self.start(files, parallel, slow)
        assert self._future is not None and self._workdir is not None
        return self._future.result(), self._workdir

    def stop(self) -> None:
        _PROCESSES.stop()
        if self._workdir is not None:
            if self._future is not None:
                self._future.cancel()
                try:
                    self._future.result(timeout=120)
                except Exception:  # stopping: whatever the run ended with is discarded
                    pass
            shutil.rmtree(self._workdir, ignore_errors=True)


BACKGROUND = Background()
