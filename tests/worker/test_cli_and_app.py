"""`sbredis worker` as a subprocess (SIGTERM drain, SIGINT twice, exit codes) and the App registry."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import redis

from sbredis import ServiceBusMessage, ServiceBusSubQueue
from sbredis.exceptions import InvalidArgumentError, InvalidOperationError
from sbredis.worker import App, ExitCode
from tests.conftest import eventually

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def log_key() -> str:
    return "wl-" + uuid.uuid4().hex


@pytest.fixture()
def records(url: str, log_key: str) -> Callable[[], list[str]]:
    r = redis.Redis.from_url(url, decode_responses=True)
    return lambda: list(r.lrange(log_key, 0, -1))


@pytest.fixture()
def cli(url: str, log_key: str) -> Iterator[Callable[..., subprocess.Popen[str]]]:
    procs: list[subprocess.Popen[str]] = []

    def run(*args: str, queue: str = "tasks") -> subprocess.Popen[str]:
        env = dict(
            os.environ,
            SBREDIS_TEST_REDIS=url,
            SBREDIS_TEST_URL=url,
            SBREDIS_TEST_KEY=log_key,
            SBREDIS_TEST_QUEUE=queue,
            PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
        )
        cmd = [sys.executable, "-m", "sbredis", "worker", *args]
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        procs.append(proc)
        return proc

    yield run
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait(10)
        if p.stdout is not None:
            p.stdout.close()


def send(client: Any, queue: str, *bodies: str) -> None:
    with client.get_queue_sender(queue) as s:
        s.send_messages([ServiceBusMessage(b) for b in bodies])


def finish(proc: subprocess.Popen[str], timeout: float = 20) -> tuple[int, str]:
    out, _ = proc.communicate(timeout=timeout)
    return proc.returncode, out


def test_cli_runs_a_function_and_drains_on_sigterm(
    cli: Any, url: str, make_queue: Any, client: Any, admin: Any, records: Any
) -> None:
    q = make_queue(max_delivery_count=5)
    send(client, q, "a", "fail", "sleep 1.5")
    proc = cli("tests.worker.handlers:handle", "--entity", q, "--url", url, "--concurrency", "4")
    eventually(lambda: "start sleep 1.5 1" in records() and "done a" in records(), timeout=20)
    proc.send_signal(signal.SIGTERM)
    code, out = finish(proc)
    assert code == ExitCode.OK, out
    assert "done sleep 1.5" in records()  # finished within the grace period
    props = admin.get_queue_runtime_properties(q)
    # "fail" was abandoned each time: still there, or dead-lettered once it reached
    # max_delivery_count while "sleep 1.5" ran (abandoned messages come back at once) - never lost
    assert props.active_message_count + props.dead_letter_message_count == 1


def test_cli_dead_letter_on(cli: Any, url: str, make_queue: Any, client: Any, records: Any) -> None:
    q = make_queue(max_delivery_count=5)
    send(client, q, "fail")
    proc = cli("tests.worker.handlers:handle", "--entity", q, "--url", url, "--dead-letter-on", "builtins:KeyError")

    def dead() -> list[Any]:
        with client.get_queue_receiver(q, sub_queue=ServiceBusSubQueue.DEAD_LETTER) as dlq:
            return list(dlq.peek_messages(5, sequence_number=0))

    (dl,) = eventually(dead, timeout=20)
    assert dl.dead_letter_reason == "KeyError"
    proc.send_signal(signal.SIGTERM)
    assert finish(proc)[0] == ExitCode.OK


def test_cli_retries_with_backoff_then_dead_letters(
    cli: Any, url: str, make_queue: Any, client: Any, records: Any
) -> None:
    q = make_queue(max_delivery_count=10)
    send(client, q, "fail")
    args = ("--retry-backoff", "0.05", "--retry-factor", "1", "--retry-jitter", "0.5", "--max-retries", "2")
    proc = cli("tests.worker.handlers:handle", "--entity", q, "--url", url, *args)

    def dead() -> list[Any]:
        with client.get_queue_receiver(q, sub_queue=ServiceBusSubQueue.DEAD_LETTER) as dlq:
            return list(dlq.peek_messages(5, sequence_number=0))

    (dl,) = eventually(dead, timeout=20)
    assert dl.dead_letter_reason == "MaxRetriesExceeded" and dl.delivery_count == 2
    assert records() == ["start fail 1", "start fail 2", "start fail 3"]
    proc.send_signal(signal.SIGTERM)
    assert finish(proc)[0] == ExitCode.OK
    code, out = finish(cli("tests.worker.handlers:handle", "--entity", q, "--url", url, "--retry-jitter", "2"))
    assert code == ExitCode.USAGE and "jitter" in out


def test_cli_sigint_twice_forces(cli: Any, url: str, make_queue: Any, client: Any, records: Any) -> None:
    q = make_queue()
    send(client, q, "sleep 60")
    proc = cli("tests.worker.handlers:handle", "--entity", q, "--url", url, "--grace-period", "60")
    eventually(lambda: "start sleep 60 1" in records(), timeout=20)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.5)
    assert proc.poll() is None  # draining: waits for the handler
    proc.send_signal(signal.SIGINT)
    code, out = finish(proc)
    assert code == ExitCode.FORCED, out
    with client.get_queue_receiver(q) as r:  # abandoned: available at once
        (m,) = r.receive_messages(1, max_wait_time=2)
        assert m.delivery_count == 1


def test_cli_grace_period_expiry(cli: Any, url: str, make_queue: Any, client: Any, records: Any) -> None:
    q = make_queue()
    send(client, q, "sleep 60")
    proc = cli("tests.worker.handlers:handle", "--entity", q, "--url", url, "--grace-period", "0.5")
    eventually(lambda: "start sleep 60 1" in records(), timeout=20)
    proc.send_signal(signal.SIGTERM)
    assert finish(proc)[0] == ExitCode.GRACE_EXPIRED


def test_cli_usage_errors(cli: Any, url: str, make_queue: Any) -> None:
    for args in (
        ("tests.worker.no_such_module:handle", "--entity", "q", "--url", url),
        ("tests.worker.handlers:handle", "--url", url),
        ("tests.worker.handlers:handle", "--entity", "q", "--session-idle-timeout", "-1", "--url", url),
    ):
        code, out = finish(cli(*args))
        assert code == ExitCode.USAGE, out
    code, out = finish(cli("tests.worker.handlers:handle", "--entity", "no-such-queue", "--url", url))
    assert code == ExitCode.ERROR and "no-such-queue" in out
    q = make_queue()
    code, out = finish(cli("tests.worker.handlers:handle", "--entity", q, "--session", "--url", url))
    assert code == ExitCode.ERROR and "does not require sessions; omit --session" in out
    help_text = subprocess.run(
        [sys.executable, "-m", "sbredis", "worker", "--help"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    assert "--session " in help_text and "not supported yet" not in help_text


def test_cli_session_worker_keeps_each_session_in_order(
    cli: Any, url: str, make_queue: Any, client: Any, admin: Any, records: Any
) -> None:
    q = make_queue(requires_session=True, enable_partitioning=True)
    sessions = ("a", "b", "c")
    with client.get_queue_sender(q) as s:
        for i in range(5):
            s.send_messages([ServiceBusMessage(f"{sid}-{i}", session_id=sid) for sid in sessions])
    proc = cli(
        "tests.worker.handlers:handle", "--entity", q, "--session", "--url", url, "--concurrency", "2",
        "--session-idle-timeout", "0.3",
    )  # fmt: skip
    eventually(lambda: sum(r.startswith("done") for r in records()) == 15, timeout=30)
    proc.send_signal(signal.SIGTERM)
    code, out = finish(proc)
    assert code == ExitCode.OK, out
    for sid in sessions:  # each session's handlers ran one after another, in send order
        mine = [r for r in records() if r.split()[1].startswith(sid + "-")]
        expected = []
        for i in range(5):
            expected += [f"start {sid}-{i} 1", f"done {sid}-{i}"]
        assert mine == expected
    assert admin.get_queue_runtime_properties(q).active_message_count == 0


def test_cli_runs_an_app(cli: Any, url: str, make_queue: Any, records: Any) -> None:
    q = make_queue()
    app = App(url)
    add = app.task(entity=q, name="add")(lambda a, b: None)
    add.send(2, b=3)
    proc = cli("tests.worker.handlers:app", queue=q)  # the app's tasks use one queue: no --entity
    eventually(lambda: records() == ["add 5"], timeout=20)
    proc.send_signal(signal.SIGTERM)
    assert finish(proc)[0] == ExitCode.OK
    app.close()


def test_app_registry(url: str, make_queue: Any, client: Any) -> None:
    q = make_queue(max_delivery_count=5)
    with App(url) as app:
        done: list[Any] = []

        @app.task(entity=q)
        def mul(a: int, b: int = 1) -> int:
            done.append(("mul", a * b))
            return a * b

        @app.task(entity=q, name="picky", dead_letter_on=ValueError)
        async def picky(x: int) -> None:
            if x < 0:
                raise ValueError("negative")
            done.append(("picky", x))

        assert mul(3, b=4) == 12 and done == [("mul", 12)]
        assert mul.name.endswith("mul") and repr(mul).startswith("<Task")
        with pytest.raises(InvalidArgumentError):
            app.task(entity=q, name="picky")(lambda: None)
        with pytest.raises(InvalidArgumentError):
            mul.send(object())
        msg = mul.message(2, b=5)
        assert msg.subject == mul.name and msg.content_type == "application/json"

        mul.send(2, b=5)
        picky.send(7)
        picky.send(-1)
        seq = mul.send_at(datetime.now(UTC) + timedelta(seconds=1), 10)
        assert seq > 0
        with client.get_queue_sender(q) as s:
            s.send_messages(ServiceBusMessage("{}", subject="nobody"))

        worker = app.worker(poll_interval=0.2)
        assert worker.entity == q
        t = threading.Thread(target=worker.run, kwargs={"handle_signals": False}, daemon=True)
        t.start()
        eventually(lambda: worker.stats["completed"] == 3 and worker.stats["dead_lettered"] == 2, timeout=15)
        worker.stop()
        t.join(10)
        assert sorted(done) == [("mul", 10), ("mul", 10), ("mul", 12), ("picky", 7)]
        with client.get_queue_receiver(q, sub_queue=ServiceBusSubQueue.DEAD_LETTER) as dlq:
            reasons = sorted(m.dead_letter_reason for m in dlq.peek_messages(5, sequence_number=0))
        assert reasons == ["UnknownTask", "ValueError"]

        other = App(url)
        other.task(entity=q, name="a")(print)
        other.task(entity="elsewhere", name="b")(print)
        with pytest.raises(InvalidOperationError):
            other.worker()
