"""The seeds' latency example through a proxy that adds a 70 ms round trip, as behaviour: sequential
awaited sends pay one script call (one round trip) each; concurrent sends share script calls; a
limit of in-flight sends lands between. How long each takes is bench/bench_latency.py's business."""

from __future__ import annotations

import asyncio

import pytest
import redis

from sbredis.aio import ServiceBusClient, ServiceBusMessage
from sbredis.management import ServiceBusAdministrationClient
from tests.latency_proxy import LatencyProxy
from tests.redis_server import RedisServer

pytestmark = pytest.mark.integration
RTT = 0.070


def script_calls(url: str) -> int:
    return int(redis.Redis.from_url(url).info("commandstats").get("cmdstat_evalsha", {}).get("calls", 0))


def sends(url: str, direct_url: str, queue: str, n: int, concurrent: bool, limit: int = 1000) -> int:
    """Send `n` messages (after a warm-up send); the script calls they took on the server."""

    async def run() -> int:
        async with ServiceBusClient.from_connection_string(url) as c:
            s = c.get_queue_sender(queue, max_pending_sends=limit)
            await s.send_messages(ServiceBusMessage("warm-up"))  # reads the entity once
            before = script_calls(direct_url)
            if concurrent:
                await asyncio.gather(*(s.send_messages(ServiceBusMessage(str(i))) for i in range(n)))
            else:
                for i in range(n):
                    await s.send_messages(ServiceBusMessage(str(i)))
            return script_calls(direct_url) - before

    return asyncio.run(run())


def test_seventy_ms_round_trip() -> None:
    srv = RedisServer().start()  # its own server: no other test's script calls in the counts
    try:
        with ServiceBusAdministrationClient.from_connection_string(srv.url) as admin:
            admin.create_queue("q")
        with LatencyProxy(srv.port, RTT / 2) as proxy:
            sequential = sends(proxy.url(), srv.url, "q", 20, concurrent=False)
            concurrent = sends(proxy.url(), srv.url, "q", 100, concurrent=True)
            limited = sends(proxy.url(), srv.url, "q", 100, concurrent=True, limit=10)
        with ServiceBusAdministrationClient.from_connection_string(srv.url) as admin:
            stored = admin.get_queue_runtime_properties("q").active_message_count
    finally:
        srv.stop()
    assert sequential == 20  # one round trip per awaited send
    assert concurrent < 20  # sends issued while a round trip is out share the next one
    assert 10 <= limited < 100 and concurrent <= limited  # at most ten per call, yet shared
    assert stored == 3 + 20 + 100 + 100  # every send stored (the warm-ups too)
