"""Flower's queue lengths for sbredis:// (sbredis.contrib.flower), through Flower's own broker
factory and its queues API handler."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("flower")

from flower.utils.broker import Broker, Redis

import sbredis.contrib.flower
from sbredis import ServiceBusClient, ServiceBusMessage
from sbredis.contrib.flower import SbredisBroker
from sbredis.management import ServiceBusAdministrationClient
from tests.redis_server import RedisServer

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def server() -> Iterator[RedisServer]:
    srv = RedisServer().start()
    yield srv
    srv.stop()


def test_flower_reads_sbredis_queue_lengths(server: RedisServer) -> None:
    queue, odd = "fq-" + uuid.uuid4().hex[:8], "w@host.celery.pidbox"
    with ServiceBusAdministrationClient.from_connection_string(server.url) as admin:
        admin.create_queue(queue)
        admin.create_queue(sbredis.contrib.kombu.entity_name(odd))
    with ServiceBusClient.from_connection_string(server.url) as client:
        with client.get_queue_sender(queue) as sender:
            sender.send_messages([ServiceBusMessage(b"{}") for _ in range(3)])
        with client.get_queue_receiver(queue) as receiver:
            (locked,) = receiver.receive_messages(1, max_wait_time=1)  # locked: not waiting

            broker: Any = Broker("sbredis" + server.url.removeprefix("redis"), http_api=None, broker_options={})
            assert isinstance(broker, SbredisBroker)
            got = asyncio.run(broker.queues([queue, odd, "no-such-queue"]))
            assert got == [{"name": queue, "messages": 2}, {"name": odd, "messages": 0}]
            receiver.complete_message(locked)
    # every other scheme is still Flower's
    assert isinstance(Broker(server.url, broker_options={}), Redis)
