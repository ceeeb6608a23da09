"""A topic sender's failures as its caller sees them, on every backend through both APIs: a message
over the topic's size limit is refused and no subscription gets anything, a topic deleted under a
sender answers MessagingEntityNotFoundError and the same sender publishes again once the topic is
back, and a topic sender pointed at a queue says so."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from sbredis import ServiceBusMessage, ServiceBusReceiveMode
from sbredis.exceptions import InvalidOperationError, MessageSizeExceededError, MessagingEntityNotFoundError

pytestmark = [pytest.mark.integration, pytest.mark.conformance]


def received(client: Any, topic: str, sub: str) -> list[str]:
    mode = ServiceBusReceiveMode.RECEIVE_AND_DELETE
    with client.get_subscription_receiver(topic, sub, receive_mode=mode) as r:
        return [str(m) for m in r.receive_messages(100, max_wait_time=0.2)]


def test_a_message_over_the_topic_limit_reaches_no_subscription(admin: Any, client: Any) -> None:
    topic = "t-" + uuid.uuid4().hex[:10]
    admin.create_topic(topic, enable_partitioning=True, partition_count=2, max_message_size_in_kilobytes=1)
    admin.create_subscription(topic, "s")
    with client.get_topic_sender(topic) as sender:
        with pytest.raises(MessageSizeExceededError):
            sender.send_messages(ServiceBusMessage("x" * 2048))
        assert received(client, topic, "s") == []
        sender.send_messages(ServiceBusMessage("small"))
    assert received(client, topic, "s") == ["small"]


def test_a_sender_outlives_its_topic_being_deleted_and_created_again(admin: Any, client: Any) -> None:
    topic = "t-" + uuid.uuid4().hex[:10]
    admin.create_topic(topic)
    admin.create_subscription(topic, "s")
    with client.get_topic_sender(topic) as sender:
        sender.send_messages(ServiceBusMessage("before"))
        admin.delete_topic(topic)
        with pytest.raises(MessagingEntityNotFoundError):
            sender.send_messages(ServiceBusMessage("while gone"))
        admin.create_topic(topic)
        admin.create_subscription(topic, "s")
        sender.send_messages(ServiceBusMessage("after"))
    assert received(client, topic, "s") == ["after"]


def test_a_topic_sender_on_a_queue_is_refused(admin: Any, client: Any, queue_name: str) -> None:
    admin.create_queue(queue_name)
    with client.get_topic_sender(queue_name) as sender:
        with pytest.raises(InvalidOperationError, match="not a topic"):
            sender.send_messages(ServiceBusMessage("x"))
        with pytest.raises(InvalidOperationError, match="not a topic"):
            sender.cancel_scheduled_messages([1])
    with client.get_queue_receiver(queue_name) as r:
        assert r.peek_messages(5) == []
