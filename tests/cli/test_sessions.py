"""`sbredis sessions list | show` as a subprocess against the test redis-server."""

from __future__ import annotations

import base64
import uuid
from typing import Any

import pytest

from sbredis import ServiceBusMessage

pytestmark = pytest.mark.integration


def session_queue(admin: Any) -> str:
    q = "cls-" + uuid.uuid4().hex[:8]
    admin.create_queue(q, requires_session=True, enable_partitioning=True)
    return q


def test_list_and_show(sb: Any, admin: Any, client: Any) -> None:
    q = session_queue(admin)
    try:
        with client.get_queue_sender(q) as s:
            s.send_messages([ServiceBusMessage(f"m{i}", session_id="order-7") for i in range(3)])
            s.send_messages(ServiceBusMessage("x", session_id="order-8"))
        with client.get_queue_receiver(q, session_id="order-8") as r:  # state only: no messages left
            (m,) = r.receive_messages(1, max_wait_time=2)
            r.complete_message(m)
            r.session.set_state("shipped ✓")
        with client.get_queue_receiver(q, session_id="bin") as r:
            r.session.set_state(b"\xff\x00\x01")

        listed = sb("sessions", "list", q, "--json")
        assert listed.code == 0, listed
        assert listed.json() == ["bin", "order-7", "order-8"]
        table = sb("sessions", "list", q)
        assert table.out.split() == ["SESSION_ID", "bin", "order-7", "order-8"]

        shown = sb("sessions", "show", q, "order-7", "--json")
        assert shown.code == 0, shown
        assert shown.json() == {
            "session_id": "order-7",
            "entity": q,
            "available": 3,
            "state": None,
            "state_encoding": None,
            "state_size": 0,
        }
        text = sb("sessions", "show", q, "order-8")
        assert text.code == 0, text
        assert "state:          shipped ✓" in text.out and "available:      0" in text.out
        binary = sb("sessions", "show", q, "bin", "--json").json()
        assert (binary["state"], binary["state_encoding"], binary["state_size"]) == (
            base64.b64encode(b"\xff\x00\x01").decode(),
            "base64",
            3,
        )
        # show let go of the session at once: a receiver takes it and gets its messages
        with client.get_queue_receiver(q, session_id="order-7", max_wait_time=1) as r:
            got = r.receive_messages(5, max_wait_time=1)
            assert [(m.body_bytes, m.delivery_count) for m in got] == [(b"m0", 0), (b"m1", 0), (b"m2", 0)]
    finally:
        admin.delete_queue(q)


def test_show_a_held_session_fails_at_once(sb: Any, admin: Any, client: Any) -> None:
    q = session_queue(admin)
    try:
        with client.get_queue_sender(q) as s:
            s.send_messages(ServiceBusMessage("m", session_id="busy"))
        with client.get_queue_receiver(q, session_id="busy") as r:
            r.session.set_state("mine")
            shown = sb("sessions", "show", q, "busy")
            assert shown.code == 1, shown  # refused while held, not after the session lock elapsed
            lines = shown.err.strip().splitlines()
            assert len(lines) == 1 and "held by another receiver" in lines[0] and "Traceback" not in shown.err
            r.session.get_state()  # still ours
    finally:
        admin.delete_queue(q)


def test_subscription_sessions_and_errors(sb: Any, admin: Any, client: Any) -> None:
    topic = "clt-" + uuid.uuid4().hex[:8]
    admin.create_topic(topic)
    admin.create_subscription(topic, "s", requires_session=True)
    admin.create_subscription(topic, "plain")
    try:
        with client.get_topic_sender(topic) as s:
            s.send_messages([ServiceBusMessage("a", session_id="t1"), ServiceBusMessage("b", session_id="t2")])
        assert sb("sessions", "list", f"{topic}:s", "--json").json() == ["t1", "t2"]
        assert sb("sessions", "show", f"{topic}/Subscriptions/s", "t2", "--json").json()["available"] == 1
        plain = sb("sessions", "list", f"{topic}:plain")
        assert plain.code == 1 and "InvalidOperationError" in plain.err, plain
        assert sb("sessions", "show", f"{topic}:plain", "x").code == 1
        missing = sb("sessions", "list", "no-such-queue-" + uuid.uuid4().hex[:6])
        assert missing.code == 3, missing
        assert sb("sessions", "show", f"{topic}:", "x").code == 2
        empty = session_queue(admin)
        try:
            r = sb("sessions", "list", empty)
            assert r.code == 0 and "no sessions" in r.out
            assert sb("sessions", "list", empty, "--json").json() == []
        finally:
            admin.delete_queue(empty)
    finally:
        admin.delete_topic(topic)
