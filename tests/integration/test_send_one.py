"""A caller's one message (send_messages(msg) in a loop) takes a one-call send path: the same
placement, outcomes and refusals as the general path's."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from sbredis import ServiceBusMessage
from sbredis.exceptions import MessagingEntityDisabledError

pytestmark = [pytest.mark.integration]


def drain(receiver: Any, want: int) -> list[Any]:
    got: list[Any] = []
    for _ in range(50):  # bounded: each receive waits at most 0.2 s
        batch = receiver.receive_messages(want - len(got), max_wait_time=0.2)
        receiver.complete_messages(batch)
        got += batch
        if len(got) >= want:
            break
    return got


def test_one_message_sends_spread_over_partitions_and_follow_a_recreate(
    admin: Any, client: Any, queue_name: str
) -> None:
    admin.create_queue(queue_name, enable_partitioning=True, partition_count=4)
    with client.get_queue_sender(queue_name) as sender, client.get_queue_receiver(queue_name) as receiver:
        for i in range(8):
            sender.send_messages(ServiceBusMessage(f"a{i}"))
        got = drain(receiver, 8)
        assert sorted(str(m) for m in got) == [f"a{i}" for i in range(8)]
        assert {m.partition_id for m in got} == {0, 1, 2, 3}  # round robin, one call each
        admin.delete_queue(queue_name)
        admin.create_queue(queue_name, enable_partitioning=True, partition_count=2)
        for i in range(4):
            sender.send_messages(ServiceBusMessage(f"b{i}"))
        got = drain(receiver, 4)
        assert sorted(str(m) for m in got) == [f"b{i}" for i in range(4)]
        assert {m.partition_id for m in got} == {0, 1}


def test_a_one_partition_senders_plain_sends_follow_a_recreate_with_partitions(
    admin: Any, client: Any, queue_name: str
) -> None:
    """Its first plain send after the recreate is refused as stale (the partition is there, under
    another generation), so the sender reloads the metadata and spreads the rest."""
    admin.create_queue(queue_name)
    with client.get_queue_sender(queue_name) as sender, client.get_queue_receiver(queue_name) as receiver:
        sender.send_messages(ServiceBusMessage("old"))
        admin.delete_queue(queue_name)
        admin.create_queue(queue_name, enable_partitioning=True, partition_count=2)
        for i in range(4):
            sender.send_messages(ServiceBusMessage(f"n{i}"))
        got = drain(receiver, 4)
        assert sorted(str(m) for m in got) == [f"n{i}" for i in range(4)]
        assert {m.partition_id for m in got} == {0, 1}


def test_one_message_duplicate_schedule_and_disabled(admin: Any, client: Any, queue_name: str) -> None:
    admin.create_queue(
        queue_name,
        requires_duplicate_detection=True,
        duplicate_detection_history_time_window=timedelta(minutes=10),
    )
    with client.get_queue_sender(queue_name) as sender, client.get_queue_receiver(queue_name) as receiver:
        sender.send_messages(ServiceBusMessage("first", message_id="m1"))
        sender.send_messages(ServiceBusMessage("again", message_id="m1"))  # accepted and dropped
        later = datetime.now(UTC) + timedelta(hours=1)
        [seq] = sender.schedule_messages(ServiceBusMessage("later", message_id="m2"), later)
        assert seq > 0
        assert [str(m) for m in drain(receiver, 1)] == ["first"]
        assert receiver.receive_messages(1, max_wait_time=0.1) == []
        [peeked] = receiver.peek_messages(1, sequence_number=seq)
        assert (str(peeked), peeked.sequence_number) == ("later", seq)
        admin.update_queue(admin.get_queue(queue_name), status="SendDisabled")
        with pytest.raises(MessagingEntityDisabledError):
            sender.send_messages(ServiceBusMessage("refused", message_id="m3"))


def test_one_plain_message_to_a_send_disabled_queue_is_refused(admin: Any, client: Any, queue_name: str) -> None:
    """A blob-only send (send.lua's fast path) is refused while the queue is send-disabled and
    stores nothing; once active again the next send is stored."""
    admin.create_queue(queue_name)
    with client.get_queue_sender(queue_name) as sender, client.get_queue_receiver(queue_name) as receiver:
        sender.send_messages(ServiceBusMessage("before"))
        admin.update_queue(admin.get_queue(queue_name), status="SendDisabled")
        with pytest.raises(MessagingEntityDisabledError):
            sender.send_messages(ServiceBusMessage("refused"))
        admin.update_queue(admin.get_queue(queue_name), status="Active")
        sender.send_messages(ServiceBusMessage("after"))
        assert [str(m) for m in drain(receiver, 2)] == ["before", "after"]
