"""Auto-forwarding from session-enabled queues and subscriptions on a real Redis: the session id
travels with each message, a session's messages arrive together and in order, a destination that
requires sessions files them under their sessions, and what cannot be delivered still goes to the
transfer dead-letter subqueue."""

from __future__ import annotations

import uuid
from collections import defaultdict
from typing import Any

import pytest

from sbredis import NEXT_AVAILABLE_SESSION, ServiceBusMessage, ServiceBusReceiveMode, ServiceBusSubQueue

pytestmark = [pytest.mark.integration, pytest.mark.conformance]
SESSIONS = ("alpha", "beta", "gamma", "delta")


def name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def send_interleaved(client: Any, entity: str, per_session: int = 5, topic: bool = False) -> None:
    """per_session messages of each session, sent interleaved (alpha-0, beta-0, ..., alpha-1, ...)."""
    msgs = [
        ServiceBusMessage(f"{sid}-{i}", session_id=sid, application_properties={"i": i})
        for i in range(per_session)
        for sid in SESSIONS
    ]
    sender = client.get_topic_sender(entity) if topic else client.get_queue_sender(entity)
    with sender as s:
        s.send_messages(msgs)


def drain_session(client: Any, queue: str, sid: Any, wait: float = 0.5) -> tuple[str, list[Any]]:
    with client.get_queue_receiver(
        queue, session_id=sid, receive_mode=ServiceBusReceiveMode.RECEIVE_AND_DELETE, max_wait_time=wait
    ) as r:
        out: list[Any] = []
        while got := r.receive_messages(50, max_wait_time=wait):
            out += got
        return r.session.session_id, out


def take_all(client: Any, queue: str, wait: float = 0.5, **kw: Any) -> list[Any]:
    with client.get_queue_receiver(queue, receive_mode=ServiceBusReceiveMode.RECEIVE_AND_DELETE, **kw) as r:
        out: list[Any] = []
        while got := r.receive_messages(200, max_wait_time=wait):
            out += got
        return out


def assert_whole_sessions(by_session: dict[str, list[Any]], per_session: int = 5) -> None:
    assert sorted(by_session) == sorted(SESSIONS)
    for sid, msgs in by_session.items():
        assert [str(m) for m in msgs] == [f"{sid}-{i}" for i in range(per_session)]  # all, in send order
        assert all(m.session_id == sid for m in msgs)


@pytest.mark.parametrize("partitions", [1, 3])
def test_session_queue_forwards_to_a_session_queue(admin: Any, client: Any, partitions: int) -> None:
    src, dst = name("ss"), name("sd")
    parts = {"enable_partitioning": True, "partition_count": partitions} if partitions > 1 else {}
    admin.create_queue(dst, requires_session=True, **parts)
    created = admin.create_queue(
        src, requires_session=True, forward_to=dst, enable_partitioning=True, partition_count=2
    )
    assert created.requires_session and created.forward_to.endswith(f"/{dst}")
    send_interleaved(client, src)
    by_session: dict[str, list[Any]] = {}
    for _ in SESSIONS:  # each session whole, to whichever receiver takes it
        sid, msgs = drain_session(client, dst, NEXT_AVAILABLE_SESSION)
        by_session[sid] = msgs
    assert_whole_sessions(by_session)
    assert sorted(client.list_queue_sessions(src)) == []  # nothing left at the source
    props = admin.get_queue_runtime_properties(src)
    assert props.active_message_count == 0 and props.transfer_message_count == 0
    assert props.transfer_dead_letter_message_count == 0


def test_a_receiver_waiting_on_a_named_session_gets_it_forwarded(admin: Any, client: Any) -> None:
    src, dst = name("ss"), name("sd")
    admin.create_queue(dst, requires_session=True, enable_partitioning=True, partition_count=4)
    admin.create_queue(src, requires_session=True, forward_to=dst)
    send_interleaved(client, src, per_session=3)
    for sid in SESSIONS:
        got_sid, msgs = drain_session(client, dst, sid)
        assert got_sid == sid and [str(m) for m in msgs] == [f"{sid}-{i}" for i in range(3)]


