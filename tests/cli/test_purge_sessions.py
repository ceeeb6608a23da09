"""`sbredis purge` on a session-enabled queue or subscription: its active messages are taken
session by session; a session a receiver holds stays as it is, and the command says so."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from sbredis import ServiceBusMessage

pytestmark = pytest.mark.integration


def test_purge_a_session_queue(sb: Any, admin: Any, client: Any) -> None:
    q = "sess-" + uuid.uuid4().hex[:8]
    admin.create_queue(q, requires_session=True, enable_partitioning=True, partition_count=2)
    try:
        with client.get_queue_sender(q) as s:
            s.send_messages([ServiceBusMessage(f"m{i}", session_id=f"s{i % 3}") for i in range(12)])
        dry = sb("purge", q, "--dry-run")
        assert dry.code == 0 and "would purge 12 active message(s)" in dry.out, dry
        peeked = sb("peek", q, "--count", "20", "--json")  # every session's messages, nothing locked
        assert peeked.code == 0 and sorted(m["body"] for m in peeked.json()) == sorted(f"m{i}" for i in range(12)), (
            peeked
        )
        with client.get_queue_receiver(q, session_id="s1"):  # held while the purge runs
            r = sb("purge", q, "--yes", "--batch", "3")
            assert r.code == 0 and "purged 8 active message(s)" in r.out, r
            assert "1 session(s) held by a receiver were left as they were: s1" in r.err, r
        assert admin.get_queue_runtime_properties(q).active_message_count == 4
        r = sb("purge", q, "--yes", "--json")
        assert r.code == 0 and r.json() == {"entity": q, "purged": 4}, r
        assert admin.get_queue_runtime_properties(q).active_message_count == 0
    finally:
        admin.delete_queue(q)


def test_purge_a_session_subscription(sb: Any, admin: Any, client: Any) -> None:
    t = "sesst-" + uuid.uuid4().hex[:8]
    admin.create_topic(t)
    try:
        admin.create_subscription(t, "s", requires_session=True)
        with client.get_topic_sender(t) as s:
            s.send_messages([ServiceBusMessage(f"m{i}", session_id=f"k{i % 2}") for i in range(5)])
        r = sb("purge", f"{t}:s", "--yes")
        assert r.code == 0 and "purged 5 active message(s)" in r.out and not r.err, r
        assert admin.get_subscription_runtime_properties(t, "s").active_message_count == 0
    finally:
        admin.delete_topic(t)
