"""Partition-level access for Spark tasks: one task works on given broker partitions.

The client's receivers spread over all partitions; a Spark task instead owns some partitions, so
these helpers build the same script calls (``sbredis._core.protocol``) for one partition and run them
on the client's transport. Reads use the read-only ``stats`` and ``peek`` scripts; nothing here
takes a lock except :func:`receive`.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple, TypeVar

from .._core import log_read, protocol, send_plan, settlement
from .._core.keys import SUBSCRIPTIONS
from .._core.meta import EntityMeta
from .._enums import ServiceBusReceiveMode, ServiceBusSubQueue
from .._message import ServiceBusMessage, ServiceBusReceivedMessage
from .._sync._client import ServiceBusClient
from .._sync._forwarder import finish_journal
from .._sync._receiver import ServiceBusReceiver
from ..exceptions import MessagingEntityNotFoundError, ServiceBusError
from ._ledger import Locks
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


def active_count(client: ServiceBusClient, entity: str, partitions: int, dead_letter: bool = False) -> int:
    """Active messages (ready, locked and deferred, as the runtime properties count them) of a
    queue or subscription path, or of its dead-letter subqueue: one pipelined ``stats`` call per
    partition on `client`'s connection, without an administration client (which would connect
    and run its maintenance on every call).

    Raises:
        ServiceBusError: the entity is gone or Redis failed.
    """
    calls = [protocol.stats.call(entity, p) for p in range(partitions)]
    total = 0
    for r in retrying(lambda: _run(client, calls, entity)):
        s = protocol.stats.parse(r)
        total += s.dlq_ready + s.dlq_locked + s.dlq_deferred if dead_letter else s.ready + s.locked + s.deferred
    return total


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


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off for a while. An XRANGE reply holds two lists per
    entry until it is parsed: with the collector on, a page's 2,000 new lists push older objects
    through its generations into full collections, which in a Spark worker go over every object
    of PySpark and pyarrow (standalone, 1.1 to 1.5 us per message more than the rest of the read).
    The replies hold no reference cycles: reference counting frees them."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def peek_pages_many(
    client: ServiceBusClient,
    entity: str,
    group: protocol.Group,
    ranges: list[tuple[int, int, int]],
    page: int,
    state: bool = True,
) -> Iterator[tuple[int, protocol.peek.Fields]]:
    """peek_pages over several partitions' (partition, start, end) ranges at once: each round
    trip reads one page per partition not yet done, so a task reading many partitions waits for
    one reply per round, not one per page. Yields (partition, page).

    The pages are what the peek script returns, read with plain XRANGE (``_core.log_read``): the
    script costs Redis several times a plain read per message. The peek script runs once per
    partition, with a count of 0, for what it does besides reading: it checks the entity and
    marks the partition as used (auto-delete-on-idle counts a peek as use). Without `state` the
    pages' delivery counts and states are left at 0 (active), for a reader that does not show
    them: it then never reads lock records, counts or deferred and scheduled marks."""
    todo = {p: max(start, 1) for p, start, end in ranges if end > max(start, 1)}
    ends = {p: end for p, _, end in ranges}
    keys = {p: log_read.Keys(entity, p, group) for p in todo}
    if todo:
        touch = [protocol.peek.call(entity, p, group, start, 0) for p, start in todo.items()]
        retrying(lambda: _run(client, touch, entity))
    transport = client.handler_context.transport
    while todo:
        order = list(todo)
        asked = {p: min(page, ends[p] - todo[p]) for p in order}
        groups = [log_read.page_commands(keys[p], todo[p], asked[p]) for p in order]
        with collector_paused():
            replies = retrying(lambda groups=groups: transport.read_many(groups, entity))  # type: ignore[misc]
            pages = {p: log_read.parse_page(r, entity, group) for p, r in zip(order, replies, strict=True)}
            del replies
        busy = [p for p in order if pages[p][1]] if state else []
        if busy:  # some message there is locked, deferred, scheduled or was delivered: read their state
            more = [log_read.state_commands(keys[p], pages[p][0].local_seq) for p in busy]
            states = retrying(lambda more=more: transport.read_many(more, entity))  # type: ignore[misc]
            for p, s in zip(busy, states, strict=True):
                pages[p] = (log_read.with_state(pages[p][0], s), False)
        for p in order:
            f = pages[p][0]
            got = keep = len(f.raw)
            while keep and f.local_seq[keep - 1] >= ends[p]:
                keep -= 1
            if keep < got:
                f = f.head(keep)
            if keep:
                yield p, f
            if keep < asked[p]:
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


def receive_many(
    client: ServiceBusClient, entity: str, group: protocol.Group, quotas: dict[int, int]
) -> tuple[int, list[ServiceBusReceivedMessage]]:
    """As :func:`receive`, from several partitions in one pipelined round trip (up to
    ``quotas[p]`` from partition p, one lock nonce): (server time in ms, the messages, partition
    by partition). A partition that fails is left out while others answer; retried when none does.

    Raises:
        ServiceBusError: no partition answered, after the retries.
    """
    nonce = settlement.new_nonce()
    mode = protocol.mode_of(ServiceBusReceiveMode.PEEK_LOCK)
    parts = list(quotas)
    calls = [protocol.receive.call(entity, p, group, mode, quotas[p], nonce) for p in parts]

    def once() -> list[Any]:
        replies = client.handler_context.transport.run_many(calls, entity)
        if all(isinstance(r, ServiceBusError) for r in replies):
            raise replies[0]
        return replies

    now, out = 0, []
    for p, reply in zip(parts, retrying(once), strict=True):
        if isinstance(reply, ServiceBusError):
            continue
        now, msgs = protocol.receive.parse(reply, entity, p, group, nonce, ServiceBusReceiveMode.PEEK_LOCK)
        out += msgs
    return now, out


class Taken(NamedTuple):
    """What one partition's receive call took (:func:`receive_round`)."""

    partition: int
    nonce: str
    locked_until_ms: int
    fields: protocol.peek.Fields
    more: bool  # the call filled its quota, or stopped on its expiry budget: ask it again


