"""The seeds' latency example through a proxy that adds a 70 ms round trip: sequential awaited
sends pay one round trip each; concurrent sends overlap; a limit of in-flight sends lands between."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from sbredis.aio import ServiceBusClient, ServiceBusMessage
from tests.latency_proxy import LatencyProxy
from tests.redis_server import RedisServer

pytestmark = pytest.mark.integration
RTT = 0.070


async def timed_sends(url: str, queue: str, n: int, concurrent: bool, limit: int = 1000) -> float:
    async with ServiceBusClient.from_connection_string(url) as c:
        s = c.get_queue_sender(queue, max_pending_sends=limit)
        await s.send_messages(ServiceBusMessage("warm-up"))  # reads the entity once
        t = time.perf_counter()
        if concurrent:
            await asyncio.gather(*(s.send_messages(ServiceBusMessage(str(i))) for i in range(n)))
        else:
            for i in range(n):
                await s.send_messages(ServiceBusMessage(str(i)))
        return time.perf_counter() - t


def test_seventy_ms_round_trip(redis_server: RedisServer, make_queue: Any) -> None:
    q = make_queue()
    with LatencyProxy(redis_server.port, RTT / 2) as proxy:
        sequential = asyncio.run(timed_sends(proxy.url(), q, 20, concurrent=False))
        concurrent = asyncio.run(timed_sends(proxy.url(), q, 100, concurrent=True))
        limited = asyncio.run(timed_sends(proxy.url(), q, 100, concurrent=True, limit=10))
    print(
        f"\n20 sequential: {sequential:.2f}s  100 concurrent: {concurrent:.2f}s  100 with 10 in flight: {limited:.2f}s"
    )
    assert sequential >= 20 * RTT  # one round trip per awaited send
    assert concurrent < 1.0  # they overlap (the seeds: 100 concurrent sends in well under a second)
    assert 10 * RTT <= limited < 100 * RTT  # ten batches of ten: between the two
    assert concurrent < limited
