"""A real Celery worker (a subprocess, solo pool) on sbredis://: success, retry, ETA, failure to
dead-letter, a long task kept locked, SIGKILL with a task in flight, and `celery inspect ping`."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("celery")

import redis

from sbredis import ServiceBusClient, ServiceBusSubQueue
from sbredis.management import ServiceBusAdministrationClient
from tests.conftest import eventually
from tests.contrib.celery_app import create_app
from tests.redis_server import RedisServer

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
APP = "tests.contrib.celery_app"


class Env:
    def __init__(self, url: str) -> None:
        self.url = url
        self.broker = "sbredis" + url[len("redis") :]
        self.queue = "cq-" + uuid.uuid4().hex[:10]
        self.redis = redis.Redis.from_url(url, decode_responses=True)
        self.procs: list[tuple[subprocess.Popen[bytes], Any]] = []
        self.extra: dict[str, str] = {}

    def environ(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            SBREDIS_TEST_BROKER=self.broker,
            SBREDIS_TEST_REDIS=self.url,
            SBREDIS_TEST_QUEUE=self.queue,
            PYTHONPATH=str(ROOT) + os.pathsep + env.get("PYTHONPATH", ""),
        )
        env.update(self.extra)
        return env

    def worker(self, name: str, pool: str = "solo") -> subprocess.Popen[bytes]:
        log = tempfile.TemporaryFile()  # noqa: SIM115 (closed in stop())
        args = [
            *(sys.executable, "-m", "celery", "-A", APP, "worker", "--pool", pool, "-Q", self.queue),
            *("-n", f"{name}@{self.queue}", "--without-gossip", "--without-mingle", "--without-heartbeat"),
            *("--loglevel", "INFO"),
            *(("--concurrency", "2") if pool == "prefork" else ()),
        ]
        proc = subprocess.Popen(args, cwd=ROOT, env=self.environ(), stdout=log, stderr=subprocess.STDOUT)
        self.procs.append((proc, log))
        return proc

    def monitor(self) -> subprocess.Popen[bytes]:
        """An event monitor (what Flower runs): it consumes a celeryev.<uuid> queue of its own."""
        code = (
            f"from {APP} import app\n"
            "with app.connection_for_read() as conn:\n"
            "    app.events.Receiver(conn, handlers={'*': print}).capture(limit=None)\n"
        )
        log = tempfile.TemporaryFile()  # noqa: SIM115 (closed in stop())
        proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, env=self.environ(), stdout=log, stderr=log)
        self.procs.append((proc, log))
        return proc

    def app(self) -> Any:
        return create_app(self.broker, self.queue)

    def records(self, key: str) -> list[str]:
        return list(self.redis.lrange(key, 0, -1))

    def logs(self) -> str:
        out = []
        for proc, log in self.procs:
            log.seek(0)
            out.append(f"--- worker pid {proc.pid} (exit {proc.poll()}) ---\n" + log.read().decode(errors="replace"))
        return "\n".join(out)

    def stop(self) -> None:
        """SIGTERM (Celery's warm shutdown), then SIGKILL for a process still there after 5 s: a
        process that exits saves its coverage data, a killed one loses all of it."""
        for proc, _ in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc, log in self.procs:
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.send_signal(signal.SIGKILL)
                proc.wait(10)
            log.close()


@pytest.fixture(scope="module")
def server() -> Iterator[RedisServer]:
    srv = RedisServer().start()
    yield srv
    srv.stop()


@pytest.fixture()
def env(server: RedisServer) -> Iterator[Env]:
    e = Env(server.url)
    yield e
    e.stop()


@pytest.fixture(scope="module")
def shared(server: RedisServer) -> Iterator[Env]:
    """One worker for the tests that do not kill it."""
    e = Env(server.url)
    e.worker("w")
    yield e
    e.stop()


def wait_for(check: Callable[[], Any], env: Env, timeout: float = 20.0) -> Any:
    try:
        return eventually(check, timeout=timeout, interval=0.05)
    except AssertionError:
        print(env.logs())
        raise


def test_success_retry_and_countdown(shared: Env) -> None:
    app, key = shared.app(), "k-" + uuid.uuid4().hex
    app.send_task("t.ok", args=[key, "a"])
    app.send_task("t.flaky", args=[key])
    app.send_task("t.ok", args=[key, "later"], countdown=1.5)
    with ServiceBusAdministrationClient.from_connection_string(shared.url) as admin:
        # The countdown task waits in sbredis as a scheduled message, not in the worker.
        assert admin.get_queue_runtime_properties(shared.queue).scheduled_message_count >= 1
    sent = time.monotonic()
    wait_for(lambda: len(shared.records(key)) >= 4, shared)
    got = shared.records(key)
    assert sorted(got) == sorted(["a", "try 0", "try 1", "later"])
    assert got.index("try 0") < got.index("try 1")
    assert time.monotonic() - sent > 0.5


def test_failure_is_dead_lettered(shared: Env) -> None:
    app, key = shared.app(), "k-" + uuid.uuid4().hex
    app.send_task("t.boom", args=[key])
    with ServiceBusClient.from_connection_string(shared.url) as client:

        def dead() -> list[Any]:
            with client.get_queue_receiver(shared.queue, sub_queue=ServiceBusSubQueue.DEAD_LETTER) as dlq:
                return [m for m in dlq.peek_messages(10, sequence_number=0) if m.subject == "t.boom"]

        (dl,) = wait_for(dead, shared)
    assert dl.dead_letter_reason == "Rejected"
    assert shared.records(key) == ["boom"]


def test_a_long_task_keeps_its_lock(shared: Env) -> None:
    app, key = shared.app(), "k-" + uuid.uuid4().hex
    app.send_task("t.sleepy", args=[key, 3.0])  # the lock is 1 s: renewed while the task runs
    wait_for(lambda: "done" in shared.records(key), shared)
    time.sleep(1.5)
    starts = [r for r in shared.records(key) if r.startswith("start")]
    assert len(starts) == 1 and starts[0].endswith("False")


def test_inspect_ping(shared: Env) -> None:
    args = [sys.executable, "-m", "celery", "-A", APP, "inspect", "ping", "--timeout", "2", "--json"]
    args += ["-d", f"w@{shared.queue}"]

    def ping() -> str:
        r = subprocess.run(args, cwd=ROOT, env=shared.environ(), capture_output=True, text=True, timeout=60)
        return r.stdout if r.returncode == 0 and "pong" in r.stdout else ""

    out = wait_for(ping, shared, timeout=40)
    assert f"w@{shared.queue}" in out
    with ServiceBusAdministrationClient.from_connection_string(shared.url) as admin:
        names = [q.name for q in admin.list_queues()]
    assert any(n.startswith(f"w_{shared.queue}.celery.pidbox-") for n in names)  # the worker's mailbox
    assert not [n for n in names if n.endswith("reply.celery.pidbox")]  # the client deleted its reply queue


def test_sigkill_in_flight_is_redelivered_once(env: Env) -> None:
    app, key = env.app(), "k-" + uuid.uuid4().hex
    app.send_task("t.slow", args=[key])
    first = env.worker("first")
    wait_for(lambda: env.records(key), env, timeout=30)
    assert env.records(key) == [f"start {first.pid} False 1"]
    first.send_signal(signal.SIGKILL)
    first.wait(10)
    second = env.worker("second")
    wait_for(lambda: f"done {second.pid}" in env.records(key), env, timeout=30)
    time.sleep(2.5)  # two more lock durations: nothing else may run
    assert env.records(key) == [f"start {first.pid} False 1", f"start {second.pid} True 2", f"done {second.pid}"]
    with ServiceBusAdministrationClient.from_connection_string(env.url) as admin:
        props = admin.get_queue_runtime_properties(env.queue)
    assert props.active_message_count == 0 and props.dead_letter_message_count == 0


def test_the_queues_of_killed_processes_are_deleted(env: Env) -> None:
    env.extra = {"SBREDIS_MIN_AUTO_DELETE_ON_IDLE": "1", "SBREDIS_TEST_IDLE": "2"}
    admin = ServiceBusAdministrationClient.from_connection_string(env.url)

    def queues(prefix: str) -> set[str]:
        return {q.name for q in admin.list_queues() if q.name.startswith(prefix)}

    with admin:
        before = queues("celeryev.")
        monitor, first = env.monitor(), env.worker("first")
        theirs = wait_for(lambda: queues("celeryev.") - before, env, timeout=30)
        theirs |= wait_for(lambda: queues(f"first_{env.queue}.celery.pidbox-"), env, timeout=30)
        for proc in (monitor, first):
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)
        env.worker("second")  # any live connection deletes idle queues
        wait_for(lambda: queues(f"second_{env.queue}.celery.pidbox-"), env, timeout=30)
        wait_for(lambda: not (queues("") & theirs), env, timeout=30)
        time.sleep(3)  # over the idle time: the live worker's queue stays
        assert queues(f"second_{env.queue}.celery.pidbox-")


def test_delivery_count_and_a_killed_prefork_child(env: Env) -> None:
    """A prefork child killed mid-task: the task is requeued (abandoned) and runs again."""
    app, key = env.app(), "k-" + uuid.uuid4().hex
    env.worker("pf", pool="prefork")
    app.send_task("t.slow", args=[key])
    wait_for(lambda: env.records(key), env, timeout=30)
    (start,) = env.records(key)
    assert start.endswith(" False 1")
    os.kill(int(start.split()[1]), signal.SIGKILL)  # the child that runs it
    wait_for(lambda: any(r.startswith("done") for r in env.records(key)), env, timeout=30)
    assert env.records(key)[1].endswith(" True 2")


@pytest.mark.parametrize("pool", ["solo", "prefork"])
def test_every_acknowledged_task_is_completed(env: Env, pool: str) -> None:
    """Acks made in Celery's event loop are completed in batches (one script call for many):
    each task runs once and the queue is left empty, including the last tasks of a burst, whose
    acks no later delivery takes along."""
    app, key = env.app(), "k-" + uuid.uuid4().hex
    env.worker("batch", pool=pool)
    for i in range(60):
        app.send_task("t.ok", args=[key, str(i)])
    wait_for(lambda: len(env.records(key)) >= 60, env, timeout=60)
    with ServiceBusAdministrationClient.from_connection_string(env.url) as admin:
        eventually(lambda: admin.get_queue_runtime_properties(env.queue).active_message_count == 0, timeout=10)
    assert sorted(env.records(key), key=int) == [str(i) for i in range(60)]
