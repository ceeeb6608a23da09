"""What the dashboard's actions tell the user, over HTTP against a real server: a confirmed action
whose form cannot work comes back with the reason and changes nothing; one that partly applies says
what it left; a test message's properties are typed; bodies that are not text are shown safely."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from sbredis import ServiceBusMessage, ServiceBusSubQueue
from sbredis.dashboard.server import Running, start
from tests.dashboard.conftest import Settings, dead_letter
from tests.dashboard.test_security import call, csrf_and_cookie

pytestmark = pytest.mark.integration


def refunds(admin: Any, client: Any, name: str) -> str:
    """A queue of 3 messages, 2 of them dead-lettered."""
    admin.create_queue(name)
    with client.get_queue_sender(name) as s:
        s.send_messages([ServiceBusMessage(f"refund-{i}", message_id=f"refund-{i}") for i in range(3)])
    dead_letter(client, name, 2)
    return name


def baskets(admin: Any, client: Any, name: str) -> str:
    """A session queue with two sessions of one message each."""
    admin.create_queue(name, requires_session=True)
    with client.get_queue_sender(name) as s:
        s.send_messages([ServiceBusMessage("item", session_id=f"basket-{i}") for i in range(2)])
    return name


@pytest.fixture(scope="module")
def board(redis_url: str, admin: Any, client: Any) -> Iterator[Running]:
    refunds(admin, client, "refunds")
    running = start(Settings.make(redis_url, poll_seconds=0.5))
    yield running
    running.stop()


def act(board: Running, verb: str, form: dict[str, str]) -> dict[str, str]:
    """POST a confirmed action; the query of the page it redirects to (``done`` or ``error``)."""
    token, cookie = csrf_and_cookie(board.url)
    r = call(board.url, "POST", f"/action/{verb}", {**form, "csrf": token, "confirmed": "yes"}, Cookie=cookie)
    assert r.status == 303, (verb, r.status, r.text[:300])
    return {k: v[0] for k, v in parse_qs(urlsplit(r.headers["location"]).query).items()}


@pytest.mark.parametrize(
    ("verb", "form", "error"),
    [
        ("purge", {"queue": "scheduled"}, "purge takes active, deadletter or transferdeadletter"),
        ("resubmit", {"queue": "active", "all": "1", "target": "refunds"}, "resubmit takes deadletter or"),
        ("resubmit", {"queue": "deadletter", "all": "1"}, "choose where to resubmit to"),
        ("resubmit", {"queue": "deadletter", "target": "refunds"}, "select at least one message"),
        ("cancel", {"seq_list": ""}, "select at least one scheduled message"),
        ("send", {"body": "x", "properties": "region=eu\nno value here"}, "a property is NAME=VALUE, not 'no value"),
        ("send", {"body": "x", "properties": "=eu"}, "a property is NAME=VALUE, not '=eu'"),
    ],
)
def test_an_action_that_cannot_work_says_why_and_changes_nothing(
    board: Running, admin: Any, verb: str, form: dict[str, str], error: str
) -> None:
    before = admin.get_queue_runtime_properties("refunds")
    got = act(board, verb, {"entity": "refunds", **form})
    assert "done" not in got and got["error"].startswith(error), got
    after = admin.get_queue_runtime_properties("refunds")
    assert (after.active_message_count, after.dead_letter_message_count, after.scheduled_message_count) == (
        before.active_message_count,
        before.dead_letter_message_count,
        before.scheduled_message_count,
    )


def test_a_resubmit_of_a_message_already_gone_says_so(board: Running, admin: Any, client: Any) -> None:
    q = refunds(admin, client, "refunds-gone")
    with client.get_queue_receiver(q, sub_queue=ServiceBusSubQueue.DEAD_LETTER) as r:
        seqs = [m.sequence_number for m in r.peek_messages(10)]
    assert len(seqs) == 2
    got = act(board, "resubmit", {"entity": q, "queue": "deadletter", "target": q, "seq_list": f"{seqs[0]},999999"})
    assert got["done"] == f"Resubmitted 1 message(s) of {q} to {q}. 1 selected message(s) were no longer there", got
    assert admin.get_queue_runtime_properties(q).dead_letter_message_count == 1


def test_a_test_message_gets_typed_properties_and_blank_lines_are_skipped(
    board: Running, admin: Any, client: Any
) -> None:
    q = baskets(admin, client, "baskets-send")
    lines = "region = eu\n\n  \nattempt=3\nratio=0.5\nurgent=true\nnote={not json}"
    got = act(board, "send", {"entity": q, "body": "hello", "properties": lines, "session_id": "basket-t"})
    assert got["done"] == f"Sent a test message to {q}.", got
    with client.get_queue_receiver(q, session_id="basket-t", max_wait_time=2) as r:
        (m,) = r.receive_messages(1, max_wait_time=2)
        r.complete_message(m)
    assert b"".join(m.body) == b"hello"
    assert m.application_properties == {
        b"region": b"eu",  # strings come back as bytes, as in the SDK
        b"attempt": 3,
        b"ratio": 0.5,
        b"urgent": True,
        b"note": b"{not json}",
    }


def test_purging_a_session_queue_leaves_a_held_session_and_says_so(board: Running, admin: Any, client: Any) -> None:
    q = baskets(admin, client, "baskets-purge")
    with client.get_queue_receiver(q, session_id="basket-0") as held:
        page = call(board.url, "GET", f"/entity/{q}")
        assert page.status == 200 and "basket-0" in page.text and "basket-1" in page.text
        assert page.text.count("held by a receiver") == 1
        got = act(board, "purge", {"entity": q, "queue": "active"})
        assert got["done"] == f"Purged 1 message(s) of {q}. 1 session(s) held by a receiver were left as they were"
        (m,) = held.receive_messages(1, max_wait_time=2)
        assert b"".join(m.body) == b"item"
        held.complete_message(m)
    assert admin.get_queue_runtime_properties(q).active_message_count == 0


def test_bodies_that_are_not_text_or_not_json_are_shown_safely(board: Running, client: Any, admin: Any) -> None:
    admin.create_queue("blobs")
    raw = b"\xff\xfe binary"
    with client.get_queue_sender("blobs") as s:
        s.send_messages([ServiceBusMessage(raw), ServiceBusMessage("{broken json", content_type="application/json")])
    page = call(board.url, "GET", "/entity/blobs?view=messages&queue=active&body=json")
    assert page.status == 200
    assert "(not UTF-8; base64) " + base64.b64encode(raw).decode() in page.text
    assert "{broken json" in page.text
    bad = call(board.url, "GET", "/entity/blobs?view=messages&queue=nowhere")
    assert "no such message list &#x27;nowhere&#x27;" in bad.text or "no such message list 'nowhere'" in bad.text
