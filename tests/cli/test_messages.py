"""`sbredis send | receive | peek` as a subprocess: bodies from argument, file and stdin, --count with
a progress bar, JSON output, settlement by flag, exit code 3 when there is nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sbredis import ServiceBusMessage, ServiceBusSubQueue

pytestmark = pytest.mark.integration


def test_send_from_argument_file_and_stdin(sb: Any, make_queue: Any, client: Any, tmp_path: Path) -> None:
    q = make_queue()
    r = sb(
        "send",
        q,
        "hello",
        "--property",
        "n=5",
        "--property",
        "region=eu",
        "--subject",
        "greeting",
        "--message-id",
        "m-1",
    )
    assert r.code == 0 and f"sent 1 message to {q}" in r.out, r
    f = tmp_path / "body.bin"
    f.write_bytes(b"\x00\xffbinary")
    assert sb("send", q, "--file", str(f)).code == 0
    assert sb("send", q, stdin='{"from": "stdin"}\n').code == 0
    with client.get_queue_receiver(q) as rec:
        msgs = rec.receive_messages(3, max_wait_time=2)
        msgs += rec.receive_messages(3 - len(msgs), max_wait_time=1) if len(msgs) < 3 else []
        rec.complete_messages(msgs)
    by_body = {m.body_bytes: m for m in msgs}
    assert set(by_body) == {b"hello", b"\x00\xffbinary", b'{"from": "stdin"}\n'}
    hello = by_body[b"hello"]
    assert hello.sent_application_properties == {"n": 5, "region": "eu"}
    assert (hello.subject, hello.message_id) == ("greeting", "m-1")


def test_send_count_with_progress_and_json(sb: Any, make_queue: Any, admin: Any) -> None:
    q = make_queue(enable_partitioning=True, partition_count=4)
    r = sb("send", q, "tick", "--count", "250", "--batch", "50", "--progress", "--json")
    assert r.code == 0, r
    assert r.json() == {"entity": q, "sent": 250}  # stdout: one JSON document, no bar
    assert "250/250" in r.err and "[" + "#" * 30 + "]" in r.err
    assert admin.get_queue_runtime_properties(q).active_message_count == 250
    quiet = sb("send", q, "tick", "--count", "3")  # stderr is not a terminal: no bar
    assert quiet.code == 0 and quiet.err == ""


def test_send_usage_errors(sb: Any, make_queue: Any) -> None:
    q = make_queue()
    assert sb("send", q, "x", "--property", "novalue").code == 2
    assert sb("send", q, "x", "--count", "0").code == 2
    assert sb("send", q, "x", "--file", "/no/such/file").code == 2
    missing = sb("send", "no-such-queue", "x")
    assert missing.code == 3 and "no-such-queue" in missing.err


def test_send_to_topic_and_peek_subscription(sb: Any, admin: Any) -> None:
    t = "clitopic"
    admin.create_topic(t)
    try:
        admin.create_subscription(t, "all")
        assert sb("send", t, "fan", "--count", "2").code == 0
        peeked = sb("peek", f"{t}:all", "--json")
        assert peeked.code == 0 and [m["body"] for m in peeked.json()] == ["fan", "fan"]
    finally:
        admin.delete_topic(t)


def test_peek_from_seq_and_dlq(sb: Any, make_queue: Any, client: Any) -> None:
    q = make_queue()
    with client.get_queue_sender(q) as s:
        s.send_messages([ServiceBusMessage(f"m{i}") for i in range(5)])
    every = sb("peek", q, "--json").json()
    assert [m["body"] for m in every] == ["m0", "m1", "m2", "m3", "m4"]
    third = every[2]["sequence_number"]
    later = sb("peek", q, "--from-seq", str(third), "--count", "2", "--json").json()
    assert [m["body"] for m in later] == ["m2", "m3"]
    table = sb("peek", q)
    assert table.out.splitlines()[0].split()[:2] == ["SEQUENCE_NUMBER", "MESSAGE_ID"] and "m4" in table.out
    empty = sb("peek", q, "--dlq")
    assert empty.code == 3 and "no message" in empty.err
    with client.get_queue_receiver(q) as r:
        (m,) = r.receive_messages(1, max_wait_time=2)
        r.dead_letter_message(m, reason="Broken", error_description="bad")
    dead = sb("peek", q, "--dlq", "--json")
    assert dead.code == 0
    (d,) = dead.json()
    assert (d["body"], d["dead_letter_reason"]) == ("m0", "Broken")
    assert "Broken" in sb("peek", q, "--dlq").out


def test_receive_settles_by_flag(sb: Any, make_queue: Any, admin: Any, client: Any) -> None:
    q = make_queue()
    with client.get_queue_sender(q) as s:
        s.send_messages([ServiceBusMessage(f"m{i}") for i in range(4)])
    r = sb("receive", q, "--count", "2", "--settle", "complete", "--json")
    assert r.code == 0, r
    got = r.json()
    assert [m["body"] for m in got] == ["m0", "m1"] and {m["settled"] for m in got} == {"complete"}
    assert admin.get_queue_runtime_properties(q).active_message_count == 2
    r = sb("receive", q, "--settle", "dead-letter", "--reason", "Manual")
    assert r.code == 0 and "dead-letter" in r.out
    with client.get_queue_receiver(q, sub_queue=ServiceBusSubQueue.DEAD_LETTER) as dlq:
        (d,) = dlq.peek_messages(5, sequence_number=0)
        assert (str(d), d.dead_letter_reason) == ("m2", "Manual")
    default = sb("receive", q, "--json")  # stdin is not a terminal: abandon, nothing lost
    assert default.code == 0 and default.json()[0]["settled"] == "abandon"
    deleted = sb("receive", q, "--mode", "receive-and-delete", "--json")
    assert deleted.code == 0 and deleted.json()[0]["body"] == "m3"
    props = admin.get_queue_runtime_properties(q)
    assert (props.active_message_count, props.dead_letter_message_count) == (0, 1)
    empty = sb("receive", q, "--max-wait", "0.2", "--json")
    assert empty.code == 3 and json.loads(empty.out) == []
    assert sb("receive", q, "--mode", "receive-and-delete", "--settle", "complete").code == 2
