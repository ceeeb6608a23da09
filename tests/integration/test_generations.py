"""Entity generations: long-lived senders and receivers keep working when their entity is deleted
and created again with another partition count, and locks taken before are lost with it."""

from __future__ import annotations

import time
from typing import Any

import pytest

from sbredis import ServiceBusMessage
from sbredis.exceptions import (
    InvalidOperationError,
    MessageLockLostError,
    MessageSizeExceededError,
    MessagingEntityNotFoundError,
    SessionLockLostError,
)

pytestmark = [pytest.mark.integration, pytest.mark.conformance]

N = 32


def keyed(tag: str) -> list[ServiceBusMessage]:
    """N messages with distinct partition keys (so they spread over every partition)."""
    return [ServiceBusMessage(f"{tag}-{i}", partition_key=f"k{i}") for i in range(N)]


def receive_all(receiver: Any, want: int, timeout: float = 10.0) -> list[Any]:
    got: list[Any] = []
    deadline = time.monotonic() + timeout
    while len(got) < want and time.monotonic() < deadline:
        batch = receiver.receive_messages(want - len(got), max_wait_time=0.2)
        for m in batch:
            receiver.complete_message(m)
        got += batch
    return got


@pytest.mark.parametrize("own_client", [False, True], ids=["shared-client", "own-client"])
def test_queue_recreated_with_more_then_fewer_partitions(
    admin: Any, client: Any, sb_api: Any, url: str, queue_name: str, own_client: bool
) -> None:
    """With its own client the receiver finds out itself (a shared client's sender refreshes the
    metadata both use)."""
    admin.create_queue(queue_name, enable_partitioning=True, partition_count=2)
    other = sb_api.ServiceBusClient.from_connection_string(url) if own_client else client
    with client.get_queue_sender(queue_name) as sender, other.get_queue_receiver(queue_name) as receiver:
        sender.send_messages(keyed("first"))  # both now hold the metadata of the 2-partition queue
        assert sorted(str(m) for m in receive_all(receiver, N)) == sorted(str(m) for m in keyed("first"))
        for count in (16, 3):
            admin.delete_queue(queue_name)
            admin.create_queue(queue_name, enable_partitioning=True, partition_count=count)
            sender.send_messages(keyed(f"p{count}"))
            got = receive_all(receiver, N)
            assert sorted(str(m) for m in got) == sorted(str(m) for m in keyed(f"p{count}"))
            assert {m.partition_id for m in got} == set(range(count))  # every partition, the new ones too
            assert receiver.receive_messages(1, max_wait_time=0.1) == []
    if own_client:
        other.close()


def test_a_long_lived_sender_follows_a_raised_size_limit(admin: Any, client: Any, queue_name: str) -> None:
    """A sender that had read the entity's 64 KB limit kept refusing 100 KB messages with
    MessageSizeExceededError after update_queue raised it to 256 KB."""
    admin.create_queue(queue_name, max_message_size_in_kilobytes=64)
    with client.get_queue_sender(queue_name) as sender, client.get_queue_receiver(queue_name) as receiver:
        sender.send_messages(ServiceBusMessage("warm"))
        admin.update_queue(admin.get_queue(queue_name), max_message_size_in_kilobytes=256)
        sender.send_messages(ServiceBusMessage("x" * 100_000))
        admin.update_queue(admin.get_queue(queue_name), max_message_size_in_kilobytes=64)
        with pytest.raises(MessageSizeExceededError):
            sender.send_messages(ServiceBusMessage("y" * 100_000))
        assert [len(str(m)) for m in receive_all(receiver, 2)] == [4, 100_000]


def test_a_plain_receiver_follows_a_recreate_without_sessions(admin: Any, client: Any, queue_name: str) -> None:
    """A receiver that had read the queue as requiring sessions kept refusing plain receives after
    it was created again without them."""
    admin.create_queue(queue_name, requires_session=True)
    with pytest.raises(InvalidOperationError), client.get_queue_receiver(queue_name):
        pass
    admin.delete_queue(queue_name)
    admin.create_queue(queue_name)
    client.get_queue_sender(queue_name).send_messages(ServiceBusMessage("plain"))
    with client.get_queue_receiver(queue_name) as receiver:
        assert [str(m) for m in receive_all(receiver, 1)] == ["plain"]


