"""Prometheus: `sbredis metrics` as a subprocess scraped over HTTP (gauges against the queue's real
counts), refresh caching, a Redis that goes away, and the client counters in-process."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from sbredis import ServiceBusClient, ServiceBusMessage
from sbredis.exceptions import MessageLockLostError
from sbredis.management import ServiceBusAdministrationClient
from sbredis.observability import prometheus
from sbredis.observability.exporter import serve_metrics
from sbredis.worker import Worker
from tests.conftest import eventually
from tests.redis_server import RedisServer, free_port

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]


def scrape(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of /metrics as {(name, sorted labels): value}."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        assert r.status == 200
        text = r.read().decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def gauges(samples: dict[Any, float], entity: str) -> dict[str, float]:
    """The sbredis_entity_* gauges of one entity, by short name."""
    return {
        name.removeprefix("sbredis_entity_"): value
        for (name, labels), value in samples.items()
        if name.startswith("sbredis_entity_") and labels == (("entity", entity),)
    }


def try_scrape(port: int) -> dict[Any, float] | None:
    try:
        return scrape(port)
    except OSError:
        return None


@pytest.fixture()
def metrics_process(url: str) -> Iterator[Callable[..., int]]:
    procs: list[subprocess.Popen[bytes]] = []

    def start(*args: str) -> int:
        port = free_port()
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        cmd = [sys.executable, "-m", "sbredis", "metrics", "--port", str(port), "--url", url, *args]
        procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE))
        eventually(lambda: try_scrape(port) is not None, timeout=15)
        return port

    yield start
    for p in procs:
        p.send_signal(signal.SIGTERM)
        try:
            assert p.wait(10) == 0, p.stderr.read().decode() if p.stderr else ""
        finally:
            if p.poll() is None:
                p.kill()


def test_entity_gauges_match_the_queue(
    metrics_process: Callable[..., int], client: Any, admin: Any, make_queue: Callable[..., str]
) -> None:
    q = make_queue(enable_partitioning=True, partition_count=2)
    with client.get_queue_sender(q) as sender:
        sender.send_messages([ServiceBusMessage(f"m{i}") for i in range(6)])
        sender.schedule_messages(ServiceBusMessage("later"), datetime.now(UTC) + timedelta(hours=1))
    port = metrics_process("--max-age", "0")
    before = gauges(scrape(port), q)
    assert before == {
        "active_messages": 6,
        "locked_messages": 0,
        "deferred_messages": 0,
        "scheduled_messages": 1,
        "dead_lettered_messages": 0,
        "size_bytes": before["size_bytes"],
        "partitions": 2,
        "partitions_unreachable": 0,
    }
    assert before["size_bytes"] > 0
    with client.get_queue_receiver(q, max_wait_time=2) as receiver:
        got: list[Any] = []
        while len(got) < 4:
            got += receiver.receive_messages(4 - len(got))
        receiver.dead_letter_message(got[0], reason="bad")
        receiver.complete_message(got[1])
        receiver.defer_message(got[2])  # got[3] stays locked
        after = gauges(scrape(port), q)
        props = admin.get_queue_runtime_properties(q)
        assert after["active_messages"] == props.active_message_count == 4
        assert after["dead_lettered_messages"] == props.dead_letter_message_count == 1
        assert after["scheduled_messages"] == props.scheduled_message_count == 1
        assert after["locked_messages"] == sum(p.locked_message_count for p in props.partitions) == 1
        assert after["deferred_messages"] == 1
        assert after["size_bytes"] == props.size_in_bytes
    assert scrape(port)[("sbredis_up", ())] == 1


def test_subscriptions_and_the_entity_filter(metrics_process: Callable[..., int], client: Any, admin: Any) -> None:
    admin.create_queue("metrics-other")
    admin.create_topic("metrics-t")
    try:
        admin.create_subscription("metrics-t", "a")
        with client.get_topic_sender("metrics-t") as sender:
            sender.send_messages([ServiceBusMessage("1"), ServiceBusMessage("2")])
        sub = "metrics-t/Subscriptions/a"
        port = metrics_process("--entity", sub, "--max-age", "0")
        samples = scrape(port)
        assert gauges(samples, sub)["active_messages"] == 2
        assert gauges(samples, "metrics-other") == {}  # not asked for
        assert gauges(samples, "metrics-t") == {}  # topics hold no messages of their own
        everything = scrape(metrics_process())
        assert gauges(everything, sub)["active_messages"] == 2
        assert gauges(everything, "metrics-other")["active_messages"] == 0
    finally:
        admin.delete_topic("metrics-t")
        admin.delete_queue("metrics-other")


def test_refreshes_are_cached_and_a_lost_redis_reads_as_down() -> None:
    server = RedisServer().start()
    try:
        with ServiceBusAdministrationClient.from_connection_string(server.url) as admin:
            admin.create_queue("cached")
        registry = CollectorRegistry()
        exporter = serve_metrics(server.url, 0, max_age=2.0, registry=registry)
        try:
            assert gauges(scrape(exporter.port), "cached")["active_messages"] == 0
            with ServiceBusClient.from_connection_string(server.url) as c, c.get_queue_sender("cached") as s:
                s.send_messages(ServiceBusMessage("x"))
            assert gauges(scrape(exporter.port), "cached")["active_messages"] == 0  # within max_age
            eventually(lambda: gauges(scrape(exporter.port), "cached").get("active_messages") == 1)
            server.stop()
            down = eventually(lambda: (s := scrape(exporter.port))[("sbredis_up", ())] == 0 and s)
            assert gauges(down, "cached") == {}
        finally:
            exporter.close()
    finally:
        if server.proc is not None and server.proc.poll() is None:
            server.stop()


@pytest.fixture()
def registry() -> Iterator[CollectorRegistry]:
    reg = CollectorRegistry()
    prometheus.enable(reg)
    yield reg
    prometheus.disable()


def value(registry: CollectorRegistry, name: str, **labels: str) -> float:
    return registry.get_sample_value(name, labels) or 0.0


def test_client_counters(registry: CollectorRegistry, client: Any, make_queue: Callable[..., str]) -> None:
    q = make_queue(lock_duration=timedelta(seconds=1))
    with client.get_queue_sender(q) as sender:
        sender.send_messages([ServiceBusMessage(str(i)) for i in range(5)])
        sender.send_messages(ServiceBusMessage("one"))
    with client.get_queue_receiver(q, max_wait_time=2) as receiver:
        got: list[Any] = []
        while len(got) < 6:
            got += receiver.receive_messages(6 - len(got))
        receiver.complete_messages(got[:2])
        receiver.abandon_message(got[2])
        receiver.dead_letter_message(got[3])
        time.sleep(1.2)  # the last two locks elapse
        with pytest.raises(MessageLockLostError):
            receiver.complete_messages(got[4:])
        assert receiver.receive_messages(1, max_wait_time=0.2) != []  # drain one more for the count

    assert value(registry, "sbredis_client_sent_messages_total", entity=q, outcome="ok") == 6
    assert value(registry, "sbredis_client_received_messages_total", entity=q) == 7
    settled = "sbredis_client_settled_messages_total"
    assert value(registry, settled, entity=q, disposition="complete", outcome="ok") == 2
    assert value(registry, settled, entity=q, disposition="complete", outcome="lock_lost") == 2
    assert value(registry, settled, entity=q, disposition="abandon", outcome="ok") == 1
    assert value(registry, settled, entity=q, disposition="dead_letter", outcome="ok") == 1
    assert value(registry, "sbredis_client_lock_lost_total", entity=q, operation="complete") == 2
    duration = "sbredis_client_operation_duration_seconds_count"
    assert value(registry, duration, operation="send", entity=q, outcome="ok") == 2
    assert value(registry, duration, operation="complete", entity=q, outcome="lock_lost") == 1
    total = "sbredis_client_operation_duration_seconds_sum"
    assert value(registry, total, operation="send", entity=q, outcome="ok") > 0
    # no label carries a message id
    for metric in registry.collect():
        for sample in metric.samples:
            assert not any(m.message_id in sample.labels.values() for m in got)


def test_failed_sends_and_worker_processing(
    registry: CollectorRegistry, url: str, client: Any, make_queue: Callable[..., str]
) -> None:
    with client.get_queue_sender("metrics-missing") as sender, pytest.raises(Exception):  # noqa: B017
        sender.send_messages(ServiceBusMessage("x"))
    sent = "sbredis_client_sent_messages_total"
    assert value(registry, sent, entity="metrics-missing", outcome="MessagingEntityNotFoundError") == 1

    q = make_queue()
    with client.get_queue_sender(q) as sender:
        sender.send_messages([ServiceBusMessage("ok"), ServiceBusMessage("bad")])

    def handle(m: Any) -> None:
        if m.body_bytes == b"bad":
            raise KeyError("bad")

    worker = Worker(url, handle, entity=q, poll_interval=0.2, dead_letter_on=KeyError)
    t = threading.Thread(target=worker.run, kwargs={"handle_signals": False}, daemon=True)
    t.start()
    try:
        processed = "sbredis_client_operation_duration_seconds_count"
        eventually(
            lambda: (
                value(registry, processed, operation="process", entity=q, outcome="ok") == 1
                and value(registry, processed, operation="process", entity=q, outcome="error") == 1
            ),
            timeout=10,
        )
    finally:
        worker.stop()
        t.join(10)
    settled = "sbredis_client_settled_messages_total"
    assert value(registry, settled, entity=q, disposition="complete", outcome="ok") == 1
    assert value(registry, settled, entity=q, disposition="dead_letter", outcome="ok") == 1


def test_metrics_command_usage_errors(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    from sbredis.cli import main

    assert main(["metrics", "--port", "70000", "--url", url]) == 2
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["metrics", "--port", str(port), "--url", "redis://u:s3cret@127.0.0.1:1/0"]) == 1
    err = capsys.readouterr().err
    assert f"cannot listen on 127.0.0.1:{port}" in err and "s3cret" not in err


def test_worker_serves_its_client_metrics(url: str, client: Any, make_queue: Callable[..., str]) -> None:
    q = make_queue(max_delivery_count=1)  # the failing message is abandoned once, then dead-lettered
    port = free_port()
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "SBREDIS_TEST_REDIS": url,
        "SBREDIS_TEST_KEY": f"obs-{q}",
    }
    cmd = [sys.executable, "-m", "sbredis", "worker", "tests.worker.handlers:handle", "--entity", q, "--url", url]
    proc = subprocess.Popen([*cmd, "--metrics-port", str(port)], env=env, cwd=ROOT, stderr=subprocess.PIPE)
    try:
        with client.get_queue_sender(q) as sender:
            sender.send_messages([ServiceBusMessage("a"), ServiceBusMessage("b"), ServiceBusMessage("fail")])
        process = ("sbredis_client_operation_duration_seconds_count", (("entity", q), ("operation", "process")))

        def processed() -> dict[str, float] | None:
            samples = try_scrape(port) or {}
            found = {
                dict(labels)["outcome"]: v
                for (name, labels), v in samples.items()
                if (name, tuple(x for x in labels if x[0] != "outcome")) == process
            }
            return found if found == {"ok": 2.0, "error": 1.0} else None

        eventually(processed, timeout=20)
        samples = scrape(port)
        settled = "sbredis_client_settled_messages_total"
        key = (("disposition", "complete"), ("entity", q), ("outcome", "ok"))
        assert samples[(settled, key)] == 2
        assert samples[(settled, (("disposition", "abandon"), ("entity", q), ("outcome", "ok")))] == 1
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(20)
        if proc.stderr is not None:
            proc.stderr.close()
    assert code == 0  # drained and stopped on SIGTERM