def test_session_queue_forwards_to_a_plain_queue_keeping_the_session_id(admin: Any, client: Any) -> None:
    src, dst = name("ss"), name("pd")
    admin.create_queue(dst)
    admin.create_queue(src, requires_session=True, forward_to=dst)
    send_interleaved(client, src)
    got = take_all(client, dst)
    by_session: dict[str, list[Any]] = defaultdict(list)
    for m in got:
        by_session[m.session_id].append(m)
    assert_whole_sessions(by_session)


def test_session_subscription_forwards_to_a_session_queue(admin: Any, client: Any) -> None:
    topic, dst = name("st"), name("sd")
    admin.create_queue(dst, requires_session=True, enable_partitioning=True, partition_count=2)
    admin.create_topic(topic, enable_partitioning=True, partition_count=2)
    sub = admin.create_subscription(topic, "s", requires_session=True, forward_to=dst)
    assert sub.requires_session and sub.forward_to.endswith(f"/{dst}")
    send_interleaved(client, topic, topic=True)
    by_session = {}
    for sid in SESSIONS:
        got_sid, msgs = drain_session(client, dst, sid)
        by_session[got_sid] = msgs
    assert_whole_sessions(by_session)


def test_plain_queue_forwards_session_messages_into_a_session_queue(admin: Any, client: Any) -> None:
    src, dst = name("ps"), name("sd")
    admin.create_queue(dst, requires_session=True, enable_partitioning=True, partition_count=3)
    admin.create_queue(src, forward_to=dst, enable_partitioning=True, partition_count=2)
    send_interleaved(client, src)
    by_session = {sid: drain_session(client, dst, sid)[1] for sid in SESSIONS}
    assert_whole_sessions(by_session)


def test_a_message_without_session_cannot_reach_a_session_queue(admin: Any, client: Any) -> None:
    src, dst = name("ps"), name("sd")
    admin.create_queue(dst, requires_session=True)
    admin.create_queue(src, forward_to=dst)
    with client.get_queue_sender(src) as s:
        s.send_messages([ServiceBusMessage("no session"), ServiceBusMessage("a", session_id="a")])
    assert [str(m) for m in drain_session(client, dst, "a")[1]] == ["a"]
    dead = take_all(client, src, sub_queue=ServiceBusSubQueue.TRANSFER_DEAD_LETTER)
    assert [str(m) for m in dead] == ["no session"]


def test_dead_lettered_session_messages_forward_to_a_session_queue(admin: Any, client: Any) -> None:
    src, dl = name("ss"), name("dl")
    admin.create_queue(dl, requires_session=True)
    admin.create_queue(src, requires_session=True, forward_dead_lettered_messages_to=dl)
    with client.get_queue_sender(src) as s:
        s.send_messages([ServiceBusMessage(f"m{i}", session_id="x") for i in range(3)])
    with client.get_queue_receiver(src, session_id="x", max_wait_time=0.5) as r:
        for m in r.receive_messages(3, max_wait_time=1):
            r.dead_letter_message(m, reason="bad")
    sid, got = drain_session(client, dl, "x")
    assert sid == "x" and [str(m) for m in got] == ["m0", "m1", "m2"]
    assert all(m.application_properties["DeadLetterReason"] == b"bad" for m in got)  # as the plain forward keeps it


def test_a_session_queue_forwarding_to_itself_ends_in_the_transfer_dead_letter_subqueue(
    admin: Any, client: Any
) -> None:
    q = name("self")
    admin.create_queue(q, requires_session=True, forward_to=q)
    with client.get_queue_sender(q) as s:
        s.send_messages(ServiceBusMessage("round", session_id="r"))
    admin.forward_pending()  # whatever the sender's drain left at its depth limit
    dead = take_all(client, q, sub_queue=ServiceBusSubQueue.TRANSFER_DEAD_LETTER)
    assert [(str(m), m.session_id) for m in dead] == [("round", "r")]
