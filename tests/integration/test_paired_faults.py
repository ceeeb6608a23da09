"""Paired namespaces when more than the primary fails, through both APIs (the sync client, and
sbredis.aio behind tests/sync_over_async.py): a secondary that is down or goes
away, wrong credentials for it, and backlog messages the syphon can never deliver
(docs/paired-namespaces.md). Each test starts its own two redis-server processes (``Pair``).
"""

from __future__ import annotations

import logging
import re
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from sbredis import SendAvailabilityPairedNamespaceOptions, ServiceBusClient, ServiceBusMessage
from sbredis.exceptions import ServiceBusError
from sbredis.paired import PATH
from tests.conftest import eventually
from tests.integration.test_paired import FAST, Pair, drain
from tests.redis_server import RedisServer

pytestmark = [pytest.mark.integration, pytest.mark.parametrize("api", ["sync", "async"], indirect=True)]


@pytest.fixture()
def pair() -> Iterator[Pair]:
    p = Pair()
    yield p
    p.stop()


def paired_client(sb_api: Any, pair: Pair, **options: Any) -> Any:
    return sb_api.ServiceBusClient(pair.primary.url, paired_namespace=pair.options(**options), **FAST)


def logged(caplog: pytest.LogCaptureFixture, text: str) -> bool:
    return any(text in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("backlog_ready", [False, True], ids=["backlog-not-created", "backlog-created"])
def test_with_both_namespaces_down_a_send_fails_and_pings_go_on_until_the_primary_is_back(
    sb_api: Any, pair: Pair, backlog_ready: bool
) -> None:
    with pair.admin() as a:
        a.create_queue("orders")
    with paired_client(sb_api, pair) as c:
        paired = c.paired_namespace
        if backlog_ready:
            paired.create_backlog_queues()
        s = c.get_queue_sender("orders")
        s.send_messages(ServiceBusMessage("before"))
        pair.secondary.kill()
        pair.primary.kill()
        with pytest.raises(ServiceBusError):
            s.send_messages(ServiceBusMessage("lost"))  # neither the primary nor a backlog queue took it
        assert paired.unavailable_entities == ["orders"]
        eventually(lambda: paired.metrics.ping_failures >= 1, timeout=10)
        pair.primary.start()
        eventually(lambda: paired.unavailable_entities == [], timeout=10)
        s.send_messages(ServiceBusMessage("after"))
    with ServiceBusClient(pair.primary.url) as pc:
        assert sorted(str(m) for m in drain(pc, "orders", 2)) == ["after", "before"]


def test_a_syphon_waits_for_a_secondary_that_is_down_and_outlives_one_that_goes_away(
    sb_api: Any, pair: Pair, caplog: pytest.LogCaptureFixture
) -> None:
    pair.secondary.kill()
    caplog.set_level(logging.WARNING, "sbredis")
    with paired_client(sb_api, pair, backlog_queue_count=1) as c:
        paired = c.paired_namespace
        with pytest.raises(ServiceBusError):
            paired.start_syphon()
        paired.start_syphon(wait_for_secondary=True)
        assert logged(caplog, "the backlog queues could not be set up yet")
        pair.secondary.start()
        eventually(lambda: paired.metrics.lease_calls >= 1, timeout=10)  # set up, and working
        eventually(lambda: logged(caplog, "the syphon reaches the secondary again"), timeout=10)
        with ServiceBusClient(pair.secondary.url) as sc:
            assert [q.name for q in sc.get_queue_receiver("x-servicebus-transfer/0").peek_messages(1)] == []
        pair.secondary.kill()
        eventually(lambda: logged(caplog, "it cannot reach the secondary and keeps trying"), timeout=10)
        assert paired.syphon_running
    # the client closed although its lease could not be given up (it runs out by itself)


def test_a_secondary_that_goes_away_is_logged_when_it_goes_and_when_it_is_back(
    sb_api: Any, pair: Pair, caplog: pytest.LogCaptureFixture
) -> None:
    """Not once per syphon pass (every 0.05 s here) and backlog queue while it is away."""
    caplog.set_level(logging.INFO, "sbredis")
    with paired_client(sb_api, pair) as c:  # two backlog queues
        paired = c.paired_namespace
        paired.start_syphon()
        eventually(lambda: paired.metrics.lease_calls >= 2, timeout=10)  # both queues are worked on
        pair.secondary.kill()
        eventually(lambda: logged(caplog, "cannot reach the secondary"), timeout=10)
        time.sleep(0.5)  # the syphon's passes go on meanwhile
        pair.secondary.start()
        eventually(lambda: logged(caplog, "reaches the secondary again"), timeout=10)
        records = [r for r in caplog.records if r.name == "sbredis"]
    gone = next(i for i, r in enumerate(records) if "cannot reach the secondary" in r.getMessage())
    back = next(i for i, r in enumerate(records) if "reaches the secondary again" in r.getMessage())
    assert back == gone + 1  # nothing in between
    assert records[gone].levelno == records[back].levelno == logging.WARNING
    assert re.search(r"after \d+ failed passes$", records[back].getMessage())


@pytest.mark.parametrize("retry_total", [0, 2])
def test_setting_up_the_backlog_queues_retries_as_the_client_does(sb_api: Any, retry_total: int) -> None:
    """The admin calls on the secondary follow the client's retry options, as its sends do: a
    listener that closes each connection at once counts the attempts."""
    listener = socket.create_server(("127.0.0.1", 0))
    attempts: list[int] = []

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return  # the listener closed
            attempts.append(1)
            conn.close()

    threading.Thread(target=accept, daemon=True).start()
    options = SendAvailabilityPairedNamespaceOptions(secondary=f"redis://127.0.0.1:{listener.getsockname()[1]}/0")
    try:
        with (
            sb_api.ServiceBusClient(
                "redis://127.0.0.1:1/0", paired_namespace=options, retry_total=retry_total, retry_backoff_factor=0.01
            ) as c,
            pytest.raises(ServiceBusError),
        ):
            c.paired_namespace.create_backlog_queues()
    finally:
        listener.close()
    assert len(attempts) == 1 + retry_total


def test_wrong_credentials_for_the_secondary_fault_it(sb_api: Any, caplog: pytest.LogCaptureFixture) -> None:
    primary = RedisServer().start()
    secondary = RedisServer("--requirepass", "right-password").start()
    try:
        options = SendAvailabilityPairedNamespaceOptions(
            secondary=f"redis://:wrong-password@127.0.0.1:{secondary.port}/0", syphon_poll_interval=0.05
        )
        caplog.set_level(logging.WARNING, "sbredis")
        with sb_api.ServiceBusClient(primary.url, paired_namespace=options, **FAST) as c:
            paired = c.paired_namespace
            paired.start_syphon(wait_for_secondary=True)
            eventually(lambda: paired.secondary_state == "faulted", timeout=10)
            assert logged(caplog, "the secondary side of the paired namespace faulted")
            assert "wrong-password" not in caplog.text
    finally:
        primary.stop()
        secondary.stop()


def test_the_syphon_delivers_to_a_topic_and_dead_letters_what_is_addressed_to_a_subscription(
    sb_api: Any, pair: Pair
) -> None:
    with pair.admin() as a:
        a.create_topic("events")
        a.create_subscription("events", "audit")
    with paired_client(sb_api, pair, backlog_queue_count=1) as c:
        paired = c.paired_namespace
        paired.create_backlog_queues()
        with ServiceBusClient(pair.secondary.url) as sc, sc.get_queue_sender("x-servicebus-transfer/0") as s:
            s.send_messages(
                [
                    ServiceBusMessage("to-topic", application_properties={PATH: "events"}),
                    ServiceBusMessage("to-sub", application_properties={PATH: "events/Subscriptions/audit"}),
                ]
            )
        c.start_syphon()
        eventually(
            lambda: paired.metrics.siphon_messages_sent == 1 and paired.metrics.siphon_dead_lettered == 1, timeout=20
        )
    with ServiceBusClient(pair.secondary.url) as sc:
        with sc.get_queue_receiver("x-servicebus-transfer/0", sub_queue="deadletter") as r:
            dead = r.receive_messages(10, max_wait_time=0.5)
        assert [(str(m), m.dead_letter_reason) for m in dead] == [("to-sub", "InvalidOperationError")]
    with ServiceBusClient(pair.primary.url) as pc, pc.get_subscription_receiver("events", "audit") as r:
        assert [str(m) for m in r.receive_messages(10, max_wait_time=1)] == ["to-topic"]


def test_a_primary_that_is_down_is_logged_by_the_syphon_when_it_goes_and_when_it_is_back(
    sb_api: Any, pair: Pair, caplog: pytest.LogCaptureFixture
) -> None:
    """Backlog messages wait while the primary is down: the syphon says it cannot deliver them
    once, not on every pass (every 0.05 s here), and once when they get through again."""
    with pair.admin() as a:
        a.create_queue("orders")
    caplog.set_level(logging.INFO, "sbredis")
    with paired_client(sb_api, pair, backlog_queue_count=1) as c:
        paired = c.paired_namespace
        paired.create_backlog_queues()
        pair.primary.kill()
        c.get_queue_sender("orders").send_messages(ServiceBusMessage("kept"))  # into the backlog
        paired.start_syphon()
        eventually(lambda: logged(caplog, "cannot reach the primary"), timeout=10)
        passes = paired.metrics.backlog_receives
        eventually(lambda: paired.metrics.backlog_receives >= passes + 5, timeout=10)  # it goes on trying
        pair.primary.start()
        eventually(lambda: logged(caplog, "delivers to the primary again"), timeout=15)
        records = [r.getMessage() for r in caplog.records if r.name == "sbredis"]
    assert sum("could not deliver" in m for m in records) == 1, records
    assert sum("delivers to the primary again" in m for m in records) == 1, records
    back = next(m for m in records if "delivers to the primary again" in m)
    assert re.search(r"after \d+ failed deliveries$", back), back
    with ServiceBusClient(pair.primary.url) as pc:
        assert [str(m) for m in drain(pc, "orders", 1)] == ["kept"]
