"""A receiver's prefetch_count can change while it is open (an sbredis extension the worker's
adaptive prefetch uses): the next receive that goes to Redis takes that many ahead."""

from __future__ import annotations

import asyncio

import pytest

import sbredis.aio
from sbredis import ServiceBusClient, ServiceBusMessage
from sbredis.exceptions import InvalidArgumentError
from sbredis.management import ServiceBusAdministrationClient

pytestmark = pytest.mark.integration


def locked(url: str, queue: str) -> int:
    with ServiceBusAdministrationClient.from_connection_string(url) as admin:
        return sum(p.locked_message_count for p in admin.get_queue_runtime_properties(queue).partitions)


def test_a_new_prefetch_count_applies_to_the_next_receive(url: str, queue_name: str) -> None:
    with ServiceBusAdministrationClient.from_connection_string(url) as admin:
        admin.create_queue(queue_name)
    with ServiceBusClient.from_connection_string(url) as client:
        with client.get_queue_sender(queue_name) as s:
            s.send_messages([ServiceBusMessage(str(i)) for i in range(10)])
        with client.get_queue_receiver(queue_name) as r:
            assert r.prefetch_count == 0
            r.receive_messages(1, wait=False)
            assert locked(url, queue_name) == 1
            r.prefetch_count = 4
            assert r.prefetch_count == 4
            r.receive_messages(1, wait=False)
            assert locked(url, queue_name) == 1 + 1 + 4
            with pytest.raises(InvalidArgumentError):
                r.prefetch_count = -1
            assert r.prefetch_count == 4


def test_the_async_receiver_takes_a_new_prefetch_count_too(url: str, queue_name: str) -> None:
    async def run() -> int:
        async with sbredis.aio.ServiceBusClient.from_connection_string(url) as client:
            async with client.get_queue_sender(queue_name) as s:
                await s.send_messages([ServiceBusMessage(str(i)) for i in range(5)])
            async with client.get_queue_receiver(queue_name) as r:
                r.prefetch_count = 2
                await r.receive_messages(1, wait=False)
                return locked(url, queue_name)

    with ServiceBusAdministrationClient.from_connection_string(url) as admin:
        admin.create_queue(queue_name)
    assert asyncio.run(run()) == 3
