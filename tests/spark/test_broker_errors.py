"""What the Spark tasks' Redis calls do when Redis or the entity fails under them.

The executors read, receive and send through ``sbredis.spark._broker``: a retryable failure (the
server unreachable) is tried again a few times and then raised as the client's typed error; an
entity that is gone is raised at once, typed, and a send that fails for good raises, never
returning sequence numbers for messages that were not stored.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest

from sbredis import ServiceBusClient, ServiceBusMessage
from sbredis._core import protocol
from sbredis.exceptions import MessagingEntityNotFoundError, ServiceBusConnectionError, ServiceBusError
from sbredis.management import ServiceBusAdministrationClient
from sbredis.spark import _broker
from tests.redis_server import RedisServer

pytestmark = pytest.mark.spark


@pytest.fixture()
def server() -> Iterator[RedisServer]:
    srv = RedisServer().start()
    yield srv
    srv.stop()


def _queue(url: str, partitions: int = 2) -> str:
    name = "q-" + uuid.uuid4().hex[:10]
    with ServiceBusAdministrationClient.from_connection_string(url) as admin:
        admin.create_queue(name, enable_partitioning=True, partition_count=partitions)
    return name


def test_an_unreachable_server_is_tried_again_then_raised_typed(server: RedisServer) -> None:
    name = _queue(server.url)
    with ServiceBusClient.from_connection_string(server.url, retry_total=0, socket_timeout=2) as client:
        meta = _broker.meta(client, name)
        assert _broker.next_offsets(client, name, protocol.Group.MAIN, meta.partition_count) == {0: 1, 1: 1}
        server.stop()
        started = time.monotonic()
        with pytest.raises(ServiceBusConnectionError) as info:
            _broker.next_offsets(client, name, protocol.Group.MAIN, meta.partition_count)
        assert info.value.retryable
        # three attempts with pauses of 0.2 and 0.4 s between them: the retries happened
        assert time.monotonic() - started >= 0.6
        with pytest.raises(ServiceBusConnectionError):  # each failed partition is tried again, then it raises
            _broker.send(client, meta, [ServiceBusMessage("a"), ServiceBusMessage("b")], 0)


def test_a_retryable_failure_that_clears_is_not_seen() -> None:
    calls: list[int] = []

    def flaky() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise ServiceBusConnectionError("the server went away")
        return "read"

    assert _broker.retrying(flaky, pause=0.01) == "read"
    assert len(calls) == 3


def test_a_failure_that_is_not_retryable_is_raised_at_once() -> None:
    calls: list[int] = []

    def gone() -> None:
        calls.append(1)
        raise MessagingEntityNotFoundError("no such queue")

    with pytest.raises(MessagingEntityNotFoundError):
        _broker.retrying(gone, pause=0.01)
    assert len(calls) == 1


def test_reads_and_sends_on_an_entity_deleted_under_them_raise_entity_not_found(server: RedisServer) -> None:
    name = _queue(server.url)
    with ServiceBusClient.from_connection_string(server.url, retry_total=0) as client:
        meta = _broker.meta(client, name)  # what a task was planned with
        assert _broker.send(client, meta, [ServiceBusMessage("a"), ServiceBusMessage("b")], 0) == [1, 2]
        with ServiceBusAdministrationClient.from_connection_string(server.url) as admin:
            admin.delete_queue(name)
        with pytest.raises(MessagingEntityNotFoundError):
            _broker.next_offsets(client, name, protocol.Group.MAIN, meta.partition_count)
        with pytest.raises(MessagingEntityNotFoundError):
            _broker.receive(client, name, 0, protocol.Group.MAIN, 10)
        with pytest.raises(MessagingEntityNotFoundError):
            _broker.receive_many(client, name, protocol.Group.MAIN, {0: 10})
        with pytest.raises(ServiceBusError) as info:
            _broker.send(client, meta, [ServiceBusMessage("c")], 0)
        assert isinstance(info.value, MessagingEntityNotFoundError), repr(info.value)