def test_a_receiver_used_before_a_recreate_without_sessions_receives_after_it(
    admin: Any, client: Any, sb_api: Any, url: str, queue_name: str
) -> None:
    """Not reopened: the receiver's own receive reads the metadata again before refusing (the
    message is sent by another client, so nothing else refreshes this client's copy)."""
    admin.create_queue(queue_name, requires_session=True)
    receiver = client.get_queue_receiver(queue_name)
    with pytest.raises(InvalidOperationError, match="requires sessions"):
        receiver.receive_messages(1, max_wait_time=0.1)
    admin.delete_queue(queue_name)
    admin.create_queue(queue_name)
    with sb_api.ServiceBusClient.from_connection_string(url) as other:
        other.get_queue_sender(queue_name).send_messages(ServiceBusMessage("plain"))
    assert [str(m) for m in receive_all(receiver, 1)] == ["plain"]
    receiver.close()


def test_a_receiver_peeks_the_new_queue_after_a_recreate(
    admin: Any, client: Any, sb_api: Any, url: str, queue_name: str
) -> None:
    """The peek finds its metadata stale, reads it again and peeks the new queue from its start
    (another client sends, so nothing else refreshes this client's copy)."""
    admin.create_queue(queue_name)
    receiver = client.get_queue_receiver(queue_name)
    with sb_api.ServiceBusClient.from_connection_string(url) as other:
        other.get_queue_sender(queue_name).send_messages(ServiceBusMessage("old"))
        assert [str(m) for m in receiver.peek_messages(5)] == ["old"]
        admin.delete_queue(queue_name)
        admin.create_queue(queue_name)
        other.get_queue_sender(queue_name).send_messages(ServiceBusMessage("new"))
    assert [str(m) for m in receiver.peek_messages(5)] == ["new"]
    receiver.close()


def test_single_sends_and_peek_after_recreate(admin: Any, client: Any, queue_name: str) -> None:
    admin.create_queue(queue_name, enable_partitioning=True, partition_count=4)
    with client.get_queue_sender(queue_name) as sender, client.get_queue_receiver(queue_name) as receiver:
        sender.send_messages(ServiceBusMessage("warm"))
        assert [str(m) for m in receiver.peek_messages(5)] == ["warm"]
        admin.delete_queue(queue_name)
        admin.create_queue(queue_name, enable_partitioning=True, partition_count=2)
        for m in keyed("one"):  # one message per call: the first one finds the old metadata stale
            sender.send_messages(m)
        peeked = receiver.peek_messages(N, sequence_number=0)
        assert sorted(str(m) for m in peeked) == sorted(str(m) for m in keyed("one"))


def test_topic_and_subscription_recreated(admin: Any, client: Any, sb_api: Any, url: str, queue_name: str) -> None:
    topic = queue_name
    admin.create_topic(topic, enable_partitioning=True, partition_count=2)
    admin.create_subscription(topic, "s")
    with (
        sb_api.ServiceBusClient.from_connection_string(url) as other,
        client.get_topic_sender(topic) as sender,
        other.get_subscription_receiver(topic, "s") as receiver,
    ):
        sender.send_messages(keyed("first"))
        assert len(receive_all(receiver, N)) == N
        for count in (8, 3):
            admin.delete_topic(topic)
            admin.create_topic(topic, enable_partitioning=True, partition_count=count)
            admin.create_subscription(topic, "s")
            sender.send_messages(keyed(f"t{count}"))
            got = receive_all(receiver, N)
            assert sorted(str(m) for m in got) == sorted(str(m) for m in keyed(f"t{count}"))
            assert {m.partition_id for m in got} == set(range(count))


def test_lock_taken_before_recreate_is_lost(admin: Any, client: Any, queue_name: str) -> None:
    admin.create_queue(queue_name, enable_partitioning=True, partition_count=2)
    with client.get_queue_sender(queue_name) as sender, client.get_queue_receiver(queue_name) as receiver:
        sender.send_messages([ServiceBusMessage("a", partition_key="k1"), ServiceBusMessage("b", partition_key="k2")])
        old = receive_all_locked(receiver, 2)
        admin.delete_queue(queue_name)
        admin.create_queue(queue_name, enable_partitioning=True, partition_count=4)
        with pytest.raises(MessageLockLostError):
            receiver.complete_message(old[0])  # the receiver's metadata is still the old one here
        sender.send_messages(ServiceBusMessage("new"))
        [m] = receive_all(receiver, 1)
        assert str(m) == "new"
        with pytest.raises(MessageLockLostError):
            receiver.complete_message(old[1])  # and now it is the new one
        with pytest.raises(MessageLockLostError):
            receiver.renew_message_lock(old[1])


