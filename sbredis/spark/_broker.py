"""Partition-level access for Spark tasks: one task works on given broker partitions.

The client's receivers spread over all partitions; a Spark task instead owns some partitions, so
these helpers build the same script calls (``sbredis._core.protocol``) for one partition and run them
on the client's transport. Reads use the read-only ``stats`` and ``peek`` scripts; nothing here
takes a lock except :func:`receive`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from .._core import protocol, send_plan, settlement
from .._core.keys import SUBSCRIPTIONS
from .._core.meta import EntityMeta
from .._enums import ServiceBusReceiveMode, ServiceBusSubQueue
from .._message import PARTITION_SHIFT, ServiceBusMessage, ServiceBusReceivedMessage
from .._sync._client import ServiceBusClient
from .._sync._forwarder import finish_journal
from .._sync._receiver import ServiceBusReceiver
from ..exceptions import ServiceBusError
from ._options import UnsupportedEntityError

T = TypeVar("T")
_ATTEMPTS = 3


def connect(url: str, socket_timeout: float = 30.0) -> ServiceBusClient:
    return ServiceBusClient.from_connection_string(url, socket_timeout=socket_timeout)


def meta(client: ServiceBusClient, entity: str) -> EntityMeta:
    """Partition count, duplicate detection and size limit of the entity.

    Raises:
        MessagingEntityNotFoundError: no such entity.
    """
    return client.handler_context.entity(entity, refresh=True)


def readable(meta: EntityMeta) -> EntityMeta:
    """`meta`, unless it is a topic's (a topic keeps no messages of its own).

    Raises:
        UnsupportedEntityError: `meta` is a topic's.
    """
    if meta.kind == "topic":
        raise UnsupportedEntityError(
            f"'{meta.name}' is a topic, which keeps no messages of its own; read one of its subscriptions "
            f"(option 'subscription', or entity '{meta.name}{SUBSCRIPTIONS}<name>')"
        )
    return meta


def receiver(client: ServiceBusClient, path: str, sub_queue: ServiceBusSubQueue | None = None) -> ServiceBusReceiver:
    """A peek-lock receiver of a queue or a subscription path (it settles what :func:`receive` got)."""
    topic, sep, sub = path.partition(SUBSCRIPTIONS)
    if sep:
        return client.get_subscription_receiver(topic, sub, sub_queue=sub_queue)
    return client.get_queue_receiver(path, sub_queue=sub_queue)


def retrying(what: Callable[[], T], attempts: int = 3, pause: float = 0.2) -> T:
    """Run `what`, again after a pause when it raises a retryable ServiceBusError."""
    for i in range(attempts):
        try:
            return what()
        except ServiceBusError as e:
            if not e.retryable or i == attempts - 1:
                raise
            time.sleep(pause * (i + 1))
    raise AssertionError("unreachable")


def _run(client: ServiceBusClient, calls: list[protocol.Call], entity: str) -> list[Any]:
    replies = client.handler_context.transport.run_many(calls, entity)
    for r in replies:
        if isinstance(r, ServiceBusError):
            raise r
    return replies


def next_offsets(client: ServiceBusClient, entity: str, group: protocol.Group, partitions: int) -> dict[int, int]:
    """Per partition, the offset the next message will get (last sequence number + 1).

    Raises:
        ServiceBusError: the entity is gone or Redis failed.
    """
    calls = [protocol.stats.call(entity, p) for p in range(partitions)]
    replies = [protocol.stats.parse(r) for r in retrying(lambda: _run(client, calls, entity))]
    dlq = group == protocol.Group.DEAD_LETTER
    return {p: (s.last_dlq_seq if dlq else s.last_seq) + 1 for p, s in enumerate(replies)}


def peek_range(
    client: ServiceBusClient, entity: str, partition: int, group: protocol.Group, start: int, end: int, page: int
) -> Iterator[ServiceBusReceivedMessage]:
    """Messages of one partition with offsets in [start, end), oldest first, without locking.

    Messages removed meanwhile (completed, expired) are simply absent: offsets have gaps.
    """
    start = max(start, 1)
    while start < end:
        n = min(page, end - start)
        c = protocol.peek.call(entity, partition, group, start, n)
        reply = retrying(lambda c=c: _run(client, [c], entity)[0])  # type: ignore[misc]
        msgs = protocol.peek.parse(reply, entity, partition, group)
        for m in msgs:
            if m.local_seq >= end:
                return
            yield m
        if len(msgs) < n:
            return
        start = msgs[-1].local_seq + 1


def peek_pages(
    client: ServiceBusClient, entity: str, partition: int, group: protocol.Group, start: int, end: int, page: int
) -> Iterator[protocol.peek.Fields]:
    """peek_range's messages as column pages (one per script call), for readers that need no
    message objects."""
    for _, f in peek_pages_many(client, entity, group, [(partition, start, end)], page):
        yield f


def peek_pages_many(
    client: ServiceBusClient, entity: str, group: protocol.Group, ranges: list[tuple[int, int, int]], page: int
) -> Iterator[tuple[int, protocol.peek.Fields]]:
    """peek_pages over several partitions' (partition, start, end) ranges at once: each round
    trip carries one page call per partition not yet done (pipelined), so a task reading many
    partitions waits for one reply per round, not one per page. Yields (partition, page)."""
    todo = {p: max(start, 1) for p, start, end in ranges if end > max(start, 1)}
    ends = {p: end for p, _, end in ranges}
    while todo:
        calls = {
            p: protocol.peek.call(entity, p, group, start, min(page, ends[p] - start)) for p, start in todo.items()
        }
        order = list(calls)
        batch = [calls[p] for p in order]
        replies = retrying(lambda batch=batch: _run(client, batch, entity))  # type: ignore[misc]
        for p, reply in zip(order, replies, strict=True):
            asked = min(page, ends[p] - todo[p])
            f = protocol.peek.parse_fields(reply, group)
            got = keep = len(f.raw)
            while keep and f.local_seq[keep - 1] >= ends[p]:
                keep -= 1
            if keep < got:
                f = f.head(keep)
            if keep:
                yield p, f
            if keep < asked:
                del todo[p]
            else:
                todo[p] = f.local_seq[-1] + 1
                if todo[p] >= ends[p]:
                    del todo[p]


def receive(
    client: ServiceBusClient,
    entity: str,
    partition: int,
    group: protocol.Group,
    count: int,
    mode: ServiceBusReceiveMode = ServiceBusReceiveMode.PEEK_LOCK,
) -> tuple[int, list[ServiceBusReceivedMessage]]:
    """(server time in ms, up to `count` messages) from one partition, locked (or deleted in
    RECEIVE_AND_DELETE mode); settle them with a receiver of the same entity and subqueue."""
    nonce = settlement.new_nonce()
    c = protocol.receive.call(entity, partition, group, protocol.mode_of(mode), count, nonce)
    reply = retrying(lambda: _run(client, [c], entity)[0])
    if protocol.receive.journal_pending(reply):  # a fan-out to this subscription is unfinished
        finish_journal(client.handler_context.transport, entity.partition(SUBSCRIPTIONS)[0], partition)
        reply = retrying(lambda: _run(client, [c], entity)[0])
    return protocol.receive.parse(reply, entity, partition, group, nonce, mode)


def send(client: ServiceBusClient, meta: EntityMeta, msgs: list[ServiceBusMessage], rr: int) -> list[int]:
    """Store `msgs` (their total size within the entity's batch limit) in one pipelined round, one
    call per partition; retryable failures are retried for the failed partitions only. Returns each
    message's global sequence number, 0 for a duplicate that was dropped.

    Raises:
        ServiceBusError: a partition's send failed for good (the others may have stored theirs).
    """
    calls, where = send_plan.plan_send(msgs, meta, rr % meta.partition_count)
    results: dict[int, list[int]] = {}
    todo = list(calls)
    for attempt in range(_ATTEMPTS):
        replies = client.handler_context.transport.run_many(todo, meta.name)
        failed = []
        for c, reply in zip(todo, replies, strict=True):
            if isinstance(reply, ServiceBusError):
                if not reply.retryable or attempt == _ATTEMPTS - 1:
                    raise reply
                failed.append(c)
            else:
                results[c.partition] = send_plan.send_result(c, reply)
        if not failed:
            break
        todo = failed
        time.sleep(0.2 * (attempt + 1))
    its = {p: iter(v) for p, v in results.items()}
    return [next(its[p]) for p in where]


def publish(client: ServiceBusClient, meta: EntityMeta, msgs: list[ServiceBusMessage]) -> list[int]:
    """As :func:`send`, for a topic: each message reaches every subscription whose rules match (one
    publish call per topic partition). Returns the topic's sequence numbers, 0 for duplicates.

    Raises:
        ServiceBusError: the publish failed for good (retryable errors are retried; partitions
            already stored may be stored again, which duplicate detection on the topic drops).
    """
    with client.get_topic_sender(meta.name) as sender:
        outcome = retrying(lambda: _stored(sender.store_entries(0, [msgs])[0]), _ATTEMPTS)
    return outcome


def _stored(outcome: Any) -> list[int]:
    if isinstance(outcome, BaseException):
        raise outcome
    return list(outcome)


def size_chunks(msgs: list[T], size: Callable[[T], int], limit: int, count: int) -> Iterator[list[T]]:
    """Consecutive chunks of at most `count` items and `limit` bytes (an item over the limit alone)."""
    chunk: list[T] = []
    total = 0
    for m in msgs:
        b = size(m)
        if chunk and (total + b > limit or len(chunk) >= count):
            yield chunk
            chunk, total = [], 0
        chunk.append(m)
        total += b
    if chunk:
        yield chunk


def release(
    client: ServiceBusClient, entity: str, group: protocol.Group, msgs: list[ServiceBusReceivedMessage]
) -> None:
    """Give locked messages back without counting a delivery (as a receiver does on close)."""
    by_partition: dict[int, list[ServiceBusReceivedMessage]] = {}
    for m in msgs:
        if m.lock_ref.nonce and not m.settled:
            by_partition.setdefault(m.partition_id, []).append(m)
    calls = [
        protocol.abandon.call(entity, p, group, chunk, "1")
        for p, v in by_partition.items()
        for chunk in settlement.chunks(v)
    ]
    if calls:
        client.handler_context.transport.run_many(calls, entity)  # a lock lost meanwhile is fine: it elapses anyway
    for m in msgs:
        m.settled = True  # no longer ours (an AutoLockRenewer stops renewing it)


def renew_all(receiver: ServiceBusReceiver, msgs: list[ServiceBusReceivedMessage]) -> list[bool]:
    """Renew many locks at one script call per partition (``renew_message_lock`` makes one call
    per message); per message, whether its lock is still held."""
    return [not isinstance(r, BaseException) for r in receiver.renew_each(msgs)]


def held_message(entity: str, group: str, lock_token: str, locked_until_ms: int) -> ServiceBusReceivedMessage:
    """A settle-only handle on a message that another process received with peek-lock, from its
    public ``lock_token`` (the lock nonce and the global sequence number): a receiver of the same
    entity and subqueue can renew, complete or abandon it. Its body and properties are empty.

    This is the one place the Spark source builds a received message itself: the driver settles
    the locks its executors took, and the client has no public "settle by lock token" call.
    """
    raw = bytes.fromhex(lock_token.replace("-", ""))  # the canonical uuid text, without a UUID object each
    if len(raw) != 16:
        raise ValueError(f"not a lock token: {lock_token!r}")
    seq = int.from_bytes(raw[8:], "big")
    return ServiceBusReceivedMessage(
        b"",
        entity_name=entity,
        partition_id=seq >> PARTITION_SHIFT,
        group=group,
        local_seq=seq & ((1 << PARTITION_SHIFT) - 1),
        delivery_count=0,
        enqueued_ms=0,
        expires_ms=0,
        locked_until_ms=locked_until_ms,
        nonce=raw[:8].hex(),
        receive_mode=ServiceBusReceiveMode.PEEK_LOCK,
    )
