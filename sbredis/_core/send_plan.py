"""Send planning: which partition each message goes to, one send call per partition, and each
caller's outcome when concurrent sends share calls."""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import islice
from operator import attrgetter
from typing import Any

from .._message import ServiceBusMessage
from ..exceptions import InvalidOperationError, MessageSizeExceededError, ServiceBusError
from .meta import EntityMeta
from .protocol import publish, send
from .protocol.base import Call
from .validation import check_session_ids

_TTL_MS = attrgetter("ttl_ms")
_SCHED_MS = attrgetter("sched_ms")


def partition_of(key: str, count: int) -> int:
    """The partition a key pins a message to (stable across processes and languages: CRC-32)."""
    return zlib.crc32(key.encode()) % count if count > 1 else 0


def message_key(m: ServiceBusMessage, meta: EntityMeta) -> str | None:
    """Session id, else partition key, else message id when duplicate detection is on."""
    key = m.partition_key  # the partition key, or the session id when only that is set
    if key is None and meta.dedup:
        key = m.id_text
    return key


def unkeyed(messages: Iterable[ServiceBusMessage], meta: EntityMeta) -> bool:
    """No message is pinned to a partition (any partition may take them)."""
    return all(message_key(m, meta) is None for m in messages)


def checked_blobs(messages: Sequence[ServiceBusMessage], meta: EntityMeta, into_subscription: bool) -> list[bytes]:
    """The messages' stored forms, once the entity's kind, its sessions and its size limit allow
    them (plan_send's and plan_one's checks; raises as plan_send)."""
    if meta.kind != ("subscription" if into_subscription else "queue"):
        raise InvalidOperationError(f"'{meta.name}' is a {meta.kind}: send to a topic with get_topic_sender")
    if meta.sessions:
        check_session_ids(messages, meta.name)
    blobs = [m.encoded() for m in messages]
    size = max(map(len, blobs), default=0)
    if size > meta.max_message_bytes:
        raise MessageSizeExceededError(
            f"A message of {size} bytes exceeds the maximum of {meta.max_message_bytes} bytes on '{meta.name}'."
        )
    return blobs


def plan_send(
    messages: Sequence[ServiceBusMessage],
    meta: EntityMeta,
    round_robin: int,
    sched_ms: int = 0,
    *,
    into_subscription: bool = False,
) -> tuple[list[Call], list[int]]:
    """Group messages by partition: one call per partition, each stored atomically.

    Unkeyed messages of one call all go to the round-robin partition. Returns the calls and each
    message's partition. `into_subscription`: the entity is one subscription, whose partitions
    have a queue's keys, so send.lua stores there directly, past its topic's rules
    (resubmit_dead_letters only; a queue sender is refused a subscription).

    Raises:
        MessageSizeExceededError: a message, or the messages of one partition, exceed the limit.
        InvalidOperationError: the entity is not a queue (with into_subscription: not a
            subscription), or requires sessions and a message has no session_id.
    """
    blobs = checked_blobs(messages, meta, into_subscription)
    count, dedup, limit = meta.partition_count, meta.dedup, meta.max_message_bytes
    # send.lua's w: 4 arguments per message, or the blob alone when all take the defaults
    full = dedup or sched_ms > 0 or any(map(_TTL_MS, messages)) or any(map(_SCHED_MS, messages))
    if count > 1:
        where = [round_robin if k is None else partition_of(k, count) for k in (message_key(m, meta) for m in messages)]
    else:
        where = [round_robin] * len(messages)
    groups: dict[int, list[int]] = {}  # partition -> indexes of its messages, in order
    if where.count(round_robin) == len(where):  # the usual send: one partition
        groups[round_robin] = list(range(len(messages)))
    else:
        for i, p in enumerate(where):
            groups.setdefault(p, []).append(i)
    calls = []
    for p, idx in groups.items():
        b = blobs if len(idx) == len(blobs) else [blobs[i] for i in idx]
        size = sum(map(len, b))
        if size > limit:
            raise MessageSizeExceededError(
                f"The messages for one partition ({size} bytes) exceed the maximum batch size of "
                f"{limit} bytes on '{meta.name}'."
            )
        if full:
            fields: list[Any] = []
            for i in idx:
                m = messages[i]
                fields += (m.id_text if dedup else "", m.ttl_ms, sched_ms or m.sched_ms, blobs[i])
            calls.append(send.call(meta.name, p, len(b), send.FULL, fields))
        else:
            calls.append(send.call(meta.name, p, len(b), send.BLOB_ONLY, b))
    return calls, where


def plan_one(
    m: ServiceBusMessage, meta: EntityMeta, partition: int, sched_ms: int = 0, *, into_subscription: bool = False
) -> Call:
    """plan_send's call for one message stored in `partition` (an unkeyed message, or any on an
    entity of one partition): the same checks and arguments, without the grouping.

    Raises: as plan_send.
    """
    [blob] = checked_blobs((m,), meta, into_subscription)
    if meta.dedup or sched_ms > 0 or m.ttl_ms or m.sched_ms:
        fields = (m.id_text if meta.dedup else "", m.ttl_ms, sched_ms or m.sched_ms, blob)
        return send.call(meta.name, partition, 1, send.FULL, fields)
    return send.call(meta.name, partition, 1, send.BLOB_ONLY, (blob,))


