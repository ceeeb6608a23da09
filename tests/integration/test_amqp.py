"""sbredis.amqp (azure-servicebus's AmqpAnnotatedMessage and friends), dict messages, and the SDK's
argument forms the compat suite needs (ISO 8601 durations, per-link keywords, async session
lists), against a real redis-server."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from sbredis import AutoLockRenewer, ServiceBusClient, ServiceBusMessage, ServiceBusMessageBatch
from sbredis.aio import ServiceBusClient as AsyncServiceBusClient
from sbredis.amqp import AmqpAnnotatedMessage, AmqpMessageBodyType, AmqpMessageHeader, AmqpMessageProperties
from sbredis.exceptions import InvalidArgumentError, InvalidOperationError
from sbredis.management import ServiceBusAdministrationClient
from tests.redis_server import RedisServer

pytestmark = pytest.mark.integration


def _receive_all(client: Any, q: str, n: int) -> list[Any]:
    with client.get_queue_receiver(q, max_wait_time=1) as r:
        got = r.receive_messages(n, max_wait_time=1)
        r.complete_messages(got)
    return list(got)


def test_the_three_body_types_and_every_section_come_back(client: Any, make_queue: Any) -> None:
    q = make_queue()
    sequence = AmqpAnnotatedMessage(
        sequence_body=[b"message", 123.456, True],
        footer={"footer_key": "footer_value"},
        properties={"subject": "sequence", "user_id": b"me", "group_sequence": 7},
        application_properties={"body_type": "sequence", "n": 3},
    )
    value = AmqpAnnotatedMessage(
        value_body={b"key": [-123, b"data", False], "when": datetime(2030, 1, 1, tzinfo=UTC)},
        header={"priority": 10, "durable": True},
        annotations={"ann_key": "ann_value"},
    )
    data = AmqpAnnotatedMessage(
        data_body=[b"aa", "bb", b"cc"],
        delivery_annotations={"delann_key": "delann_value"},
        header=AmqpMessageHeader(time_to_live=60000),
        properties=AmqpMessageProperties(
            message_id=b"id-1", correlation_id="c", content_type="text/plain", to="t", reply_to="r"
        ),
    )
    with client.get_queue_sender(q) as s:
        s.send_messages([sequence, value, data])
    got = _receive_all(client, q, 3)
    assert [m.body_type for m in got] == [
        AmqpMessageBodyType.SEQUENCE,
        AmqpMessageBodyType.VALUE,
        AmqpMessageBodyType.DATA,
    ]
    seq_raw, value_raw, data_raw = (m.raw_amqp_message for m in got)

    assert list(seq_raw.body) == [[b"message", 123.456, True]]
    assert list(got[0].body) == [[b"message", 123.456, True]]
    assert seq_raw.footer == {b"footer_key": b"footer_value"}
    assert seq_raw.properties.subject == b"sequence" and got[0].subject == "sequence"
    assert seq_raw.properties.user_id == b"me" and seq_raw.properties.group_sequence == 7
    assert seq_raw.application_properties == {b"body_type": b"sequence", b"n": 3}
    assert got[0].application_properties == {b"body_type": b"sequence", b"n": 3}
    assert got[0].sent_application_properties == {"body_type": "sequence", "n": 3}

    assert value_raw.body == {b"key": [-123, b"data", False], "when": datetime(2030, 1, 1, tzinfo=UTC)}
    assert got[1].body == value_raw.body
    assert value_raw.header.priority == 10 and value_raw.header.durable is True
    assert value_raw.annotations[b"ann_key"] == b"ann_value"
    assert value_raw.annotations[b"x-opt-sequence-number"] == got[1].sequence_number
    assert value_raw.header.delivery_count == 0  # AMQP counts earlier attempts

    assert list(data_raw.body) == [b"aa", b"bb", b"cc"]
    assert list(got[2].body) == [b"aa", b"bb", b"cc"] and got[2].body_bytes == b"aabbcc"
    assert data_raw.delivery_annotations == {b"delann_key": b"delann_value"}
    assert data_raw.header.time_to_live == 60000 and got[2].time_to_live == timedelta(seconds=60)
    assert (got[2].message_id, got[2].correlation_id, got[2].content_type) == ("id-1", "c", "text/plain")
    assert (got[2].to, got[2].reply_to) == ("t", "r")
    assert data_raw.properties.message_id == b"id-1"
    assert data_raw.properties.absolute_expiry_time == data_raw.properties.creation_time + 60000


def test_amqp_annotations_schedule_and_key_the_message(client: Any, make_queue: Any) -> None:
    q = make_queue()
    later = datetime.now(UTC) + timedelta(hours=1)
    m = AmqpAnnotatedMessage(
        data_body=b"x",
        annotations={"x-opt-scheduled-enqueue-time": later, b"x-opt-partition-key": "pk-1"},
        properties={"group_id": "g"},
    )
    with pytest.raises(InvalidOperationError):  # as ServiceBusMessage: a key that differs from the session
        ServiceBusMessage.from_amqp_message(m)
    m.properties = AmqpMessageProperties()
    with client.get_queue_sender(q) as s:
        s.send_messages(m)
    with client.get_queue_receiver(q) as r:
        [peeked] = r.peek_messages(5)
        assert r.receive_messages(5, wait=False) == []  # scheduled, not yet active
    assert peeked.partition_key == "pk-1"
    assert abs(peeked.scheduled_enqueue_time_utc - later) < timedelta(milliseconds=2)
    assert peeked.raw_amqp_message.annotations[b"x-opt-partition-key"] == b"pk-1"


def test_session_id_from_group_id(client: Any, admin: Any, queue_name: str) -> None:
    admin.create_queue(queue_name, requires_session=True)
    with client.get_queue_sender(queue_name) as s:
        s.send_messages(AmqpAnnotatedMessage(value_body=1, properties={"group_id": "s1", "reply_to_group_id": "r1"}))
    with client.get_queue_receiver(queue_name, session_id="s1", max_wait_time=1) as r:
        [m] = r.receive_messages(1, max_wait_time=1)
        r.complete_message(m)
    assert (m.session_id, m.reply_to_session_id, m.body) == ("s1", "r1", 1)
    assert m.raw_amqp_message.properties.group_id == b"s1"


def test_an_outgoing_messages_amqp_view_is_sent(client: Any, make_queue: Any) -> None:
    q = make_queue()
    m = ServiceBusMessage("body", time_to_live=timedelta(seconds=60))
    raw = m.raw_amqp_message
    assert raw.body_type is AmqpMessageBodyType.DATA and list(raw.body) == [b"body"]
    assert raw.properties.absolute_expiry_time == raw.properties.creation_time + raw.header.time_to_live
    raw.properties.subject = "subject"
    raw.application_properties = {b"application_properties": 1}
    raw.annotations = {b"annotations": 2}
    raw.delivery_annotations = {b"delivery_annotations": 3}
    raw.header.priority = 5
    raw.footer = {b"footer": 6}
    later = ServiceBusMessage("second")
    later.raw_amqp_message.properties.subject = "from the view"
    later.subject = "set after"  # the message's setter after the view: it wins
    with client.get_queue_sender(q) as s:
        s.send_messages([m, later])
    first, second = _receive_all(client, q, 2)
    got = first.raw_amqp_message
    assert got.properties.subject == b"subject" and first.subject == "subject"
    assert got.application_properties[b"application_properties"] == 1
    assert got.annotations[b"annotations"] == 2
    assert got.delivery_annotations[b"delivery_annotations"] == 3
    assert got.header.priority == 5 and got.footer[b"footer"] == 6
    assert str(first) == "body" and first.time_to_live == timedelta(seconds=60)
    assert second.subject == "set after"


def test_dict_and_mapping_messages(client: Any, make_queue: Any) -> None:
    q = make_queue()

    class Mapping:
        def __init__(self, body: str) -> None:
            self.values = {"body": body, "message_id": "m-" + body}

        def keys(self) -> list[str]:
            return list(self.values)

        def __getitem__(self, key: str) -> Any:
            return self.values[key]

    with client.get_queue_sender(q) as s:
        with pytest.raises(TypeError):
            s.send_messages({"message_id": "no body"})
        with pytest.raises(TypeError):
            s.send_messages([{"body": "a"}, {"body": "b", "not_a_property": 1}])
        s.send_messages({"body": "one", "subject": "s"})
        s.send_messages([Mapping("two"), {"body": "three"}])
        batch = s.create_message_batch()
        batch.add_message({"body": "four"})
        batch.add_message(AmqpAnnotatedMessage(data_body="five"))
        s.send_messages(batch)
    got = _receive_all(client, q, 10)
    assert [str(m) for m in got] == ["one", "two", "three", "four", "five"]  # nothing of the refused sends
    assert got[0].subject == "s" and got[1].message_id == "m-two"


def test_bad_amqp_messages_are_refused_before_anything_is_written(client: Any, make_queue: Any) -> None:
    q = make_queue()
    with pytest.raises(ValueError):
        AmqpAnnotatedMessage(data_body=b"a", value_body=1)
    with pytest.raises(ValueError):
        AmqpAnnotatedMessage()
    with pytest.raises(TypeError):
        AmqpAnnotatedMessage(value_body=1, header=3)  # type: ignore[arg-type]
    nested: list[Any] = []
    for _ in range(100_000):
        nested = [nested]
    with client.get_queue_sender(q) as s:
        for bad in (
            AmqpAnnotatedMessage(value_body=object()),
            AmqpAnnotatedMessage(value_body=nested),
            AmqpAnnotatedMessage(data_body=[b"a", 1]),  # type: ignore[list-item]
            AmqpAnnotatedMessage(data_body=b"a", properties={"subject": 5}),
            AmqpAnnotatedMessage(data_body=b"a", annotations={"k": {1, 2}}),
        ):
            with pytest.raises(InvalidArgumentError):
                s.send_messages([AmqpAnnotatedMessage(data_body=b"ok"), bad])
    assert _receive_all(client, q, 10) == []


def test_batch_default_size_and_per_link_keywords(client: Any, make_queue: Any) -> None:
    q = make_queue()
    batch = ServiceBusMessageBatch()
    assert batch.max_size_in_bytes == 256 * 1024
    batch.add_message(ServiceBusMessage("m"))
    with client.get_queue_sender(q, socket_timeout=5, client_identifier="me") as s:
        s.send_messages(batch)
    with pytest.raises(InvalidArgumentError):
        client.get_queue_sender(q, sockettimeout=5)
    with pytest.raises(ValueError):
        client.get_queue_receiver(q, receive_mode="receiveanddelete", auto_lock_renewer=AutoLockRenewer())
    with client.get_queue_receiver(q, socket_timeout=5, client_identifier="me", max_wait_time=1) as r:
        assert [str(m) for m in r.receive_messages(1, max_wait_time=1)] == ["m"]


def test_iso_8601_durations(admin: Any, queue_name: str) -> None:
    admin.create_queue(queue_name, lock_duration="PT13S", default_message_time_to_live="P1DT2H3M4.5S")
    props = admin.get_queue(queue_name)
    assert props.lock_duration == timedelta(seconds=13)
    assert props.default_message_time_to_live == timedelta(days=1, hours=2, minutes=3, seconds=4.5)
    admin.update_queue(props, auto_delete_on_idle="P10675199DT2H48M5.4775807S", lock_duration="PT1M")
    props = admin.get_queue(queue_name)
    assert props.lock_duration == timedelta(minutes=1)
    assert props.auto_delete_on_idle >= timedelta(days=10675199)
    for bad in ("PT", "P", "13S", "PT13X", "P1DT", "x" * 100):
        with pytest.raises(InvalidArgumentError):
            admin.update_queue(props, lock_duration=bad)
    assert admin.get_queue(queue_name).lock_duration == timedelta(minutes=1)


def test_async_session_lists_await_or_iterate(redis_server: RedisServer) -> None:
    q = "sessions-" + uuid.uuid4().hex[:8]
    with ServiceBusAdministrationClient.from_connection_string(redis_server.url) as admin:
        admin.create_queue(q, requires_session=True)
    with ServiceBusClient.from_connection_string(redis_server.url) as c, c.get_queue_sender(q) as s:
        s.send_messages([ServiceBusMessage("m", session_id=sid) for sid in ("b", "a")])
        assert c.list_queue_sessions(q) == ["a", "b"]

    async def main() -> tuple[list[str], list[str]]:
        async with AsyncServiceBusClient.from_connection_string(redis_server.url) as c:
            iterated = [sid async for sid in c.list_queue_sessions(q)]
            awaited = await c.list_queue_sessions(q)
            return iterated, awaited

    assert asyncio.run(main()) == (["a", "b"], ["a", "b"])


def test_uuid_message_ids_round_trip_and_deduplicate(client: Any, make_queue: Any) -> None:
    q = make_queue(requires_duplicate_detection=True, enable_partitioning=True, partition_count=4)
    mid = uuid.uuid4()
    m = ServiceBusMessage("a", message_id=mid)
    assert m.message_id == mid
    with client.get_queue_sender(q) as s:
        s.send_messages([m, ServiceBusMessage("dup", message_id=mid), ServiceBusMessage("b", message_id=str(mid))])
        later = uuid.uuid4()
        s.schedule_messages(ServiceBusMessage("later", message_id=later), datetime.now(UTC) - timedelta(minutes=1))
    got = {str(x): x for x in _receive_all(client, q, 10)}
    assert sorted(got) == ["a", "later"]  # the str form of an id is the same id to duplicate detection
    assert got["a"].message_id == mid and got["later"].message_id == later
    with pytest.raises(InvalidArgumentError):
        ServiceBusMessage("x", message_id=5)  # type: ignore[arg-type]


def test_a_session_receiver_in_receive_and_delete_mode_may_renew_its_session(client: Any, admin: Any) -> None:
    q = "s-" + uuid.uuid4().hex[:8]
    admin.create_queue(q, requires_session=True)
    with client.get_queue_sender(q) as s:
        s.send_messages(ServiceBusMessage("m", session_id="s1"))
    renewer = AutoLockRenewer()
    with (
        renewer,
        client.get_queue_receiver(
            q, session_id="s1", receive_mode="receiveanddelete", auto_lock_renewer=renewer, max_wait_time=1
        ) as r,
    ):
        assert [str(m) for m in r.receive_messages(1, max_wait_time=1)] == ["m"]


def test_received_properties_by_bytes_keys_and_receiver_next(client: Any, make_queue: Any) -> None:
    q = make_queue()
    with client.get_queue_sender(q) as s:
        s.send_messages(ServiceBusMessage("m", application_properties={"index": 3, b"raw": "v"}))
    with client.get_queue_receiver(q, max_wait_time=1) as r:
        m = r.next()
        r.complete_message(m)
        with pytest.raises(StopIteration):
            r.next()
    assert m.sent_application_properties == {"index": 3, "raw": "v"}  # str keys, as sent
    props = m.application_properties
    assert props == {b"index": 3, b"raw": b"v"}  # the SDK's: bytes keys and str values
    assert props[b"index"] == props["index"] == 3 and "raw" in props and props.get("raw") == b"v"
    assert props.get(b"missing") is None and b"\xff" not in props
    with pytest.raises(KeyError):
        props[b"missing"]
