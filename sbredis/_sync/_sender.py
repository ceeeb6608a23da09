# Generated from sbredis/aio/_sender.py by scripts/unasync.py: edit the async source, not this.
"""ServiceBusSender: settled sends, batches and scheduled messages."""

from __future__ import annotations

import random
from collections.abc import Iterable
from datetime import datetime
from types import TracebackType
from typing import TYPE_CHECKING, Any

from .._concurrency import SyncCoalescer, sync_log_failure
from .._core import instrument, protocol, send_plan, validation
from .._core.meta import EntityMeta
from .._core.protocol import cancel_scheduled, send
from .._core.transaction import joinable
from .._message import ServiceBusMessage, ServiceBusMessageBatch, schedule_ms
from ..exceptions import (
    InvalidArgumentError,
    InvalidOperationError,
    MessageNotFoundError,
    MessageSizeExceededError,
    MessagingEntityNotFoundError,
    ServiceBusConnectionError,
    ServiceBusError,
)

if TYPE_CHECKING:
    from ._handler import HandlerContext


DEFAULT_MAX_PENDING_SENDS = 1000


def _refused_by_meta(outcome: Any) -> bool:
    """An entry's error that metadata changed since it was read could undo: over the size limit,
    or a session rule (not a bad argument, which no entity setting makes good)."""
    return isinstance(outcome, (MessageSizeExceededError, InvalidOperationError)) and not isinstance(
        outcome, InvalidArgumentError
    )


