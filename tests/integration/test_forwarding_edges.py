"""Auto-forwarding at its edges, through both APIs: a message larger than its destination accepts
(transfer dead-letter subqueue, MessageSizeExceeded), a backlog larger than one forwarding round,
and a destination or source deleted and created again while a client still holds its old
metadata."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from sbredis import ServiceBusMessage, ServiceBusReceiveMode, ServiceBusSubQueue
from sbredis._core.protocol.forward_out import OUTBOX_RETURN

pytestmark = [pytest.mark.integration, pytest.mark.conformance, pytest.mark.standalone]


def name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def take_all(client: Any, queue: str, **kw: Any) -> list[Any]:
    """Receive (and delete) everything; the empty receive also pulls what forwards into `queue`."""
    with client.get_queue_receiver(queue, receive_mode=ServiceBusReceiveMode.RECEIVE_AND_DELETE, **kw) as r:
        out: list[Any] = []
        while got := r.receive_messages(500, max_wait_time=0.5):
            out += got
        return out


def test_a_message_larger_than_the_destination_accepts(admin: Any, client: Any) -> None:
    dst, src = name("dst"), name("src")
    admin.create_queue(dst, max_message_size_in_kilobytes=1)
    admin.create_queue(src, forward_to=dst)
    with client.get_queue_sender(src) as s:
        s.send_messages([ServiceBusMessage("small"), ServiceBusMessage("x" * 4096)])
    assert [str(m) for m in take_all(client, dst)] == ["small"]
    [big] = take_all(client, src, sub_queue=ServiceBusSubQueue.TRANSFER_DEAD_LETTER)
    assert big.dead_letter_reason == "MessageSizeExceeded" and str(big) == "x" * 4096
    assert dst in (big.dead_letter_error_description or "") and big.dead_letter_source == src


def test_a_backlog_longer_than_one_forwarding_round(admin: Any, client: Any) -> None:
    dst, src = name("dst"), name("src")
    admin.create_queue(dst)
    admin.create_queue(src)
    n = OUTBOX_RETURN + 20
    with client.get_queue_sender(src) as s:
        for i in range(0, n, 100):
            s.send_messages([ServiceBusMessage(str(j)) for j in range(i, min(i + 100, n))])
    # forwarding switched on later: the whole backlog moves on the next send
    q = admin.get_queue(src)
    q.forward_to = dst
    admin.update_queue(q)
    with client.get_queue_sender(src) as s:
        s.send_messages(ServiceBusMessage(str(n)))
    got = take_all(client, dst)
    assert sorted(int(str(m)) for m in got) == list(range(n + 1))
    assert admin.get_queue_runtime_properties(src).active_message_count == 0


def test_a_destination_deleted_and_created_again(admin: Any, client: Any) -> None:
    dst, src = name("dst"), name("src")
    admin.create_queue(dst)
    admin.create_queue(src, forward_to=dst)
    with client.get_queue_sender(src) as s:
        s.send_messages(ServiceBusMessage("first"))  # this client now knows dst (1 partition)
        admin.delete_queue(dst)
        admin.create_queue(dst, enable_partitioning=True, partition_count=2)
        s.send_messages(ServiceBusMessage("second"))  # delivered to the new dst, not lost
    assert [str(m) for m in take_all(client, dst)] == ["second"]
    assert take_all(client, src, sub_queue=ServiceBusSubQueue.TRANSFER_DEAD_LETTER) == []


def test_a_source_deleted_and_created_again(admin: Any, client: Any) -> None:
    dst, src = name("dst"), name("src")
    admin.create_queue(dst)
    admin.create_queue(src, forward_to=dst)
    with client.get_queue_sender(src) as s:
        s.send_messages(ServiceBusMessage("first"))
    assert [str(m) for m in take_all(client, dst)] == ["first"]
    admin.delete_queue(src)
    admin.create_queue(src, forward_to=dst, enable_partitioning=True, partition_count=2)
    with client.get_queue_sender(src) as s:
        s.send_messages([ServiceBusMessage("second"), ServiceBusMessage("third")])
    assert sorted(str(m) for m in take_all(client, dst)) == ["second", "third"]
