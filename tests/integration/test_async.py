"""The asyncio API (sbredis.aio) against a real Redis: same names, async methods."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest

from sbredis.aio import ServiceBusClient, ServiceBusMessage, ServiceBusSubQueue
from sbredis.aio.management import ServiceBusAdministrationClient
from sbredis.exceptions import MessageLockLostError

pytestmark = [pytest.mark.integration, pytest.mark.conformance]


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_async_round_trip(url: str, queue_name: str) -> None:
    async def main() -> None:
        async with ServiceBusAdministrationClient.from_connection_string(url) as admin:
            await admin.create_queue(queue_name, enable_partitioning=True, partition_count=4, max_delivery_count=1)
            assert [q.name async for q in admin.list_queues() if q.name == queue_name] == [queue_name]
            async with ServiceBusClient.from_connection_string(url) as client:
                async with client.get_queue_sender(queue_name) as s:
                    await asyncio.gather(*(s.send_messages(ServiceBusMessage(str(i))) for i in range(20)))
                    batch = await s.create_message_batch()
                    batch.add_message(ServiceBusMessage("b"))
                    await s.send_messages(batch)
                got = []
                async with client.get_queue_receiver(queue_name, max_wait_time=0.3) as r:
                    async for m in r:
                        got.append(str(m))
                        if str(m) == "b":
                            await r.abandon_message(m)  # max_delivery_count=1: dead-lettered
                        else:
                            await r.complete_message(m)
                assert sorted(got) == sorted([str(i) for i in range(20)] + ["b"])
                async with client.get_queue_receiver(queue_name, sub_queue=ServiceBusSubQueue.DEAD_LETTER) as d:
                    [dl] = await d.receive_messages(1, max_wait_time=1)
                    assert str(dl) == "b" and dl.dead_letter_reason == "MaxDeliveryCountExceeded"
                    await d.complete_message(dl)
            props = await admin.get_queue_runtime_properties(queue_name)
            assert props.total_message_count == 0
            await admin.delete_queue(queue_name)

    run(main())


def test_32_receivers_race_for_one_message(url: str, queue_name: str) -> None:
    async def main() -> None:
        async with ServiceBusAdministrationClient.from_connection_string(url) as admin:
            await admin.create_queue(
                queue_name, enable_partitioning=True, partition_count=4, lock_duration=timedelta(seconds=30)
            )
        clients = [ServiceBusClient.from_connection_string(url) for _ in range(4)]
        async with clients[0].get_queue_sender(queue_name) as s:
            await s.send_messages(ServiceBusMessage("only"))
        receivers = [clients[i % 4].get_queue_receiver(queue_name) for i in range(32)]
        results = await asyncio.gather(*(r.receive_messages(1, max_wait_time=0.5) for r in receivers))
        winners = [(r, got[0]) for r, got in zip(receivers, results, strict=True) if got]
        assert len(winners) == 1
        r, m = winners[0]
        # renew, complete and a stale second complete at once: one consistent outcome
        outcomes = await asyncio.gather(r.renew_message_lock(m), r.complete_message(m), return_exceptions=True)
        assert not any(isinstance(o, Exception) and not isinstance(o, MessageLockLostError) for o in outcomes)
        for rc in receivers:
            await rc.close()
        for c in clients:
            await c.close()

    run(main())