class ServiceBusSender:
    """Sends to one queue. A send returns once Redis stored its messages.

    Sends started concurrently (asyncio) are coalesced: while one batch is at Redis, the next
    gathers, so N concurrent awaited sends cost about one script call per partition per batch. At
    most `max_pending_sends` messages wait at once; further sends wait for room.
    """

    def __init__(
        self,
        context: HandlerContext,
        entity: str,
        max_pending_sends: int = DEFAULT_MAX_PENDING_SENDS,
        *,
        into_subscription: bool = False,
    ) -> None:
        """`into_subscription`: `entity` is a subscription path and messages are stored in it
        directly, bypassing its topic's rules (sbredis's resubmit_dead_letters only)."""
        self._context = context
        self.entity_name = entity
        self._into_subscription = into_subscription
        self._rr = random.randrange(1 << 30)
        self._kind = "subscription" if into_subscription else "queue"  # the entity kind send.lua stores in
        self._closed = False
        # paired namespaces: decided once, here; an unpaired client's sends go straight to _store
        paired = context.paired
        store = self._store if paired is None or into_subscription else paired.route(entity, self._store)
        self._pipe = SyncCoalescer(store, max_pending_sends)

    _one_message_path = True  # one caller's one message to the sender's kind of entity: _store_one

    def store_entries(self, sched_ms: int, entries: list[list[ServiceBusMessage]]) -> list[Any]:
        """Internal, for sbredis's own integrations (paired namespaces, Spark): store entries (each
        one caller's messages) without coalescing, one outcome (sequence numbers or the exception)
        per entry. Not part of the Azure SDK's API."""
        return self._store(sched_ms, entries)

    def _store(self, sched_ms: int, entries: list[list[ServiceBusMessage]]) -> list[Any]:
        """Store entries (each one caller's messages); one outcome (sequence numbers or the error)
        per entry. Entries that found the entity deleted and created again since its metadata was
        read (a new generation, maybe another partition count) are planned again and stored once
        more with the new metadata."""
        try:
            meta = self._context.entity(self.entity_name)
        except ServiceBusError as e:
            return [e] * len(entries)
        # send_messages(msg) in a loop; a topic sender publishes through its _store_with, whatever
        # the entity turns out to be (it refuses a queue there)
        if self._one_message_path and len(entries) == 1 and len(entries[0]) == 1 and meta.kind == self._kind:
            outcome = self._store_one(meta, sched_ms, entries[0])
            if not isinstance(outcome, Exception):
                return [outcome]
            outcomes = [outcome]
        else:
            outcomes = self._store_with(meta, sched_ms, entries)
        stale = [i for i, o in enumerate(outcomes) if isinstance(o, MessagingEntityNotFoundError)]
        if stale and self._context.recreated(self.entity_name, meta.generation):
            meta = self._context.entity(self.entity_name)
            again = self._store_with(meta, sched_ms, [entries[i] for i in stale])
            for i, outcome in zip(stale, again, strict=True):
                outcomes[i] = outcome
        # refused for what the cached metadata says (a size limit, sessions): an update_queue may
        # have changed it since, so those entries go again once if the entity reads otherwise now
        refused = [i for i, o in enumerate(outcomes) if _refused_by_meta(o)]
        if refused:
            try:
                fresh = self._context.entity(self.entity_name, refresh=True)
            except ServiceBusError:
                return outcomes
            if fresh != meta:
                again = self._store_with(fresh, sched_ms, [entries[i] for i in refused])
                for i, outcome in zip(refused, again, strict=True):
                    outcomes[i] = outcome
        return outcomes

    def _store_one(self, meta: EntityMeta, sched_ms: int, entry: list[ServiceBusMessage]) -> Any:
        """_store_with's work for one caller's one message: its one script call built and its
        reply read directly, without packing, grouping and the per-entry outcome steps (most of a
        one-message send's own CPU, docs/benchmarks.md "Loops against raw round trips"). Returns
        the sequence numbers or the error, as _store_with's outcome would be. A keyed message of a
        partitioned entity, and a partition found unreachable, take the general path (its retry
        rounds and placement elsewhere)."""
        count = meta.partition_count
        m = entry[0]
        if count > 1:
            if send_plan.message_key(m, meta) is not None:
                return (self._store_with(meta, sched_ms, [entry]))[0]
            self._rr += 1
            p = self._rr % count
        else:
            p = 0
        try:
            c = send_plan.plan_one(m, meta, p, sched_ms, into_subscription=self._into_subscription)
        except ServiceBusError as e:
            return e
        c = protocol.stamp(c, meta.generation)
        [reply] = self._context.transport.run_many([c], self.entity_name, retry="each" if count == 1 else "none")
        if isinstance(reply, Exception):
            # gone, or refused for what its cached metadata allowed (changed since): read it again
            if isinstance(reply, MessagingEntityNotFoundError) or send_plan.refused_for_one(reply):
                self._context.forget(self.entity_name)
            elif isinstance(reply, ServiceBusConnectionError) and count > 1:
                return (self._store_rounds(meta, sched_ms, [entry], {p}))[0]
            outcome: Any = reply
        else:
            outcome = send.parse(c, reply)
        if meta.forwards:  # auto-forwarding: move what was just stored on (see _forwarder.py)
            self._context.forwarder.drain_quietly(self.entity_name)
        return outcome

    def _store_with(self, meta: EntityMeta, sched_ms: int, entries: list[list[ServiceBusMessage]]) -> list[Any]:
        """Store entries in as few script calls as fit, planned with `meta`. An entry never spans
        two calls of one partition, so each caller's messages for a partition are stored all or none.

        Availability: an entry without partition keys whose partition cannot be reached is placed
        in another partition at once; a keyed entry is retried by the policy and then fails with a
        ServiceBusConnectionError naming its partition.
        """
        return self._store_rounds(meta, sched_ms, entries, set())

    def _store_rounds(
        self, meta: EntityMeta, sched_ms: int, entries: list[list[ServiceBusMessage]], down: set[int]
    ) -> list[Any]:
        """_store_with's rounds; `down`: the partitions that could not be reached during this flush
        (those _store_one found so, or none)."""
        outcomes: list[Any] = [None] * len(entries)
        pending = list(range(len(entries)))
        retry = "each" if meta.partition_count == 1 else "none"
        while pending:
            failed_over = self._store_round(meta, sched_ms, entries, pending, outcomes, down, retry)
            if retry == "each":
                break
            movable = [
                i for i in failed_over if send_plan.unkeyed(entries[i], meta) and len(down) < meta.partition_count
            ]
            pending = [i for i in failed_over if i not in movable]
            if pending:  # keyed (or nowhere left): one more round under the retry policy
                self._store_round(meta, sched_ms, entries, pending, outcomes, down, "each")
            pending = movable
        if meta.forwards:  # auto-forwarding: move what was just stored on (see _forwarder.py)
            self._context.forwarder.drain_quietly(self.entity_name)
        return outcomes

    def _store_round(
        self,
        meta: EntityMeta,
        sched_ms: int,
        entries: list[list[ServiceBusMessage]],
        indexes: list[int],
        outcomes: list[Any],
        down: set[int],
        retry: str,
        alone: bool = False,
    ) -> list[int]:
        """One attempt for entries[indexes]; returns the indexes that failed with a connection error.

        Each caller's outcome is its own: an entry whose messages cannot be planned, or whose
        share of a call made the script refuse the whole call, fails alone (send_plan.plan_entries,
        group_outcomes) and the others are stored.
        """

        def plan(messages: list[ServiceBusMessage]) -> tuple[list[Any], list[int]]:
            return send_plan.plan_send(
                messages, meta, self._next_partition(meta, down), sched_ms, into_subscription=self._into_subscription
            )

        plans = send_plan.plan_entries(entries, indexes, meta.max_message_bytes, plan, outcomes, alone)
        calls = protocol.stamped([c for _, group_calls, _ in plans for c in group_calls], meta.generation)
        replies = iter(self._context.transport.run_many(calls, self.entity_name, retry=retry) if calls else [])
        unreachable = []
        again: list[int] = []
        for group, group_calls, where in plans:
            seqs, errors = send_plan.send_replies(group_calls, replies)
            for p, err in errors.items():
                # gone, or refused for what its cached metadata allowed (changed since): read it again
                if isinstance(err, MessagingEntityNotFoundError) or send_plan.refused_for_one(err):
                    self._context.forget(self.entity_name)
                elif isinstance(err, ServiceBusConnectionError):
                    down.add(p)
            again += send_plan.group_outcomes(entries, group, where, seqs, errors, outcomes)
            unreachable += [i for i in group if isinstance(outcomes[i], ServiceBusConnectionError)]
        if again:  # a call refused for one caller's messages: each of its callers on their own
            unreachable += self._store_round(meta, sched_ms, entries, again, outcomes, down, retry, alone=True)
        return unreachable

    def _next_partition(self, meta: EntityMeta, down: set[int]) -> int:
        """The next round-robin partition, skipping those found unreachable."""
        for _ in range(meta.partition_count):
            self._rr += 1
            p = self._rr % meta.partition_count
            if p not in down:
                return p
        return self._rr % meta.partition_count

    def send_messages(
        self, message: Any, *, timeout: float | None = None, presettled: bool = False, transaction: Any = None
    ) -> None:
        """Send one message, a list or a batch; returns once Redis stored them.

        Messages for one partition are stored atomically (all or none). With ``presettled=True``
        the call returns as soon as the messages are queued (waiting only for room under
        max_pending_sends): fire-and-forget, so a failure is only logged, never reported to the
        caller. Close the sender to wait for queued pre-settled sends. With ``transaction=tx``
        (``client.transaction()``) the messages are checked now and sent when tx commits.

        Raises:
            InvalidArgumentError: not a message, list or batch.
            MessageSizeExceededError: a message or batch is over the entity's limit.
            InvalidOperationError: the message breaks a rule of the transaction (docs/transactions.md).
            MessagingEntityNotFoundError, MessagingEntityDisabledError, ServiceBusQuotaExceededError,
            ServiceBusConnectionError (retryable), OperationTimeoutError (retryable).
        """
        validation.check_timeout(timeout)
        self._check_open()
        messages = validation.as_messages(message)
        if transaction is not None:
            if presettled:
                raise InvalidArgumentError("a pre-settled send cannot be part of a transaction")
            joinable(transaction).join_send(self._context, self, messages)
            return
        if not messages:
            return
        with instrument.operation("send", self.entity_name, messages) as op:
            if presettled:
                outcome = self._pipe.enqueue(0, messages)
                outcome.add_done_callback(sync_log_failure("send"))
                op.follow(outcome)
                return
            op.done(self._pipe.submit(0, messages))

    def schedule_messages(
        self, messages: Any, schedule_time_utc: datetime, *, timeout: float | None = None
    ) -> list[int]:
        """Store messages to be enqueued at `schedule_time_utc`; returns their sequence numbers.

        Raises:
            InvalidArgumentError: bad messages, or a schedule time that is not a datetime or is
                after the year 2999.
            As send_messages otherwise.
        """
        validation.check_timeout(timeout)
        self._check_open()
        at = schedule_ms("schedule_time_utc", schedule_time_utc)
        batch = validation.as_messages(messages)
        if not batch:
            return []
        for m in batch:  # as the SDK does: the stored and the received message carry the time
            m.scheduled_enqueue_time_utc = schedule_time_utc
        with instrument.operation("schedule", self.entity_name, batch) as op:
            seqs: list[int] = self._pipe.submit(at, batch)
            op.done(seqs)
        return seqs

    def cancel_scheduled_messages(
        self, sequence_numbers: int | Iterable[int], *, timeout: float | None = None
    ) -> None:
        """Cancel scheduled messages not yet enqueued. All numbers of one partition or none.

        Raises:
            InvalidArgumentError: not sequence numbers of this entity.
            MessageNotFoundError: a number is not a pending scheduled message.
        """
        validation.check_timeout(timeout)
        self._check_open()
        seqs = validation.sequence_numbers(sequence_numbers)
        meta = self._context.entity(self.entity_name)
        groups: dict[int, list[int]] = {}
        for s in seqs:
            p, local = validation.split_sequence_number(s, meta.partition_count)
            groups.setdefault(p, []).append(local)
        calls = [cancel_scheduled.call(self.entity_name, p, v) for p, v in groups.items()]
        for reply in self._context.transport.run_many(protocol.stamped(calls, meta.generation), self.entity_name):
            if isinstance(reply, MessagingEntityNotFoundError) and self._context.recreated(
                self.entity_name, meta.generation
            ):
                raise MessageNotFoundError(
                    f"'{self.entity_name}' was deleted and created again: its scheduled messages are gone."
                )
            if isinstance(reply, ServiceBusError):
                raise reply

    def create_message_batch(self, max_size_in_bytes: int | None = None) -> ServiceBusMessageBatch:
        """An empty batch bounded by the entity's maximum message size.

        Raises:
            MessageSizeExceededError: `max_size_in_bytes` is over the entity's limit.
        """
        meta = self._context.entity(self.entity_name)
        limit = meta.max_message_bytes
        if max_size_in_bytes is not None:
            validation.check_count("max_size_in_bytes", max_size_in_bytes, 1 << 62)
            if max_size_in_bytes > limit:
                raise MessageSizeExceededError(
                    f"max_size_in_bytes {max_size_in_bytes} is over the entity's limit of {limit} bytes"
                )
            limit = max_size_in_bytes
        return ServiceBusMessageBatch(limit, entity_name=self.entity_name)

    def _check_open(self) -> None:
        if self._closed:  # a ValueError, as the SDK's: a closed sender is not opened again
            raise InvalidOperationError("the sender is closed: get a new one from the ServiceBusClient")

    def close(self) -> None:
        """Wait for queued sends (pre-settled ones too); the connections are the client's. A
        closed sender refuses further use, as the SDK's does."""
        self._closed = True
        self._pipe.drain()

    def __enter__(self) -> ServiceBusSender:
        self._check_open()
        return self

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ServiceBusSender(queue={self.entity_name!r})"


__all__ = ["ServiceBusMessage", "ServiceBusSender"]
