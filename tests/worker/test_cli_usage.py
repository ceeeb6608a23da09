"""`sbredis worker` refusing its arguments (a real ``python -m sbredis`` subprocess): each mistake
exits with USAGE (2), or ERROR (1) for a metrics port it cannot bind, and one line on stderr that
names it, before the worker touches the queue."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from sbredis.worker import ExitCode
from tests.redis_server import RedisServer

ROOT = Path(__file__).resolve().parents[2]
HANDLER = "tests.worker.handlers:handle"


def worker(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("SBREDIS_URL", None)
    cmd = [sys.executable, "-m", "sbredis", "worker", *args]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["no-colon"], "'no-colon' is not module:name"),
        (["tests.worker.no_such_module:handle", "--url", "{url}"], "cannot load 'tests.worker.no_such_module:handle'"),
        ([HANDLER, "--entity", "q"], "give --url (or set SBREDIS_URL)"),
        ([HANDLER, "--url", "{url}", "--entity", "q", "--dead-letter-on", "builtins:len"], "is not an exception type"),
        (["os:sep", "--url", "{url}", "--entity", "q"], "'os:sep' is neither a function nor an sbredis App"),
        ([HANDLER, "--url", "{url}", "--entity", "q", "--metrics-port", "70000"], "between 0 and 65535"),
    ],
    ids=["not-module-name", "missing-module", "no-url", "not-an-exception", "not-callable", "bad-port"],
)
def test_a_bad_argument_is_a_usage_error(redis_server: RedisServer, args: list[str], message: str) -> None:
    done = worker(*(a.format(url=redis_server.url) for a in args))
    assert done.returncode == ExitCode.USAGE, done
    [line] = [x for x in done.stderr.splitlines() if x.startswith("sbredis worker: ")]
    assert message in line


def test_a_metrics_port_in_use_is_a_fatal_error(redis_server: RedisServer) -> None:
    url = redis_server.url
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = worker(HANDLER, "--url", url, "--entity", "q", "--metrics-port", str(port))
    assert done.returncode == ExitCode.ERROR, done
    assert f"cannot serve metrics on 127.0.0.1:{port}" in done.stderr
