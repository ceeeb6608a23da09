"""The retry policy: only retryable errors are retried; a send retried after a lost reply is not
stored twice when duplicate detection is on."""

from __future__ import annotations

import threading
from typing import Any

import pytest
import redis

from sbredis import ServiceBusClient, ServiceBusMessage
from sbredis.exceptions import InvalidArgumentError, MessagingEntityNotFoundError, ServiceBusConnectionError
from sbredis.management import ServiceBusAdministrationClient
from tests.latency_proxy import LatencyProxy
from tests.redis_server import RedisServer

pytestmark = pytest.mark.integration


def stored(url: str, q: str) -> list[str]:
    with ServiceBusClient.from_connection_string(url) as c, c.get_queue_receiver(q) as r:
        return [str(m) for m in r.peek_messages(100, sequence_number=1)]


@pytest.mark.parametrize(
    "options",
    [
        {"retry_total": -1},
        {"retry_total": "3"},
        {"retry_backoff_factor": -0.1},
        {"retry_backoff_max": "x"},
        {"retry_mode": "linear"},
    ],
)
def test_bad_retry_options_are_typed_errors(url: str, options: dict[str, Any]) -> None:
    with pytest.raises(InvalidArgumentError):
        ServiceBusClient.from_connection_string(url, **options)


def test_lost_reply_with_duplicate_detection_stores_once(redis_server: RedisServer, make_queue: Any) -> None:
    q = make_queue(requires_duplicate_detection=True)
    with (
        LatencyProxy(redis_server.port, 0.0) as proxy,
        ServiceBusClient.from_connection_string(proxy.url(), retry_backoff_factor=0.01) as c,
    ):
        s = c.get_queue_sender(q)
        s.send_messages(ServiceBusMessage("first"))
        proxy.lose_replies = 1  # Redis stores the next send; the client never hears back
        s.send_messages(ServiceBusMessage("second", message_id="m-2"))
        assert proxy.lost == 1
    assert sorted(stored(redis_server.url, q)) == ["first", "second"]


def test_lost_reply_without_duplicate_detection_is_at_least_once(redis_server: RedisServer, make_queue: Any) -> None:
    q = make_queue()
    with (
        LatencyProxy(redis_server.port, 0.0) as proxy,
        ServiceBusClient.from_connection_string(proxy.url(), retry_backoff_factor=0.01) as c,
    ):
        s = c.get_queue_sender(q)
        s.send_messages(ServiceBusMessage("first"))
        proxy.lose_replies = 1
        s.send_messages(ServiceBusMessage("second"))
    assert sorted(stored(redis_server.url, q)) == ["first", "second", "second"]


def test_no_retries_when_retry_total_is_zero(redis_server: RedisServer, make_queue: Any) -> None:
    q = make_queue(requires_duplicate_detection=True)
    with (
        LatencyProxy(redis_server.port, 0.0) as proxy,
        ServiceBusClient.from_connection_string(proxy.url(), retry_total=0) as c,
    ):
        s = c.get_queue_sender(q)
        s.send_messages(ServiceBusMessage("first"))
        proxy.lose_replies = 1
        m = ServiceBusMessage("in doubt")
        with pytest.raises(ServiceBusConnectionError) as info:
            s.send_messages(m)
        assert info.value.retryable
        s.send_messages(m)  # the caller retries the same message: duplicate detection drops it
    assert sorted(stored(redis_server.url, q)) == ["first", "in doubt"]


def test_errors_that_are_not_retryable_are_not_retried(url: str) -> None:
    before = redis.Redis.from_url(url).info("commandstats").get("cmdstat_hget", {}).get("calls", 0)
    with (
        ServiceBusClient.from_connection_string(url, retry_total=5, retry_backoff_factor=1) as c,
        pytest.raises(MessagingEntityNotFoundError),
    ):
        c.get_queue_sender("missing-queue").send_messages(ServiceBusMessage("x"))
    after = redis.Redis.from_url(url).info("commandstats")["cmdstat_hget"]["calls"]
    assert after - before == 1  # one registry read, no retries


def test_send_rides_out_a_redis_restart() -> None:
    srv = RedisServer("--appendonly", "yes", "--appendfsync", "always").start()
    try:
        ServiceBusAdministrationClient.from_connection_string(srv.url).create_queue("q")
        with ServiceBusClient.from_connection_string(
            srv.url, retry_total=8, retry_backoff_factor=0.05, retry_backoff_max=0.5, socket_timeout=2
        ) as c:
            s = c.get_queue_sender("q")
            s.send_messages(ServiceBusMessage("before"))
            srv.kill()
            restarter = threading.Timer(0.3, srv.restart)
            restarter.start()
            s.send_messages(ServiceBusMessage("during"))  # fails at first, succeeds once Redis is back
            restarter.join()
        assert sorted(stored(srv.url, "q")) == ["before", "during"]
    finally:
        srv.stop()
