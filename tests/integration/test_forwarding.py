"""Auto-forwarding on a real Redis: chains of 1-5 hops, dead-letter forwarding, the transfer
dead-letter subqueue, topics in the chain, and a process SIGKILLed half-way through a forward."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from sbredis import ServiceBusMessage, ServiceBusReceiveMode, ServiceBusSubQueue
from sbredis._core.rules import SqlRuleFilter
from sbredis.exceptions import InvalidOperationError, MessagingEntityNotFoundError

pytestmark = [pytest.mark.integration, pytest.mark.conformance]
ROOT = Path(__file__).resolve().parents[2]


def name(prefix: str = "f") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def take_all(client: Any, queue: str, wait: float = 0.5, **kw: Any) -> list[Any]:
    """Receive (and delete) everything; the empty receive also pulls what forwards into `queue`."""
    with client.get_queue_receiver(queue, receive_mode=ServiceBusReceiveMode.RECEIVE_AND_DELETE, **kw) as r:
        out: list[Any] = []
        while True:
            got = r.receive_messages(200, max_wait_time=wait)
            if not got:
                return out
            out += got


@pytest.mark.parametrize("hops", [1, 2, 3, 4, 5])
def test_forwarding_chain(admin: Any, client: Any, hops: int) -> None:
    """q0 -> q1 -> ... -> q<hops>: up to 4 hops arrive; the 5th hop goes to the transfer
    dead-letter subqueue of the entity that would have made it."""
    queues = [name(f"c{i}") for i in range(hops + 1)]
    admin.create_queue(queues[-1], enable_partitioning=True, partition_count=3)
    for i in range(hops - 1, -1, -1):
        admin.create_queue(queues[i], forward_to=queues[i + 1], enable_partitioning=True, partition_count=2)
    with client.get_queue_sender(queues[0]) as s:
        s.send_messages([ServiceBusMessage(f"m{i}", application_properties={"i": i}) for i in range(30)])
    if hops <= 4:
        got = take_all(client, queues[-1])
        assert sorted(str(m) for m in got) == sorted(f"m{i}" for i in range(30))
        for q in queues[:-1]:
            props = admin.get_queue_runtime_properties(q)
            assert props.active_message_count == 0 and props.transfer_message_count == 0
            assert props.transfer_dead_letter_message_count == 0
    else:
        assert take_all(client, queues[-1]) == []
        stuck = queues[4]  # made 4 hops to get here; a 5th is refused
        dead = take_all(client, stuck, sub_queue=ServiceBusSubQueue.TRANSFER_DEAD_LETTER)
        assert len(dead) == 30
        assert {m.dead_letter_reason for m in dead} == {"MaxTransferHopCountExceeded"}
        assert {m.dead_letter_source for m in dead} == {stuck}
        assert sorted(m.sent_application_properties["i"] for m in dead) == list(range(30))


def test_a_forwarding_cycle_ends_in_the_transfer_dead_letter_subqueue(admin: Any, client: Any) -> None:
    a, b = name("a"), name("b")
    admin.create_queue(a)
    admin.create_queue(b, forward_to=a)
    q = admin.get_queue(a)
    q.forward_to = b  # a forward target must exist at creation: the cycle closes with an update
    admin.update_queue(q)
    with client.get_queue_sender(a) as s:
        s.send_messages(ServiceBusMessage("round and round"))
    admin.forward_pending()  # whatever the sender's drain left at its depth limit
    dead = take_all(client, a, sub_queue=ServiceBusSubQueue.TRANSFER_DEAD_LETTER)
    dead += take_all(client, b, sub_queue=ServiceBusSubQueue.TRANSFER_DEAD_LETTER)
    assert [(str(m), m.dead_letter_reason) for m in dead] == [("round and round", "MaxTransferHopCountExceeded")]
    assert dead[0].dead_letter_source == a  # a -> b -> a -> b -> a: four hops, the fifth is refused


def test_forwarding_keeps_properties_and_dedups_at_the_destination(admin: Any, client: Any) -> None:
    dst, src = name("dst"), name("src")
    admin.create_queue(dst, requires_duplicate_detection=True)
    admin.create_queue(src, forward_to=dst)
    with client.get_queue_sender(src) as s:
        m = ServiceBusMessage(
            "x", message_id="same", subject="subj", correlation_id="c", application_properties={"a": 1}
        )
        s.send_messages(m)
        s.send_messages(ServiceBusMessage("again", message_id="same"))
    [got] = take_all(client, dst)
    assert (str(got), got.message_id, got.subject, got.correlation_id) == ("x", "same", "subj", "c")
    assert got.sent_application_properties == {"a": 1}


def test_dead_lettered_messages_forward_with_their_reason(admin: Any, client: Any) -> None:
    dst, src = name("dst"), name("src")
    admin.create_queue(dst)
    admin.create_queue(src, forward_dead_lettered_messages_to=dst, max_delivery_count=1)
    with client.get_queue_sender(src) as s:
        s.send_messages([ServiceBusMessage("explicit"), ServiceBusMessage("abandoned")])
    with client.get_queue_receiver(src) as r:
        msgs = {str(m): m for m in r.receive_messages(2, max_wait_time=1)}
        r.dead_letter_message(msgs["explicit"], reason="bad", error_description="very")
        r.abandon_message(msgs["abandoned"])  # max_delivery_count=1: dead-lettered
    got = {str(m): m for m in take_all(client, dst)}
    assert set(got) == {"explicit", "abandoned"}
    assert got["explicit"].dead_letter_source == src
    assert got["explicit"].sent_application_properties == {
        "DeadLetterReason": "bad",
        "DeadLetterErrorDescription": "very",
    }
    assert got["abandoned"].sent_application_properties["DeadLetterReason"] == "MaxDeliveryCountExceeded"
    assert take_all(client, src, sub_queue=ServiceBusSubQueue.DEAD_LETTER) == []


@pytest.mark.parametrize("problem", ["missing", "disabled"])
def test_undeliverable_forward_lands_in_transfer_dead_letter(admin: Any, client: Any, problem: str) -> None:
    dst, src = name("dst"), name("src")
    admin.create_queue(dst, status="Disabled" if problem == "disabled" else "Active")
    admin.create_queue(src, forward_to=dst)
    if problem == "missing":
        admin.delete_queue(dst)  # it existed at creation (required), gone by the send
    with client.get_queue_sender(src) as s:
        s.send_messages(ServiceBusMessage("x"))
    props = admin.get_queue_runtime_properties(src)
    assert props.active_message_count == 0 and props.transfer_dead_letter_message_count == 1
    with client.get_queue_receiver(src, sub_queue=ServiceBusSubQueue.TRANSFER_DEAD_LETTER) as r:
        [m] = r.receive_messages(5, max_wait_time=1)
        expected = "MessagingEntityNotFound" if problem == "missing" else "MessagingEntityDisabled"
        assert m.dead_letter_reason == expected and dst in (m.dead_letter_error_description or "")
        assert m.dead_letter_source == src and str(m) == "x"
        with pytest.raises(InvalidOperationError):
            r.dead_letter_message(m)  # a dead-letter subqueue's messages cannot be dead-lettered again
        r.complete_message(m)
    assert admin.get_queue_runtime_properties(src).transfer_dead_letter_message_count == 0


def test_subscription_transfer_dead_letter_subqueue(admin: Any, client: Any) -> None:
    topic = name("topic")
    admin.create_topic(topic)
    nowhere = name("nowhere")
    admin.create_queue(nowhere)
    admin.create_subscription(topic, "lost", forward_to=nowhere)
    admin.delete_queue(nowhere)
    with client.get_topic_sender(topic) as s:
        s.send_messages(ServiceBusMessage("x"))
    props = admin.get_subscription_runtime_properties(topic, "lost")
    assert props.active_message_count == 0 and props.transfer_dead_letter_message_count == 1
    with client.get_subscription_receiver(topic, "lost", sub_queue=ServiceBusSubQueue.TRANSFER_DEAD_LETTER) as r:
        [m] = r.receive_messages(5, max_wait_time=1)
        assert m.dead_letter_reason == "MessagingEntityNotFound"
        assert m.dead_letter_source == f"{topic}/Subscriptions/lost"
        assert m.entity_name == f"{topic}/Subscriptions/lost/$Transfer"
        r.complete_message(m)


def test_subscription_forwards_to_a_queue_and_a_queue_to_a_topic(admin: Any, client: Any) -> None:
    """queue -> topic (fan-out, filters) -> subscription -> queue."""
    entry, topic, sink = name("entry"), name("topic"), name("sink")
    admin.create_queue(sink)
    admin.create_topic(topic, enable_partitioning=True, partition_count=2)
    admin.create_subscription(topic, "odd", forward_to=sink)
    admin.delete_rule(topic, "odd", "$Default")
    admin.create_rule(topic, "odd", "odd", filter=SqlRuleFilter("n % 2 = 1"))
    admin.create_subscription(topic, "keep")
    admin.create_queue(entry, forward_to=topic)
    with client.get_queue_sender(entry) as s:
        s.send_messages([ServiceBusMessage(str(n), application_properties={"n": n}) for n in range(10)])
    assert sorted(int(str(m)) for m in take_all(client, sink)) == [1, 3, 5, 7, 9]
    with client.get_subscription_receiver(topic, "keep") as r:
        assert len(r.receive_messages(20, max_wait_time=1)) == 10
    sub = admin.get_subscription_runtime_properties(topic, "odd")
    assert sub.active_message_count == 0 and sub.transfer_message_count == 0


def test_forwarding_to_a_missing_entity_is_refused_at_creation(admin: Any) -> None:
    src, topic, missing = name("src"), name("topic"), name("missing")
    admin.create_topic(topic)
    with pytest.raises(MessagingEntityNotFoundError, match=missing):
        admin.create_queue(src, forward_to=missing)
    with pytest.raises(MessagingEntityNotFoundError, match=missing):
        admin.create_queue(src, forward_dead_lettered_messages_to=missing)
    with pytest.raises(MessagingEntityNotFoundError, match=missing):
        admin.create_subscription(topic, "s", forward_to=missing)
    with pytest.raises(MessagingEntityNotFoundError):
        admin.get_queue(src)  # nothing was created
    admin.create_queue(src, forward_to=topic)  # a topic is a target too
    admin.create_subscription(topic, "s", forward_dead_lettered_messages_to=src)


def test_update_turns_forwarding_on(admin: Any, client: Any) -> None:
    dst, src = name("dst"), name("src")
    admin.create_queue(dst)
    admin.create_queue(src)
    with client.get_queue_sender(src) as s:
        s.send_messages(ServiceBusMessage("waiting"))
    q = admin.get_queue(src)
    q.forward_to = dst
    admin.update_queue(q)
    assert admin.forward_pending() >= 1
    assert [str(m) for m in take_all(client, dst)] == ["waiting"]


# -------------------------------------------------------------------- killed half-way
KILLER = textwrap.dedent(
    """
    import os, signal, sys
    sys.path.insert(0, {root!r})
    from sbredis import ServiceBusClient, ServiceBusMessage
    from sbredis._sync import _forwarder

    url, src, stage = sys.argv[1:4]

    def die(*_a, **_k):
        os.kill(os.getpid(), signal.SIGKILL)

    real_deliver = _forwarder.Forwarder._deliver
    if stage == "after_store":  # the send script stored the messages; no forward_out yet
        _forwarder.Forwarder.drain = die
    elif stage == "after_move":  # forward_out moved them into the outbox; nothing delivered
        _forwarder.Forwarder._deliver = die
    elif stage == "after_delivery":  # the destination stored them; the outbox was not acknowledged
        def deliver(self, *a, **k):
            real_deliver(self, *a, **k)
            die()
        _forwarder.Forwarder._deliver = deliver
    client = ServiceBusClient.from_connection_string(url)
    with client.get_queue_sender(src) as s:
        s.send_messages([ServiceBusMessage(f"m{{i}}") for i in range(100)])
    print("not killed", flush=True)
    """
)


@pytest.mark.parametrize("stage", ["after_store", "after_move", "after_delivery"])
def test_sigkill_mid_forward_loses_and_duplicates_nothing(
    redis_server: Any, admin: Any, client: Any, stage: str
) -> None:
    """A sender process is SIGKILLed at each point between the source write and the outbox
    acknowledgement; the next drain (a receiver's pull on the destination) delivers every message
    exactly once, although the destination has no duplicate detection."""
    dst, mid, src = name("dst"), name("mid"), name("src")
    admin.create_queue(dst, enable_partitioning=True, partition_count=4)
    admin.create_queue(mid, forward_to=dst)
    admin.create_queue(src, forward_to=mid, enable_partitioning=True, partition_count=2)
    proc = subprocess.run(
        [sys.executable, "-c", KILLER.format(root=str(ROOT)), redis_server.url, src, stage],
        capture_output=True,
        timeout=60,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stdout + proc.stderr
    admin._maintained_at = time.monotonic()  # no automatic maintenance (it would drain): look first
    before = admin.get_queue_runtime_properties(src)
    if stage == "after_store":
        assert before.active_message_count == 100 and before.transfer_message_count == 0
    else:
        assert before.active_message_count == 0 and before.transfer_message_count == 100
    got = take_all(client, dst)
    bodies = sorted(str(m) for m in got)
    assert bodies == sorted(f"m{i}" for i in range(100))  # all there, none twice
    for q in (src, mid):
        props = admin.get_queue_runtime_properties(q)
        assert props.active_message_count == 0 and props.transfer_message_count == 0
    assert take_all(client, dst) == []


def test_a_forwarding_queue_is_never_idle(admin: Any, client: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from datetime import timedelta

    monkeypatch.setenv("SBREDIS_MIN_AUTO_DELETE_ON_IDLE", "0.1")
    dst, src = name("dst"), name("src")
    admin.create_queue(dst)
    admin.create_queue(src, forward_to=dst, auto_delete_on_idle=timedelta(milliseconds=300))
    time.sleep(0.5)
    assert src not in admin.delete_idle_entities()
    assert admin.get_queue(src).forward_to.endswith(f"/{dst}")
