"""What a user porting from azure-servicebus sees on received messages and handlers: the SDK's
shapes (delivery_count from 0, body sections, bytes application properties with the dead-letter
entries, locked_until_utc of session messages) and the SDK's checks (closed handlers, waits)."""

from __future__ import annotations

from typing import Any

import pytest

from sbredis import ServiceBusMessage, ServiceBusReceiveMode, ServiceBusSubQueue

pytestmark = [pytest.mark.integration]


def test_delivery_count_counts_the_earlier_deliveries(client: Any, make_queue: Any) -> None:
    q = make_queue()
    with client.get_queue_sender(q) as s:
        s.send_messages(ServiceBusMessage("a"))
    with client.get_queue_receiver(q, max_wait_time=5) as r:
        [first] = r.receive_messages()
        assert first.delivery_count == 0
        assert [m.delivery_count for m in r.peek_messages(1, sequence_number=0)] == [0]
        r.abandon_message(first)
        [again] = r.receive_messages()
        assert again.delivery_count == 1
        assert again.raw_amqp_message.header.delivery_count == 1
        r.complete_message(again)


def test_received_body_and_properties_as_the_sdk_gives_them(client: Any, make_queue: Any) -> None:
    q = make_queue()
    with client.get_queue_sender(q) as s:
        s.send_messages([ServiceBusMessage("text", application_properties={"Color": "red"}), ServiceBusMessage(None)])
    with client.get_queue_receiver(q, max_wait_time=5) as r:
        text, empty = r.receive_messages(2)
        assert b"".join(text.body) == b"text" and text.body_bytes == b"text" and str(text) == "text"
        assert text.application_properties == {b"Color": b"red"}
        assert text.application_properties.get("Color") == b"red"
        assert text.sent_application_properties == {"Color": "red"}
        assert empty.body is None and empty.body_bytes is None
        r.complete_messages([text, empty])


def test_a_dead_lettered_messages_properties_carry_the_reason(client: Any, make_queue: Any) -> None:
    q = make_queue()
    with client.get_queue_sender(q) as s:
        s.send_messages(ServiceBusMessage("x", application_properties={"k": "v"}))
    with client.get_queue_receiver(q, max_wait_time=5) as r:
        [m] = r.receive_messages()
        r.dead_letter_message(m, reason="Testing reason", error_description="Testing description")
    with client.get_queue_receiver(q, sub_queue=ServiceBusSubQueue.DEAD_LETTER, max_wait_time=5) as dlq:
        [dead] = dlq.receive_messages()
        assert dead.application_properties[b"DeadLetterReason"] == b"Testing reason"
        assert dead.application_properties[b"DeadLetterErrorDescription"] == b"Testing description"
        assert dead.application_properties[b"k"] == b"v"
        assert dead.sent_application_properties == {"k": "v"}
        dlq.complete_message(dead)


def test_closed_handlers_refuse_reuse(client: Any, make_queue: Any) -> None:
    q = make_queue()
    sender = client.get_queue_sender(q)
    with sender:
        sender.send_messages(ServiceBusMessage("x"))
    with pytest.raises(ValueError):
        sender.send_messages(ServiceBusMessage("y"))
    with pytest.raises(ValueError), sender:
        pass
    receiver = client.get_queue_receiver(q, max_wait_time=5)
    with receiver:
        [m] = receiver.receive_messages()
        receiver.complete_message(m)
    for use in (receiver.receive_messages, receiver.peek_messages, lambda: receiver.receive_deferred_messages([1])):
        with pytest.raises(ValueError):
            use()
    with pytest.raises(ValueError), receiver:
        pass


def test_waits_of_zero_are_refused_and_wait_false_does_not_wait(client: Any, make_queue: Any) -> None:
    q = make_queue()
    with pytest.raises(ValueError):
        client.get_queue_receiver(q, max_wait_time=0)
    with client.get_queue_receiver(q) as r:
        for bad in (0, -1):
            with pytest.raises(ValueError):
                r.receive_messages(max_wait_time=bad)
        assert r.receive_messages(5, wait=False) == []
        with client.get_queue_sender(q) as s:
            s.send_messages(ServiceBusMessage("x"))
        got = r.receive_messages(5, max_wait_time=5)
        assert [str(m) for m in got] == ["x"]
        r.complete_messages(got)


def test_settling_a_receive_and_delete_message_raises_value_error(client: Any, make_queue: Any) -> None:
    q = make_queue()
    with client.get_queue_sender(q) as s:
        s.send_messages(ServiceBusMessage("x"))
    with client.get_queue_receiver(q, receive_mode=ServiceBusReceiveMode.RECEIVE_AND_DELETE, max_wait_time=5) as r:
        [m] = r.receive_messages()
        with pytest.raises(ValueError):
            r.complete_message(m)


def test_session_messages_hold_no_lock_of_their_own(client: Any, make_queue: Any) -> None:
    q = make_queue(requires_session=True)
    with client.get_queue_sender(q) as s:
        message = ServiceBusMessage("x", partition_key="pk")
        message.session_id = "s"  # accepted after a different partition key, as the SDK does
        s.send_messages(message)
    with pytest.raises(ValueError), client.get_queue_receiver(q):
        pass  # a receiver without session_id fails to open on a session entity
    with client.get_queue_receiver(q, session_id="s", max_wait_time=5) as r:
        [m] = r.receive_messages()
        assert m.locked_until_utc is None and r.session.locked_until_utc is not None
        assert m.partition_key == "s"
        r.complete_message(m)
