"""Sans-IO calls for topics (publish), auto-forwarding (the outbox drain) and auto-delete on idle.

Publish: one ``publish`` script call per topic partition carries the topic partition's keys and
the same partition's keys of every subscription. Which subscriptions exist is cached per partition
(:class:`TopicSubs`); the script checks the cached version (``subv``) and, when it is stale,
answers with the current set instead of storing anything, and the caller builds the call again.
A partition with too many subscriptions x messages for one call is published in chunks
(protocol/publish.py's split calls, docs/topics.md "Wide fan-outs").

Forwarding (docs/topics.md): ``forward_out`` moves a partition's forwarded messages into its
transfer queue (the outbox, under the same hash tag) and returns the oldest outbox entries;
``forward_in`` (a queue) or ``publish`` (a topic) stores them at the destination, which keeps a
high-water mark per source partition so a repeated delivery is dropped; ``forward_ack`` removes
delivered entries and moves undeliverable ones to the transfer dead-letter subqueue.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from .._message import ServiceBusMessage
from ..exceptions import (
    InvalidOperationError,
    MessageSizeExceededError,
    MessagingEntityDisabledError,
    MessagingEntityNotFoundError,
)
from . import codec
from .entity import GENERATION, QueueProperties
from .meta import EntityMeta
from .protocol import Call, cancel_topic_scheduled, forward_ack, forward_in, forward_out, idle, publish
from .protocol.forward_out import OutboxEntry
from .protocol.publish import TopicSubs as TopicSubs
from .send_plan import message_key, partition_of
from .topic_entity import TopicProperties, from_record, kind_of

# The builders and parsers of publish and forwarding live in .protocol; these names stay for callers
# (sbredis/_core/paired.py, tests) written before.
publish_call = publish.call
rebuild = publish.rebuild
stale_subs = publish.stale
cancel_call = cancel_topic_scheduled.call
forward_out_call = forward_out.call
parse_outbox = forward_out.parse
forward_in_call = forward_in.call
forward_ack_call = forward_ack.call
idle_call = idle.call

MAX_HOPS = 4  # a message is forwarded at most this many times; then the transfer dead-letter subqueue


@dataclass(frozen=True)
class TopicMeta(EntityMeta):
    """A topic's EntityMeta plus its per-partition subscription sets (filled lazily)."""

    subs: dict[int, TopicSubs] = field(default_factory=dict)


def meta_from_record(name: str, raw: dict[str, Any]) -> EntityMeta:
    """What senders, receivers and the forwarder need from a registry record of any kind."""
    kind = kind_of(raw)
    gen = str(raw.get(GENERATION) or "")
    if kind == "topic":
        t: TopicProperties = from_record(TopicProperties, raw)
        return TopicMeta(
            name,
            t.partition_count,
            t.requires_duplicate_detection,
            t.max_message_size_in_kilobytes * 1024,
            "topic",
            generation=gen,
        )
    if kind == "subscription":
        return EntityMeta(
            name,
            int(raw["_pc"]),
            False,
            int(raw["_mb"]),
            "subscription",
            bool(raw.get("forward_to")),
            bool(raw.get("requires_session")),
            gen,
        )
    if kind != "queue":
        raise MessagingEntityNotFoundError(f"The messaging entity '{name}' was not found.")
    return replace(EntityMeta.from_properties(QueueProperties.from_json(json.dumps(raw))), generation=gen)


def window_ms(raw: dict[str, Any]) -> int:
    """An entity record's auto_delete_on_idle in ms (0: never)."""
    return int(raw.get("auto_delete_on_idle") or 0)


# ---------------------------------------------------------------------------------- publish
def message_args(m: ServiceBusMessage, meta: EntityMeta, sched_ms: int) -> list[Any]:
    """The 7 per-message arguments of publish (and forward_in) for a message being sent."""
    return [m.id_text if meta.dedup else "", m.ttl_ms, sched_ms or m.sched_ms, 0, 0, 0, m.encoded()]


