"""Where a key pins a message (docs: partitioning), through both APIs: on a queue of 2 and of 3
partitions each message with a partition key, a session id, or (under duplicate detection) a
message id lands in the partition CRC-32 of the key names, and both or all partitions are used."""

from __future__ import annotations

import zlib
from typing import Any

import pytest

from sbredis import ServiceBusMessage

pytestmark = [pytest.mark.integration, pytest.mark.conformance, pytest.mark.standalone]


def expected(key: str, count: int) -> int:
    return zlib.crc32(key.encode()) % count


@pytest.mark.parametrize("count", [2, 3])
def test_keyed_messages_land_in_their_keys_partition(client: Any, admin: Any, queue_name: str, count: int) -> None:
    admin.create_queue(queue_name, enable_partitioning=True, partition_count=count, requires_duplicate_detection=True)
    keys = [f"k{i}" for i in range(12)]
    with client.get_queue_sender(queue_name) as s:
        s.send_messages([ServiceBusMessage(f"pk-{k}", partition_key=k) for k in keys])
        s.send_messages([ServiceBusMessage(f"id-{k}", message_id=k) for k in keys])
    with client.get_queue_receiver(queue_name) as r:
        got = list(r.peek_messages(100, sequence_number=0))
    assert len(got) == 2 * len(keys)
    for m in got:
        key = str(m).split("-", 1)[1]
        assert m.partition_id == expected(key, count), (str(m), m.partition_id)
    assert {m.partition_id for m in got} == set(range(count))


def test_session_messages_land_in_the_partition_of_their_session(client: Any, admin: Any, queue_name: str) -> None:
    admin.create_queue(queue_name, enable_partitioning=True, partition_count=2, requires_session=True)
    sessions = [f"s{i}" for i in range(8)]
    with client.get_queue_sender(queue_name) as s:
        s.send_messages([ServiceBusMessage(sid, session_id=sid) for sid in sessions])
    for sid in sessions:
        with client.get_queue_receiver(queue_name, session_id=sid) as r:
            (m,) = r.receive_messages(1, max_wait_time=2)
            assert m.partition_id == expected(sid, 2)
            r.complete_message(m)
