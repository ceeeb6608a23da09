"""Sans-IO operations: which partition, which script, which KEYS/ARGV, and what the reply means.

The sync and async shells call these and only add the I/O.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import islice
from operator import attrgetter
from typing import Any, NoReturn

from .._enums import ServiceBusReceiveMode
from .._message import (
    PARTITION_SHIFT,
    ServiceBusMessage,
    ServiceBusMessageBatch,
    ServiceBusReceivedMessage,
)
from ..exceptions import (
    InvalidArgumentError,
    InvalidOperationError,
    MessageAlreadySettled,
    MessageSizeExceededError,
)
from .entity import QueueProperties, partition_config
from .keys import partition_keys
from .protocol import SETTLE, peek, publish, receive, send
from .protocol._held import LOCK_LOST as LOCK_LOST
from .protocol._held import lock_args as lock_args
from .protocol.base import SWEEP_LIMIT as SWEEP_LIMIT
from .protocol.base import Call as Call
from .protocol.base import Group as Group
from .protocol.base import Mode as Mode
from .protocol.base import partition_call
from .topic_entity import owner_config_commands, owner_delete_keys

# Moved to .protocol (one module per script); these names stay for callers written before.
parse_received = receive.parse
parse_peeked = peek.parse

LOCAL_MASK = (1 << PARTITION_SHIFT) - 1
_TTL_MS = attrgetter("_ttl_ms")
_SCHED_MS = attrgetter("_sched_ms")
MAX_RECEIVE_COUNT = 5000


@dataclass(frozen=True)
class EntityMeta:
    """What a sender or receiver needs to know about its entity (read once from the registry)."""

    name: str
    partition_count: int
    dedup: bool
    max_message_bytes: int
    kind: str = "queue"  # or "topic", "subscription"
    forwards: bool = False  # forward_to is set: what is stored moves on (see aio/_forwarder.py)
    sessions: bool = False  # requires_session: every message needs a session_id (see session.py)

    @classmethod
    def from_properties(cls, p: QueueProperties) -> EntityMeta:
        forwards = bool(p.forward_to)
        return cls(
            p.name,
            p.partition_count,
            p.requires_duplicate_detection,
            p.max_message_size_in_kilobytes * 1024,
            "queue",
            forwards,
            p.requires_session,
        )


def call(name: str, entity: str, partition: int, *args: Any) -> Call:
    """Script `name` with `args` as given. Only sbredis/_core/paired.py calls this (the paired
    namespace code, moving to its own package); everything else builds calls in .protocol."""
    return partition_call(name, entity, partition, args)


def partition_of(key: str, count: int) -> int:
    """The partition a key pins a message to (stable across processes and languages: CRC-32)."""
    return zlib.crc32(key.encode()) % count if count > 1 else 0


def message_key(m: ServiceBusMessage, meta: EntityMeta) -> str | None:
    """Session id, else partition key, else message id when duplicate detection is on."""
    key = m.partition_key  # the partition key, or the session id when only that is set
    if key is None and meta.dedup:
        key = m.message_id
    return key


def unkeyed(messages: Iterable[ServiceBusMessage], meta: EntityMeta) -> bool:
    """No message is pinned to a partition (any partition may take them)."""
    return all(message_key(m, meta) is None for m in messages)


def as_messages(message: Any) -> list[ServiceBusMessage]:
    """One message, a list of them or a batch, as a list; raises InvalidArgumentError otherwise."""
    if isinstance(message, ServiceBusMessage):
        return [message]
    if isinstance(message, ServiceBusMessageBatch):
        return list(message._messages)
    if isinstance(message, (list, tuple)):
        for m in message:
            if not isinstance(m, ServiceBusMessage):
                raise InvalidArgumentError(f"expected ServiceBusMessage items, got {type(m).__name__}")
        return list(message)
    raise InvalidArgumentError(
        f"send_messages takes a ServiceBusMessage, a list of them or a batch, not {type(message).__name__}"
    )


def plan_send(
    messages: Sequence[ServiceBusMessage], meta: EntityMeta, round_robin: int, sched_ms: int = 0
) -> tuple[list[Call], list[int]]:
    """Group messages by partition: one call per partition, each stored atomically.

    Unkeyed messages of one call all go to the round-robin partition. Returns the calls and each
    message's partition.

    Raises:
        MessageSizeExceededError: a message, or the messages of one partition, exceed the limit.
        InvalidOperationError: the entity is a topic, or requires sessions and a message has no session_id.
    """
    if meta.kind != "queue":
        raise InvalidOperationError(f"'{meta.name}' is a {meta.kind}: send to a topic with get_topic_sender")
    if meta.sessions:
        check_session_ids(messages, meta.name)
    count, dedup, limit = meta.partition_count, meta.dedup, meta.max_message_bytes
    blobs = [m._encoded() for m in messages]
    size = max(map(len, blobs), default=0)
    if size > limit:
        raise MessageSizeExceededError(
            f"A message of {size} bytes exceeds the maximum of {limit} bytes on '{meta.name}'."
        )
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
                fields += (m.message_id if dedup else "", m._ttl_ms, sched_ms or m._sched_ms, blobs[i])
            calls.append(send.call(meta.name, p, len(b), send.FULL, fields))
        else:
            calls.append(send.call(meta.name, p, len(b), send.BLOB_ONLY, b))
    return calls, where


def check_session_ids(messages: Iterable[ServiceBusMessage], entity: str) -> None:
    """Raises InvalidOperationError when a message for a session entity has no session_id."""
    for m in messages:
        if not m.session_id:
            raise InvalidOperationError(
                f"'{entity}' requires sessions: every message sent to it needs a session_id (nothing was stored)."
            )


def pack(entries: Sequence[Sequence[ServiceBusMessage]], max_bytes: int, max_count: int = 1000) -> list[list[int]]:
    """Group entries (indexes) so each group's messages fit one send call: at most `max_bytes` and
    `max_count` messages, unless one entry alone is larger (it then forms its own group)."""
    if len(entries) == 1:  # one caller's send (plan_send checks its size)
        return [[0]]
    groups: list[list[int]] = []
    current: list[int] = []
    size = count = 0
    for i, msgs in enumerate(entries):
        b = sum(len(m._encoded()) for m in msgs)
        if current and (size + b > max_bytes or count + len(msgs) > max_count):
            groups.append(current)
            current, size, count = [], 0, 0
        current.append(i)
        size += b
        count += len(msgs)
    if current:
        groups.append(current)
    return groups


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
    """One caller's outcome: its `n` messages' sequence numbers, or the first error among its partitions."""
    if not errors:
        return [next(seqs[p]) for p in islice(partitions, n)]
    out: list[int] = []
    error = None
    for _ in range(n):
        p = next(partitions)
        if p in errors:
            error = error or errors[p]
        else:
            out.append(next(seqs[p]))
    return error if error is not None else out


def send_result(c: Call, reply: list[Any]) -> list[int]:
    """Global sequence numbers of a send or publish reply (0 for duplicates that were dropped)."""
    return send.parse(c, reply) if c.script.name == send.NAME else publish.parse(c, reply)


def new_nonce() -> str:
    return os.urandom(8).hex()


def group_code(sub_queue: Any) -> Group:
    return Group.MAIN if sub_queue is None else Group.DEAD_LETTER


def mode_code(mode: ServiceBusReceiveMode) -> Mode:
    return Mode.PEEK_LOCK if mode is ServiceBusReceiveMode.PEEK_LOCK else Mode.RECEIVE_AND_DELETE


def check_count(name: str, n: Any, upper: int = MAX_RECEIVE_COUNT) -> int:
    if isinstance(n, bool) or not isinstance(n, int):
        raise InvalidArgumentError(f"{name} must be an int, not {type(n).__name__}")
    if not 1 <= n <= upper:
        raise InvalidArgumentError(f"{name} must be between 1 and {upper}")
    return n


def check_wait(name: str, value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidArgumentError(f"{name} must be a number of seconds")
    if value < 0:
        raise InvalidArgumentError(f"{name} must not be negative")
    return float(value)


# A partition asked for fewer messages than this costs more per message than it brings: each
# receive call pays a fixed cost (the entity's config, a bounded sweep, its reply), and so does the
# complete that follows per partition. At 25, a receive of 100 from a 16-partition queue made four
# calls and reached 0.26-0.31x raw XREADGROUP + XACK; at 100 it makes one (the partition after the
# last one asked, so calls rotate over the partitions) and reached 0.40-0.44x, as a 1-partition
# queue does (bench_core --quick, same host and hour). A partition with fewer messages than its
# share is topped up from the others (probe, then take), as before.
MIN_SHARE = 100


def split_quota(n: int, order: Sequence[int]) -> dict[int, int]:
    """Spread `n` messages over the first partitions in `order` (at least MIN_SHARE each where `n`
    allows), the first ones taking the remainder."""
    k = max(1, min(len(order), n // MIN_SHARE))
    order = order[:k]
    base, extra = divmod(n, k)
    out = {}
    for i, p in enumerate(order):
        q = base + (1 if i < extra else 0)
        if q:
            out[p] = q
    return out


def fill_quota(n: int, available: dict[int, int], order: Sequence[int]) -> dict[int, int]:
    """Ask partitions that have messages, in `order`, for up to `n` in all."""
    out = {}
    for p in order:
        if n <= 0:
            break
        take = min(n, available.get(p, 0))
        if take > 0:
            out[p] = take
            n -= take
    return out


def sequence_numbers(value: Any) -> list[int]:
    """One sequence number or an iterable of them, as a list (each checked by split_sequence_number).

    Raises:
        InvalidArgumentError: neither an int nor an iterable.
    """
    if isinstance(value, int) and not isinstance(value, bool):
        return [value]
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise InvalidArgumentError(f"sequence numbers must be an int or iterable of ints, not {type(value).__name__}")
    return list(value)


def split_sequence_number(seq: Any, partitions: int) -> tuple[int, int]:
    """(partition, local seq) of a global sequence number."""
    if isinstance(seq, bool) or not isinstance(seq, int) or seq <= 0:
        raise InvalidArgumentError("sequence numbers are positive ints")
    p, local = seq >> PARTITION_SHIFT, seq & LOCAL_MASK
    if p >= partitions or local == 0:
        raise InvalidArgumentError(f"sequence number {seq} does not belong to this entity")
    return p, local


def settle_groups(
    messages: Sequence[Any], entity: str, group: str, what: str
) -> dict[int, list[ServiceBusReceivedMessage]]:
    """Check messages can be settled by this receiver and group them by partition.

    Raises:
        InvalidArgumentError: not a received message.
        InvalidOperationError: the message came from another entity or subqueue, or was peeked.
        MessageAlreadySettled: settled before, or received in RECEIVE_AND_DELETE mode.
    """
    out: dict[int, list[ServiceBusReceivedMessage]] = {}
    count = 0
    cls = ServiceBusReceivedMessage
    for m in messages:
        if not isinstance(m, cls) or m.entity_name != entity or m._group != group or m._settled:
            _refuse_settle(messages, entity, group, what)
        part = out.get(m.partition_id)
        if part is None:
            out[m.partition_id] = [m]
        else:
            part.append(m)
        count += 1
    if len({id(m) for part in out.values() for m in part}) != count:
        _refuse_settle(messages, entity, group, what)
    return out


def by_partition(messages: Sequence[ServiceBusReceivedMessage]) -> dict[int, list[ServiceBusReceivedMessage]]:
    """Messages grouped by partition, each group in the given order."""
    first = messages[0].partition_id
    for m in messages:  # the usual batch: one receive call's messages, all from one partition
        if m.partition_id != first:
            break
    else:
        return {first: list(messages)}
    out: dict[int, list[ServiceBusReceivedMessage]] = {}
    for m in messages:
        out.setdefault(m.partition_id, []).append(m)
    return out


def _refuse_settle(messages: Sequence[Any], entity: str, group: str, what: str) -> NoReturn:
    """settle_groups found a message it refuses: raise the error for the first one, in order."""
    seen: set[int] = set()
    for m in messages:
        if not isinstance(m, ServiceBusReceivedMessage):
            raise InvalidArgumentError(f"{what} takes received messages, not {type(m).__name__}")
        if m.entity_name != entity or m._group != group:
            raise InvalidOperationError(
                f"the message was received from '{m.entity_name}' ({'dead-letter' if m._group == 'd' else 'main'} "
                f"queue), not from this receiver's entity"
            )
        if m._settled:
            if m._receive_mode is ServiceBusReceiveMode.RECEIVE_AND_DELETE:
                raise MessageAlreadySettled("The message was received in RECEIVE_AND_DELETE mode.")
            if not m._nonce:
                raise InvalidOperationError("A peeked message holds no lock and cannot be settled.")
            raise MessageAlreadySettled("The message has been settled already.")
        if id(m) in seen:
            raise InvalidArgumentError("the same message appears twice")
        seen.add(id(m))
    raise AssertionError("unreachable: settle_groups refused nothing")


SETTLE_CHUNK = 1000  # messages per settlement script call (Lua unpacks at most ~8000 arguments)


def chunks(msgs: Sequence[ServiceBusReceivedMessage]) -> list[Sequence[ServiceBusReceivedMessage]]:
    return [msgs[i : i + SETTLE_CHUNK] for i in range(0, len(msgs), SETTLE_CHUNK)]


def apply_settled(
    name: str, msgs: Sequence[ServiceBusReceivedMessage], reply: list[Any], status: dict[int, Any]
) -> None:
    """Record a settlement script's reply on its messages; the lost ones go into `status`
    (id(message) -> LOCK_LOST)."""
    SETTLE[name].apply(msgs, reply, status)


def config_commands(p: QueueProperties) -> list[tuple[Any, ...]]:
    """Commands that write the entity's config into each partition (and its transfer queue's)."""
    cmds: list[tuple[Any, ...]] = []
    for i in range(p.partition_count):
        cmds += owner_config_commands(partition_keys(p.name, i), partition_config(p, i))
    return cmds


def delete_commands(name: str, partitions: int) -> list[tuple[Any, ...]]:
    """Remove every key of the entity's partitions and their transfer queues."""
    return [("UNLINK", *owner_delete_keys(partition_keys(name, i))) for i in range(partitions)]