def pack(entries: Sequence[Sequence[ServiceBusMessage]], max_bytes: int, max_count: int = 1000) -> list[list[int]]:
    """Group entries (indexes) so each group's messages fit one send call: at most `max_bytes` and
    `max_count` messages, unless one entry alone is larger (it then forms its own group)."""
    if len(entries) == 1:  # one caller's send (plan_send checks its size)
        return [[0]]
    groups: list[list[int]] = []
    current: list[int] = []
    size = count = 0
    for i, msgs in enumerate(entries):
        try:
            b = sum(len(m.encoded()) for m in msgs)
        except ServiceBusError:  # alone, so that planning it fails for its caller only
            groups.append([i])
            continue
        if current and (size + b > max_bytes or count + len(msgs) > max_count):
            groups.append(current)
            current, size, count = [], 0, 0
        current.append(i)
        size += b
        count += len(msgs)
    if current:
        groups.append(current)
    return groups


Plan = Callable[[list[ServiceBusMessage]], tuple[list[Call], list[int]]]
GroupPlan = tuple[list[int], list[Call], list[int]]  # entry indexes, their calls, each message's partition


def plan_entries(
    entries: Sequence[Sequence[ServiceBusMessage]],
    indexes: list[int],
    max_bytes: int,
    plan: Plan,
    outcomes: list[Any],
    alone: bool = False,
) -> list[GroupPlan]:
    """Calls for entries[indexes] (each one caller's messages), packed into as few groups as fit.

    `plan` is plan_send or plan_publish for a list of messages. A group whose planning fails (a
    caller's message is too large or lacks the session id its entity requires) is planned again
    entry by entry (also when `alone`), so only the caller at fault gets the error, in `outcomes`.
    """
    if alone:
        groups = [[i] for i in indexes]
    else:
        groups = [[indexes[g] for g in group] for group in pack([entries[i] for i in indexes], max_bytes)]
    plans: list[GroupPlan] = []
    for group in groups:
        try:
            calls, where = plan([m for i in group for m in entries[i]])
        except ServiceBusError as e:
            if len(group) == 1:
                outcomes[group[0]] = e
            else:
                plans += plan_entries(entries, group, max_bytes, plan, outcomes, alone=True)
            continue
        plans.append((group, calls, where))
    return plans


def refused_for_one(error: Any) -> bool:
    """A script's refusal that one caller's messages can cause for a whole call (a message without
    the session id the entity or a subscription requires, or over the size limit): nothing of that
    call was stored, so the others sharing it are worth trying again without that caller."""
    return isinstance(error, (InvalidOperationError, MessageSizeExceededError))


def group_outcomes(
    entries: Sequence[Sequence[ServiceBusMessage]],
    group: list[int],
    where: list[int],
    seqs: dict[int, Iterator[int]],
    errors: dict[int, Any],
    outcomes: list[Any],
) -> list[int]:
    """Set each entry's outcome from its group's replies; returns the entries to send again alone:
    those of a shared call refused for one caller's messages (refused_for_one) that had nothing
    stored (every one of their partitions refused)."""
    again: list[int] = []
    shared = len(group) > 1 and errors and all(map(refused_for_one, errors.values()))
    partitions = iter(where)
    for i in group:
        n = len(entries[i])
        if shared:
            mine = list(islice(partitions, n))
            if all(p in errors for p in mine):
                again.append(i)
                continue
            outcomes[i] = entry_outcome(n, iter(mine), seqs, errors)
        else:
            outcomes[i] = entry_outcome(n, partitions, seqs, errors)
    return again


def send_replies(calls: Sequence[Call], replies: Iterator[Any]) -> tuple[dict[int, Iterator[int]], dict[int, Any]]:
    """Per partition: the sequence numbers a send stored, or its error (the next len(calls) replies)."""
    seqs: dict[int, Iterator[int]] = {}
    errors: dict[int, Any] = {}
    for c in calls:
        reply = next(replies)
        if isinstance(reply, Exception):
            errors[c.partition] = reply
        else:
            seqs[c.partition] = iter(send_result(c, reply))
    return seqs, errors


def entry_outcome(
    n: int, partitions: Iterator[int], seqs: dict[int, Iterator[int]], errors: dict[int, Any]
) -> list[int] | Exception:
    """One caller's outcome: its `n` messages' sequence numbers, or the error of the first of its
    partitions that failed (naming every partition that failed when its messages went to several)."""
    if not errors:
        return [next(seqs[p]) for p in islice(partitions, n)]
    out: list[int] = []
    failed: list[int] = []
    stored: list[int] = []
    for _ in range(n):
        p = next(partitions)
        if p in errors:
            if p not in failed:
                failed.append(p)
        else:
            out.append(next(seqs[p]))
            if p not in stored:
                stored.append(p)
    if not failed:
        return out
    failed.sort()
    first: Exception = errors[failed[0]]
    if not stored and len(failed) == 1:
        return first
    return partly_failed(first, failed, sorted(stored))


def _partitions(numbers: list[int]) -> str:
    return ("partitions " if len(numbers) > 1 else "partition ") + ", ".join(map(str, numbers))


def partly_failed(error: Exception, failed: list[int], stored: list[int]) -> Exception:
    """`error` (the first partition's) for a send spread over several partitions: its message and
    ``details`` name the partitions that failed (``partition``: the first, ``failed``: all of them)
    and those that stored their messages (``stored``)."""
    if not isinstance(error, ServiceBusError):
        return error
    text = f"{error.message} (failed: {_partitions(failed)}"
    if stored:
        text += f"; the messages for {_partitions(stored)} were stored"
    try:
        named = type(error)(
            text + ")",
            retryable=error.retryable,
            error=error.error,
            **{**error.details, "partition": failed[0], "failed": tuple(failed), "stored": tuple(stored)},
        )
    except TypeError:  # an error class with its own constructor: keep it as it is
        return error
    named.__cause__ = error
    return named


def send_result(c: Call, reply: list[Any]) -> list[int]:
    """Global sequence numbers of a send or publish reply (0 for duplicates that were dropped)."""
    return send.parse(c, reply) if c.script.name == send.NAME else publish.parse(c, reply)