def test_prefetched_messages_of_the_old_entity_cannot_be_settled(admin: Any, client: Any, queue_name: str) -> None:
    admin.create_queue(queue_name, enable_partitioning=True, partition_count=2)
    with client.get_queue_sender(queue_name) as sender:
        sender.send_messages([ServiceBusMessage(f"m{i}") for i in range(4)])
        with client.get_queue_receiver(queue_name, prefetch_count=10) as receiver:
            [first] = receiver.receive_messages(1, max_wait_time=2)
            admin.delete_queue(queue_name)
            admin.create_queue(queue_name, enable_partitioning=True, partition_count=3)
            with pytest.raises(MessageLockLostError):
                receiver.complete_message(first)
            buffered = receiver.receive_messages(10, max_wait_time=0.5)  # fetched ahead, before the recreate
            assert buffered and str(buffered[0]).startswith("m")
            with pytest.raises(MessageLockLostError):
                receiver.complete_messages(buffered)
            sender.send_messages(ServiceBusMessage("after"))
            assert [str(m) for m in receive_all(receiver, 1)] == ["after"]


def test_session_lock_taken_before_recreate_is_lost(admin: Any, client: Any, queue_name: str) -> None:
    admin.create_queue(queue_name, enable_partitioning=True, partition_count=2, requires_session=True)
    with client.get_queue_sender(queue_name) as sender:
        sender.send_messages(ServiceBusMessage("s", session_id="S"))
        with client.get_queue_receiver(queue_name, session_id="S") as receiver:
            [m] = receiver.receive_messages(1, max_wait_time=2)
            admin.delete_queue(queue_name)
            admin.create_queue(queue_name, enable_partitioning=True, partition_count=5, requires_session=True)
            with pytest.raises(SessionLockLostError):
                receiver.complete_message(m)
            with pytest.raises(SessionLockLostError):
                receiver.receive_messages(1, max_wait_time=0.1)
        sender.send_messages(ServiceBusMessage("s2", session_id="S"))  # the sender goes on
        with client.get_queue_receiver(queue_name, session_id="S") as receiver:
            assert [str(m) for m in receiver.receive_messages(1, max_wait_time=2)] == ["s2"]


def test_deleted_entity_still_raises_not_found(admin: Any, client: Any, queue_name: str) -> None:
    admin.create_queue(queue_name, enable_partitioning=True, partition_count=2)
    with client.get_queue_sender(queue_name) as sender, client.get_queue_receiver(queue_name) as receiver:
        sender.send_messages(ServiceBusMessage("x"))
        [m] = receiver.receive_messages(1, max_wait_time=2)
        admin.delete_queue(queue_name)
        with pytest.raises(MessagingEntityNotFoundError):
            sender.send_messages(ServiceBusMessage("y"))
        with pytest.raises(MessagingEntityNotFoundError):
            receiver.receive_messages(1, max_wait_time=0.1)
        with pytest.raises(MessagingEntityNotFoundError):
            receiver.complete_message(m)


def receive_all_locked(receiver: Any, want: int, timeout: float = 5.0) -> list[Any]:
    """Receive `want` messages without settling them."""
    got: list[Any] = []
    deadline = time.monotonic() + timeout
    while len(got) < want and time.monotonic() < deadline:
        got += receiver.receive_messages(want - len(got), max_wait_time=0.2)
    assert len(got) == want
    return got


def test_forwarding_into_a_recreated_destination(admin: Any, client: Any, queue_name: str) -> None:
    dest = queue_name + "-dest"
    admin.create_queue(dest, enable_partitioning=True, partition_count=2)
    admin.create_queue(queue_name, forward_to=dest)
    with client.get_queue_sender(queue_name) as sender, client.get_queue_receiver(dest) as receiver:
        sender.send_messages(keyed("first"))  # the forwarder now holds the 2-partition metadata
        assert len(receive_all(receiver, N)) == N
        for count in (6, 1):
            admin.delete_queue(dest)
            admin.create_queue(dest, enable_partitioning=count > 1, partition_count=count)
            sender.send_messages(keyed(f"f{count}"))
            got = receive_all(receiver, N)
            assert sorted(str(m) for m in got) == sorted(str(m) for m in keyed(f"f{count}"))
        with client.get_queue_receiver(queue_name, sub_queue="transferdeadletter") as tdl:
            assert tdl.receive_messages(1, max_wait_time=0.1) == []  # nothing was found undeliverable
