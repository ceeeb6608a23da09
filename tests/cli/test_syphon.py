"""`sbredis syphon` as real subprocesses: two at once move a backlog to the primary, each message once;
`sbredis siphon` is its deprecated alias."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator

import pytest

from sbredis import SendAvailabilityPairedNamespaceOptions, ServiceBusClient, ServiceBusMessage
from sbredis.management import ServiceBusAdministrationClient
from tests.cli.conftest import ROOT, run_cli
from tests.conftest import eventually
from tests.redis_server import RedisServer


@pytest.fixture()
def servers() -> Iterator[tuple[RedisServer, RedisServer]]:
    primary = RedisServer("--appendonly", "yes", "--appendfsync", "always").start()
    secondary = RedisServer().start()
    yield primary, secondary
    primary.stop()
    secondary.stop()


def syphon(primary: str, secondary: str) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    cmd = [sys.executable, "-m", "sbredis", "syphon", "--json", "--url", primary, "--secondary", secondary]
    cmd += ["--backlog-queue-count", "2", "--poll-interval", "0.05", "--duration", "60"]
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_two_syphon_commands_move_the_backlog_once_and_stop_on_sigterm(
    servers: tuple[RedisServer, RedisServer],
) -> None:
    primary, secondary = servers
    with ServiceBusAdministrationClient(primary.url) as a:
        a.create_queue("orders")
    options = SendAvailabilityPairedNamespaceOptions(
        secondary=secondary.url, backlog_queue_count=2, failover_interval=0
    )
    with ServiceBusClient(primary.url, paired_namespace=options, retry_total=0) as c:
        senders = [c.get_queue_sender("orders") for _ in range(4)]
        senders[0].send_messages(ServiceBusMessage("warm"))
        primary.kill()
        for i in range(200):
            senders[i % 4].send_messages(ServiceBusMessage(str(i)))
        for s in senders:
            s.close()
    primary.start()
    procs = [syphon(primary.url, secondary.url) for _ in range(2)]
    try:
        for p in procs:  # each says so once it runs (and SIGTERM stops it cleanly)
            assert p.stderr is not None and "syphon running" in p.stderr.readline()
        with ServiceBusAdministrationClient(primary.url) as a:
            eventually(lambda: a.get_queue_runtime_properties("orders").active_message_count == 201, 30, 0.1)
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
        outputs = [p.communicate(timeout=30) for p in procs]
    for p, (_, err) in zip(procs, outputs, strict=True):
        assert p.returncode == 0, err[-2000:]
    sent = [json.loads(out)["siphon_messages_sent"] for out, _ in outputs]
    assert sum(sent) == 200
    with ServiceBusClient(primary.url) as c, c.get_queue_receiver("orders") as r:
        got = []
        while batch := r.receive_messages(100, max_wait_time=0.5):
            got += [str(m) for m in batch]
            r.complete_messages(batch)
    assert sorted(got) == sorted(["warm", *map(str, range(200))])  # none lost, none doubled


def test_syphon_needs_a_secondary() -> None:
    r = run_cli("syphon", url="redis://127.0.0.1:1/0")
    assert r.code == 2 and "--secondary" in r.err
    assert "deprecated" not in r.err


def test_siphon_is_a_deprecated_alias_that_says_so_on_stderr() -> None:
    r = run_cli("siphon", url="redis://127.0.0.1:1/0")
    assert r.code == 2 and "--secondary" in r.err  # the same command and options
    assert "`sbredis siphon` is deprecated: use `sbredis syphon`" in r.err
    assert r.out == ""