def receive_round(
    client: ServiceBusClient, entity: str, meta: EntityMeta, group: protocol.Group, quotas: dict[int, int]
) -> tuple[list[Taken], ServiceBusError | None]:
    """Receive with peek-lock from several partitions of `entity` (`meta` its metadata: the
    calls carry its generation) in one pipelined round,
    up to ``quotas[p]`` from partition p, as columns (no message objects). Returns what each
    partition that answered took, and the first error of one that did not (whose messages, if
    any, stay available); complete them with :func:`complete_locks` (:func:`taken_locks`), or
    settle them with a receiver of the same entity and subqueue through :func:`held`."""
    nonce = settlement.new_nonce()
    mode = protocol.mode_of(ServiceBusReceiveMode.PEEK_LOCK)
    parts = list(quotas)
    calls = protocol.stamped(
        [protocol.receive.call(entity, p, group, mode, quotas[p], nonce) for p in parts], meta.generation
    )
    out: list[Taken] = []
    error: ServiceBusError | None = None
    for p, reply in zip(parts, client.handler_context.transport.run_many(calls, entity), strict=True):
        if isinstance(reply, ServiceBusError):
            error = error or reply
            continue
        locked, f = protocol.receive.parse_fields(reply, group)
        more = len(f.raw) >= quotas[p] or protocol.receive.more(reply)
        out.append(Taken(p, nonce if locked else "", locked, f, more))
    return out, error


def taken_locks(took: list[Taken]) -> list[Locks]:
    """The locks of what one receive round took, for the ledger and :func:`complete_locks`."""
    return [Locks(t.partition, t.nonce, tuple(t.fields.local_seq)) for t in took if t.nonce]


def complete_locks(client: ServiceBusClient, entity: str, group: str, generation: str, locks: Iterable[Locks]) -> int:
    """Complete held locks, each receive call's by its lock nonce and the messages' sequence
    numbers (:class:`._ledger.Locks`): one script call per partition and lock nonce (chunks of
    settlement.SETTLE_CHUNK), without a message object or a lock token's text each. Returns how
    many locks were no longer held (elapsed, or the entity was created again): those messages come
    back by themselves.

    Raises:
        ServiceBusError: a partition's complete failed otherwise (Redis away, entity disabled).
    """
    calls = [
        protocol.complete.call_by_nonce(entity, g.partition, protocol.Group(group), g.nonce, chunk)
        for g in locks
        for chunk in (g.seqs[i : i + settlement.SETTLE_CHUNK] for i in range(0, len(g.seqs), settlement.SETTLE_CHUNK))
    ]
    lost = 0
    for c, reply in zip(
        calls, client.handler_context.transport.run_many(protocol.stamped(calls, generation), entity), strict=True
    ):
        if isinstance(reply, MessagingEntityNotFoundError):
            lost += int(c.args[1])  # the locks went with the entity
        elif isinstance(reply, ServiceBusError):
            raise reply
        else:
            lost += sum(1 for code in reply if code)
    return lost


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


def held(
    entity: str, group: str, partition: int, nonce: str, local_seq: int, locked_until_ms: int
) -> ServiceBusReceivedMessage:
    """A settle-only handle on a message that another process received with peek-lock, from its
    lock's parts as the ledger keeps them (the partition, the receive call's lock nonce, the
    message's partition-local sequence number): a receiver of the same entity and subqueue can
    renew, complete or abandon it. Its body and properties are empty.

    This is the one place the Spark source builds a received message itself: the driver settles
    the locks its executors took, and the client has no public "settle by lock token" call.
    """
    return ServiceBusReceivedMessage(
        b"",
        entity_name=entity,
        partition_id=partition,
        group=group,
        local_seq=local_seq,
        delivery_count=0,
        enqueued_ms=0,
        expires_ms=0,
        locked_until_ms=locked_until_ms,
        nonce=nonce,
        receive_mode=ServiceBusReceiveMode.PEEK_LOCK,
    )
