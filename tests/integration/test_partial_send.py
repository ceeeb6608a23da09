"""A send spread over several partitions is one atomic store per partition: when some fail, the
error names every partition that failed and every one that stored its messages (docs/semantics.md),
in its message and in ``details``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import redis

from sbredis import ServiceBusMessage
from sbredis._core.send_plan import partition_of
from sbredis.exceptions import ServiceBusError
from tests.redis_server import RedisServer

pytestmark = [pytest.mark.integration, pytest.mark.parametrize("api", ["sync", "async"], indirect=True)]

PARTITIONS = 4
KEYS = [f"k{i}" for i in range(40)]


@pytest.fixture()
def server() -> Iterator[RedisServer]:
    srv = RedisServer().start()
    yield srv
    srv.stop()


def test_the_error_names_each_failed_partition_and_the_stored_ones(server: RedisServer, sb_api: Any) -> None:
    with sb_api.ServiceBusAdministrationClient.from_connection_string(server.url) as admin:
        admin.create_queue("q", enable_partitioning=True, partition_count=PARTITIONS)
    where = {k: partition_of(k, PARTITIONS) for k in KEYS}
    assert set(where.values()) == set(range(PARTITIONS))
    raw = redis.Redis.from_url(server.url)
    with sb_api.ServiceBusClient.from_connection_string(server.url) as client:
        sender = client.get_queue_sender("q")
        for p in (1, 3):  # these partitions' message logs are plain strings: their sends fail
            raw.set(f"{{sb:q:{p}}}:log", "not a stream")
        with pytest.raises(ServiceBusError) as info:
            sender.send_messages([ServiceBusMessage(k, partition_key=k) for k in KEYS])
        for p in (1, 3):
            raw.delete(f"{{sb:q:{p}}}:log")
        with client.get_queue_receiver("q") as r:
            stored = [str(m) for m in r.peek_messages(100, sequence_number=0)]
    error = info.value
    assert "partitions 1, 3" in error.message and "partitions 0, 2 were stored" in error.message, error.message
    assert error.details["partition"] == 1
    assert error.details["failed"] == (1, 3) and error.details["stored"] == (0, 2)
    assert sorted(stored) == sorted(k for k in KEYS if where[k] in (0, 2))


def test_a_send_that_stored_nothing(server: RedisServer, sb_api: Any) -> None:
    """One partition failed: its own error, no partition list; several: each failed one named,
    none said stored."""
    with sb_api.ServiceBusAdministrationClient.from_connection_string(server.url) as admin:
        admin.create_queue("q", enable_partitioning=True, partition_count=PARTITIONS)
    raw = redis.Redis.from_url(server.url)
    with sb_api.ServiceBusClient.from_connection_string(server.url) as client:
        sender = client.get_queue_sender("q")
        for p in range(PARTITIONS):
            raw.set(f"{{sb:q:{p}}}:log", "not a stream")
        one = next(k for k in KEYS if partition_of(k, PARTITIONS) == 2)
        with pytest.raises(ServiceBusError) as alone:
            sender.send_messages(ServiceBusMessage(one, partition_key=one))
        two = [next(k for k in KEYS if partition_of(k, PARTITIONS) == p) for p in (0, 3)]
        with pytest.raises(ServiceBusError) as both:
            sender.send_messages([ServiceBusMessage(k, partition_key=k) for k in two])
    assert "failed:" not in alone.value.message and "failed" not in alone.value.details
    assert "(failed: partitions 0, 3)" in both.value.message and "stored" not in both.value.message
    assert both.value.details["failed"] == (0, 3) and both.value.details["stored"] == ()
