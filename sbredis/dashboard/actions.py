"""What the dashboard reads and changes, through the library's public clients only: browse
(peek) a queue's or subscription's messages, resubmit dead letters, purge, cancel scheduled
messages, send a test message, update settings.

Each change is made of the library's own calls, so it is atomic per partition as they are: a
resubmit is ``sbredis.management.resubmit_dead_letters``, as ``sbredis dlq resubmit``'s: it
receives dead letters in peek-lock, stores the copies (to a queue, a topic, or one subscription
alone), then completes the originals; it never completes a message whose copy was not stored, and
gives back (abandons) what it received but was not asked to move.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable
from contextlib import closing
from dataclasses import dataclass, field
from typing import Any

from .. import ServiceBusClient, ServiceBusMessage, ServiceBusMessageState, ServiceBusSubQueue
from .._message import ServiceBusReceivedMessage
from ..cli._purge import purge as purge_messages
from ..cli.messages import sender_for
from ..exceptions import ServiceBusError
from ..management import ServiceBusAdministrationClient, resubmit_dead_letters

QUEUES = ("active", "scheduled", "deferred", "deadletter", "transferdeadletter")
SUB_QUEUES = {
    "deadletter": ServiceBusSubQueue.DEAD_LETTER,
    "transferdeadletter": ServiceBusSubQueue.TRANSFER_DEAD_LETTER,
}
STATES = {
    "active": ServiceBusMessageState.ACTIVE,
    "scheduled": ServiceBusMessageState.SCHEDULED,
    "deferred": ServiceBusMessageState.DEFERRED,
}


class ActionError(Exception):
    """An action the dashboard cannot do with these inputs (shown to the user, HTTP 400)."""


def split(path: str) -> tuple[str, str | None]:
    """(queue or topic, None) or (topic, subscription) for ``TOPIC/Subscriptions/SUB``."""
    topic, sep, sub = path.partition("/Subscriptions/")
    return (topic, sub) if sep else (path, None)


def receiver(c: ServiceBusClient, path: str, **kwargs: Any) -> Any:
    topic, sub = split(path)
    if sub is None:
        return c.get_queue_receiver(topic, **kwargs)
    return c.get_subscription_receiver(topic, sub, **kwargs)


# ------------------------------------------------------------------------------------- browse
@dataclass
class Found:
    messages: list[ServiceBusReceivedMessage]
    scanned: int
    more: bool  # the scan stopped at its limit


def matches(m: ServiceBusReceivedMessage, find: str) -> bool:
    """`find`: a message id, a session id, or NAME=VALUE of an application property."""
    find = find.strip()
    if not find:
        return True
    if find in (m.message_id, m.session_id):
        return True
    name, sep, value = find.partition("=")
    if sep and m.sent_application_properties:
        for k, v in m.sent_application_properties.items():
            key = k.decode() if isinstance(k, bytes) else str(k)
            if key == name.strip() and str(v) == value.strip():
                return True
    return False


def browse(c: ServiceBusClient, path: str, queue: str, find: str = "", limit: int = 100, scan: int = 5000) -> Found:
    """Up to `limit` messages of a queue or subscription (`queue`: one of QUEUES) matching `find`,
    peeked (nothing is locked), looking at `scan` messages at most."""
    if queue not in QUEUES:
        raise ActionError(f"no such message list {queue!r}: one of {', '.join(QUEUES)}")
    state = STATES.get(queue)
    out: list[ServiceBusReceivedMessage] = []
    scanned = 0
    # closing(), not the receiver's own `with`, which refuses a plain receiver on a session-enabled
    # entity as the SDK does: the browser peeks every session's messages
    with closing(receiver(c, path, sub_queue=SUB_QUEUES.get(queue))) as r:
        page = r.peek_messages(250, sequence_number=0)
        while page:
            for m in page:
                scanned += 1
                if (state is None or m.state == state) and matches(m, find):
                    out.append(m)
                    if len(out) >= limit:
                        return Found(out, scanned, True)
            if scanned >= scan:
                return Found(out, scanned, True)
            page = r.peek_messages(250)
    return Found(out, scanned, False)


def body_view(body: bytes, view: str, limit: int = 4096) -> str:
    """The body as text, pretty JSON (text when it is not JSON) or a hex dump, cut at `limit` bytes."""
    cut = body[:limit]
    tail = f"\n… {len(body) - limit} more bytes" if len(body) > limit else ""
    if view == "hex":
        lines = []
        for i in range(0, len(cut), 16):
            chunk = cut[i : i + 16]
            text = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
            lines.append(f"{i:08x}  {binascii.hexlify(chunk, ' ').decode():<47}  {text}")
        return "\n".join(lines) + tail
    if view == "json":
        try:
            return json.dumps(json.loads(body), indent=2, ensure_ascii=False)
        except ValueError:
            pass
    try:
        return cut.decode("utf-8") + tail
    except UnicodeDecodeError:
        return "(not UTF-8; base64) " + base64.b64encode(cut).decode() + tail


def system_properties(m: ServiceBusReceivedMessage) -> dict[str, Any]:
    return {
        "sequence_number": m.sequence_number,
        "message_id": m.message_id,
        "state": m.state.name.lower(),
        "enqueued_time_utc": m.enqueued_time_utc,
        "scheduled_enqueue_time_utc": m.scheduled_enqueue_time_utc,
        "expires_at_utc": m.expires_at_utc,
        "time_to_live": m.time_to_live,
        "delivery_count": m.delivery_count,
        "session_id": m.session_id,
        "partition_key": m.partition_key,
        "subject": m.subject,
        "content_type": m.content_type,
        "correlation_id": m.correlation_id,
        "to": m.to,
        "reply_to": m.reply_to,
        "dead_letter_reason": m.dead_letter_reason,
        "dead_letter_error_description": m.dead_letter_error_description,
        "dead_letter_source": m.dead_letter_source,
        "size": len(m.body_bytes or b""),
    }


# ------------------------------------------------------------------------------------ actions
@dataclass
class Outcome:
    done: int = 0
    kept_as_duplicates: int = 0
    lock_lost: int = 0
    notes: list[str] = field(default_factory=list)


def _count(admin: ServiceBusAdministrationClient, path: str, queue: str) -> int:
    topic, sub = split(path)
    r: Any = (
        admin.get_queue_runtime_properties(topic)
        if sub is None
        else admin.get_subscription_runtime_properties(topic, sub)
    )
    if queue == "active":
        return int(r.active_message_count)
    if queue == "deadletter":
        return int(r.dead_letter_message_count)
    return int(r.transfer_dead_letter_message_count)


def purge(
    c: ServiceBusClient, admin: ServiceBusAdministrationClient, path: str, queue: str, sessions: bool = False
) -> Outcome:
    """Delete the messages of `queue` ("active", "deadletter" or "transferdeadletter") there now;
    `sessions`: the entity is session-enabled (its active messages are taken session by session)."""
    if queue not in ("active", "deadletter", "transferdeadletter"):
        raise ActionError("purge takes active, deadletter or transferdeadletter")
    done = purge_messages(
        c,
        path,
        _count(admin, path, queue),
        sub_queue=SUB_QUEUES.get(queue),
        sessions=sessions,
        batch=500,
        max_wait_time=0.5,
    )
    out = Outcome(done=done.purged)
    if done.held:
        out.notes.append(f"{len(done.held)} session(s) held by a receiver were left as they were")
    return out


def resubmit(
    c: ServiceBusClient,
    admin: ServiceBusAdministrationClient,
    path: str,
    queue: str,
    target: str,
    selected: Iterable[int] | None = None,
    new_message_ids: bool = False,
) -> Outcome:
    """Send copies of dead letters (`queue`: "deadletter" or "transferdeadletter") to `target` (a
    queue, a topic, or one subscription as ``TOPIC/Subscriptions/SUB``) and complete them once the
    copies are stored; only the sequence numbers in `selected` when given, else all there now."""
    if queue not in ("deadletter", "transferdeadletter"):
        raise ActionError("resubmit takes deadletter or transferdeadletter")
    if not target:
        raise ActionError("choose where to resubmit to")
    wanted = None if selected is None else sorted(set(selected))
    if wanted is not None and not wanted:
        raise ActionError("select at least one message")
    r = resubmit_dead_letters(
        c, admin, path, target, sub_queue=SUB_QUEUES[queue], sequence_numbers=wanted, new_message_ids=new_message_ids
    )
    out = Outcome(done=r.resubmitted, kept_as_duplicates=r.kept_as_duplicates, lock_lost=r.lock_lost)
    if r.not_found:
        out.notes.append(f"{len(r.not_found)} selected message(s) were no longer there")
    if out.kept_as_duplicates:
        out.notes.append(
            f"{out.kept_as_duplicates} copies were dropped by duplicate detection: their messages stay "
            "(resubmit them with new message ids)"
        )
    if out.lock_lost:
        out.notes.append(f"{out.lock_lost} were resubmitted but their lock was lost: they are still there too")
    return out


def cancel_scheduled(c: ServiceBusClient, admin: ServiceBusAdministrationClient, name: str, seqs: list[int]) -> Outcome:
    """Cancel scheduled messages of a queue or topic by sequence number."""
    if not seqs:
        raise ActionError("select at least one scheduled message")
    with sender_for(c, admin, name) as s:
        s.cancel_scheduled_messages(seqs)
    return Outcome(done=len(seqs))


def send_test(
    c: ServiceBusClient,
    admin: ServiceBusAdministrationClient,
    name: str,
    body: str,
    properties: str = "",
    session_id: str = "",
    subject: str = "",
) -> Outcome:
    """Send one message; `properties`: NAME=VALUE lines (numbers and true/false typed)."""
    props: dict[str | bytes, Any] = {}
    for line in properties.splitlines():
        if not line.strip():
            continue
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            raise ActionError(f"a property is NAME=VALUE, not {line!r}")
        try:
            typed = json.loads(value)
            props[key.strip()] = typed if isinstance(typed, (int, float, bool)) else value.strip()
        except ValueError:
            props[key.strip()] = value.strip()
    m = ServiceBusMessage(
        body.encode(),
        application_properties=props or None,
        session_id=session_id or None,
        subject=subject or None,
    )
    with sender_for(c, admin, name) as s:
        s.send_messages(m)
    return Outcome(done=1)


def session_states(c: ServiceBusClient, path: str, limit: int = 50) -> list[dict[str, Any]]:
    """The sessions of a session entity with their state (reading it takes the session lock for a
    moment, as in Service Bus; a session another receiver holds shows as held)."""
    topic, sub = split(path)
    ids = c.list_queue_sessions(topic) if sub is None else c.list_subscription_sessions(topic, sub)
    out: list[dict[str, Any]] = []
    for sid in ids[:limit]:
        row: dict[str, Any] = {"session_id": sid, "state": None, "held": False}
        try:
            with receiver(c, path, session_id=sid, max_wait_time=0.5) as r:
                state = r.session.get_state()
            row["state"] = None if state is None else body_view(state, "text", 1024)
        except ServiceBusError:
            row["held"] = True
        out.append(row)
    return out