def plan_publish(
    messages: Sequence[ServiceBusMessage], meta: TopicMeta, round_robin: int, sched_ms: int = 0
) -> tuple[list[Call], list[int]]:
    """As send_plan.plan_send, for a topic: one publish call per partition.

    Raises:
        MessageSizeExceededError: a message, or the messages of one partition, exceed the limit.
    """
    groups: dict[int, list[Any]] = {}
    sizes: dict[int, int] = {}
    where: list[int] = []
    for m in messages:
        key = message_key(m, meta)
        p = round_robin if key is None else partition_of(key, meta.partition_count)
        where.append(p)
        args = message_args(m, meta, sched_ms)
        size = len(args[-1])
        if size > meta.max_message_bytes:
            raise MessageSizeExceededError(
                f"A message of {size} bytes exceeds the maximum of {meta.max_message_bytes} bytes on '{meta.name}'."
            )
        sizes[p] = sizes.get(p, 0) + size
        groups.setdefault(p, []).extend(args)
    for size in sizes.values():
        if size > meta.max_message_bytes:
            raise MessageSizeExceededError(
                f"The messages for one partition ({size} bytes) exceed the maximum batch size of "
                f"{meta.max_message_bytes} bytes on '{meta.name}'."
            )
    calls = [publish.call(meta.name, p, meta.subs.get(p) or TopicSubs(), "", args) for p, args in groups.items()]
    return calls, where


# ------------------------------------------------------------------------------- forwarding
def source_id(path: str, partition: int, incarnation: str) -> str:
    return f"{path}:{partition}:{incarnation}"


def delivered_blob(e: OutboxEntry, source_path: str) -> bytes:
    """The blob to deliver: a dead-lettered message carries its dead-letter reason and description
    as application properties (DeadLetterReason, DeadLetterErrorDescription) and its source."""
    if not e.reason:
        return e.blob
    return annotate(e.blob, source_path, e.reason, e.description)


def annotate(blob: bytes, source_path: str, reason: str | None = None, description: str | None = None) -> bytes:
    end, _ = codec.split(blob)
    header = codec.header_of(blob)
    if reason is not None:
        ap = dict(header.get("ap") or {})
        ap["DeadLetterReason"] = reason
        ap["DeadLetterErrorDescription"] = description or ""
        header["ap"] = ap
    header["dls"] = source_path
    return codec.encode(header, blob[end:])


def destination_partition(blob: bytes, meta: EntityMeta) -> int:
    """Session id, else partition key, else message id picks the destination partition: the
    session id first, as a session receiver looks for its session in that partition
    (session.session_partition), so a forwarded session stays whole and findable."""
    h = codec.header_of(blob)
    key = h.get("sid") or h.get("pk") or h.get("id") or ""
    return partition_of(str(key), meta.partition_count)


def delivery_args(e: OutboxEntry, blob: bytes, meta: EntityMeta) -> list[Any]:
    """The 7 per-message arguments for forward_in / publish at the destination. A message sent
    through a transaction keeps its scheduled enqueue time (an auto-forwarded one was enqueued
    already: its time is past, so it is enqueued at once)."""
    h = codec.header_of(blob)
    mid = str(h.get("id") or "") if meta.dedup else ""
    ttl = int(h.get("ttl") or 0)
    return [mid, ttl, int(h.get("se") or 0), e.hop + 1, e.expires_ms, e.seq, blob]


def session_of(blob: bytes) -> str:
    """The stored message's session id ('' when it has none)."""
    return str(codec.header_of(blob).get("sid") or "")


def no_session(dest: str) -> tuple[str, str]:
    """(reason, description) of a message without a session id forwarded to an entity that
    requires sessions (it goes to the transfer dead-letter subqueue)."""
    return "SessionIdRequired", f"The auto-forwarding destination '{dest}' requires sessions; the message has none."


def undeliverable(error: Exception, dest: str) -> tuple[str, str] | None:
    """(reason, description) when an error means the destination cannot take the message (it goes
    to the transfer dead-letter subqueue); None for errors worth retrying (connection, quota)."""
    if isinstance(error, MessagingEntityNotFoundError):
        return "MessagingEntityNotFound", f"The auto-forwarding destination '{dest}' does not exist."
    if isinstance(error, MessagingEntityDisabledError):
        return "MessagingEntityDisabled", f"The auto-forwarding destination '{dest}' is disabled."
    if isinstance(error, MessageSizeExceededError):
        return "MessageSizeExceeded", f"The message is larger than '{dest}' accepts."
    if isinstance(error, InvalidOperationError):
        return "InvalidDestination", f"'{dest}' cannot be an auto-forwarding destination."
    return None


HOPS_EXCEEDED = (
    "MaxTransferHopCountExceeded",
    f"The message was forwarded {MAX_HOPS} times already; auto-forwarding allows at most {MAX_HOPS} hops.",
)
