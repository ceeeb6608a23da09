# Generated from sbredis/aio/_receiver.py by scripts/unasync.py: edit the async source, not this.
"""ServiceBusReceiver: peek-lock and receive-and-delete, settlement, deferral and peek."""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Iterable
from datetime import datetime
from types import TracebackType
from typing import TYPE_CHECKING, Any

from .._concurrency import SyncCoalescer
from .._core import codec, instrument, protocol, quota, settlement, validation
from .._core import session as sess
from .._core.keys import SUBSCRIPTIONS
from .._core.meta import EntityMeta
from .._core.protocol import SETTLE, Group, abandon, peek, probe, receive, receive_deferred, session_receive
from .._core.protocol._held import LOCK_LOST
from .._core.transaction import joinable
from .._enums import ServiceBusMessageState, ServiceBusReceiveMode, ServiceBusSessionFilter, ServiceBusSubQueue
from .._message import PARTITION_SHIFT, ServiceBusReceivedMessage
from ..exceptions import (
    InvalidArgumentError,
    InvalidOperationError,
    MessageAlreadySettled,
    MessageLockLostError,
    MessageNotFoundError,
    MessagingEntityNotFoundError,
    ServiceBusConnectionError,
    ServiceBusError,
    SessionLockLostError,
)
from ._forwarder import finish_journal
from ._session import ServiceBusSession

if TYPE_CHECKING:
    from ._handler import HandlerContext

log = logging.getLogger("sbredis")
_POLL_MIN, _POLL_MAX = 0.001, 0.05
SETTLE_PENDING_LIMIT = 10_000  # messages waiting to be settled at once (concurrent settlements wait past it)


PROBE_ROUNDS = 3  # probe + take rounds of a receive over several partitions that came back short


class ServiceBusReceiver:
    """Receives from one queue or its dead-letter subqueue.

    A receive over a partitioned queue asks the partitions in turn and locks no more messages than
    asked for plus prefetch_count: those extra ones are kept locked ahead for the next calls, handed
    out only while their lock holds (the AutoLockRenewer does not renew them before), and released
    uncounted on close. Concurrent settlements (asyncio) coalesce into one script call per partition.

    With a session_id (an id or NEXT_AVAILABLE_SESSION) it is a session receiver: it locks that
    session when opened and receives, peeks and receives deferred messages of that session only;
    ``session`` is the ServiceBusSession (see _session.py).
    """

    def __init__(
        self,
        context: HandlerContext,
        entity: str,
        receive_mode: ServiceBusReceiveMode,
        sub_queue: ServiceBusSubQueue | None,
        max_wait_time: float | None,
        prefetch_count: int,
        auto_lock_renewer: Any = None,
        session_id: str | ServiceBusSessionFilter | None = None,
    ) -> None:
        self._context = context
        self.entity_name = entity
        self.receive_mode = receive_mode
        self.sub_queue = sub_queue
        self._group = protocol.group_of(sub_queue)
        self._mode = protocol.mode_of(receive_mode)
        self._max_wait_time = max_wait_time
        self._prefetch = prefetch_count
        self._cursor = 0
        self._buffer: deque[ServiceBusReceivedMessage] = deque()
        self._clock_offset_ms = 0  # server clock - local clock, from the last reply
        self._last_peeked = 0
        self._peeked_gen = ""  # the entity generation _last_peeked is of
        self._expired_left = False  # the last receive stopped on a partition's expiry budget
        self._closed = False
        self._renewer = auto_lock_renewer
        self._settler = SyncCoalescer(self._settle_now, SETTLE_PENDING_LIMIT)
        self._session = (
            None
            if session_id is None
            else ServiceBusSession(self, session_id, context, max_wait_time, auto_lock_renewer)
        )

    @property
    def session(self) -> ServiceBusSession | None:
        """The session of a session receiver (None for other receivers)."""
        return self._session

    @property
    def prefetch_count(self) -> int:
        """Messages kept locked ahead of what receive calls ask for. Settable (an sbredis
        extension): the next receive that goes to Redis takes that many ahead; messages already
        fetched stay. A worker sizes it to its handlers' pace (sbredis.worker)."""
        return self._prefetch

    @prefetch_count.setter
    def prefetch_count(self, value: int) -> None:
        if value != 0:
            validation.check_count("prefetch_count", value)
        self._prefetch = value

    # -- internal: for its session and the AutoLockRenewer
    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def clock_offset_ms(self) -> int:
        """The server's clock minus the local clock, from the last reply that told the time."""
        return self._clock_offset_ms

    def saw_server_time(self, now_ms: int) -> None:
        """A reply said the server's time is `now_ms` (lock ends are in the server's clock)."""
        self._clock_offset_ms = now_ms - int(time.time() * 1000)

    # -- receiving
    def _meta(self) -> EntityMeta:
        return self._context.entity(self.entity_name)

    def _run_many(
        self, calls: list[protocol.Call], unreachable: dict[int, ServiceBusError] | None = None
    ) -> list[Any]:
        """Receive-side calls over partitions, retried only when none answers. A partition that
        cannot be reached is skipped (noted in `unreachable`, logged) while others serve; other
        errors (entity gone, disabled) raise."""
        replies = self._context.transport.run_many(calls, self.entity_name, retry="all")
        for c, r in zip(calls, replies, strict=True):
            if not isinstance(r, ServiceBusError):
                continue
            if isinstance(r, MessagingEntityNotFoundError):
                self._context.forget(self.entity_name)
            if not isinstance(r, ServiceBusConnectionError) or unreachable is None:
                if all(isinstance(x, ServiceBusError) for x in replies) or not isinstance(r, ServiceBusConnectionError):
                    raise r
            else:
                unreachable[c.partition] = r
            log.warning("receive from a partition of %s failed: %s", self.entity_name, r.message)
        return replies

    def _take(
        self, meta: EntityMeta, quotas: dict[int, int], nonce: str, unreachable: dict[int, ServiceBusError]
    ) -> tuple[list[ServiceBusReceivedMessage], set[int]]:
        """Receive from each partition its quota; returns messages and the partitions that filled it."""
        parts = list(quotas)
        calls = [receive.call(self.entity_name, p, self._group, self._mode, quotas[p], nonce) for p in parts]
        calls = protocol.stamped(calls, meta.generation)
        out: list[ServiceBusReceivedMessage] = []
        full = set()
        for p, reply in zip(parts, self._run_many(calls, unreachable), strict=True):
            if isinstance(reply, ServiceBusError):
                continue
            if receive.journal_pending(reply):  # a fan-out to this subscription is unfinished
                finish_journal(self._context.transport, self.entity_name.partition(SUBSCRIPTIONS)[0], p)
                self._expired_left = True  # receive again at once: the copies are stored now
                continue
            now, msgs = receive.parse(reply, self.entity_name, p, self._group, nonce, self.receive_mode)
            self.saw_server_time(now)
            self._expired_left = self._expired_left or receive.more(reply)
            out += msgs
            if len(msgs) >= quotas[p]:
                full.add(p)
        return out, full

    def _receive_once(self, n: int) -> list[ServiceBusReceivedMessage]:
        self._expired_left = False
        meta = self._meta()
        if self._session is not None:
            return self._receive_session(n)
        if meta.sessions and self._group is Group.MAIN:
            # refused for what the cached metadata says: the entity may have been created again
            # without sessions since it was read
            meta = self._context.entity(self.entity_name, refresh=True)
        try:
            return self._receive_from(meta, n)
        except MessagingEntityNotFoundError:
            if not self._context.recreated(self.entity_name, meta.generation):
                raise
        # deleted and created again since the metadata was read: receive from the new entity's
        # partitions (there may be more or fewer of them)
        return self._receive_from(self._meta(), n)

    def _receive_from(self, meta: EntityMeta, n: int) -> list[ServiceBusReceivedMessage]:
        if meta.sessions and self._group is Group.MAIN:
            raise sess.refuse_plain_receive(self.entity_name)
        count = meta.partition_count
        nonce = settlement.new_nonce()
        start = self._cursor % count
        self._cursor += 1
        order = [(start + i) % count for i in range(count)]
        quotas = quota.split_quota(n, order)
        unreachable: dict[int, ServiceBusError] = {}
        got, full = self._take(meta, quotas, nonce, unreachable)
        if len(got) >= n or (count == 1 and not unreachable):
            return got
        # Fewer than asked: ask the partitions not asked yet (or that may have more) how many they
        # could give, then take only that many; no message is locked beyond the request. A probe
        # can count more than a take finds (expired messages not yet removed, which the take
        # removes): then ask again, a bounded number of times.
        rest = [p for p in order if p not in quotas or p in full]
        for _ in range(PROBE_ROUNDS):
            if not rest or len(got) >= n:
                break
            calls = protocol.stamped([probe.call(self.entity_name, p, self._group) for p in rest], meta.generation)
            replies = self._run_many(calls, unreachable)
            avail = {p: k for p, r in zip(rest, replies, strict=True) if (k := probe.parse(r)) is not None}
            more = quota.fill_quota(n - len(got), avail, rest)
            if not more:
                break
            extra, _ = self._take(meta, more, nonce, unreachable)
            got += extra
            if len(extra) >= sum(more.values()):
                break  # every probe count held: what the partitions had is taken
        if not got and len(unreachable) == count:  # no partition answered at all
            raise next(iter(unreachable.values()))
        return got

    def _receive_session(self, n: int) -> list[ServiceBusReceivedMessage]:
        """Up to n messages of the session, in sequence order, locked under the session lock."""
        s = self._session
        assert s is not None
        s.ensure_locked()
        reply = s.call(session_receive.call(self.entity_name, s.partition, s.key, self._mode, n, s.nonce))
        if session_receive.journal_pending(reply):  # a fan-out to this subscription is unfinished
            finish_journal(self._context.transport, self.entity_name.partition(SUBSCRIPTIONS)[0], s.partition)
            self._expired_left = True  # receive again at once: the copies are stored now
            return []
        now, msgs = session_receive.parse(reply, self.entity_name, s.partition, self._group, s.nonce, self.receive_mode)
        self.saw_server_time(now)
        self._expired_left = session_receive.more(reply)
        return msgs

    def receive_messages(
        self, max_message_count: int | None = 1, max_wait_time: float | None = None, *, wait: bool = True
    ) -> list[ServiceBusReceivedMessage]:
        """Up to `max_message_count` messages; waits up to `max_wait_time` seconds for the first.

        With no max_wait_time here or on the receiver, waits until a message arrives. With
        ``wait=False`` (sbredis's own), takes what is available now and returns at once, an empty
        list when nothing is (the SDK refuses a max_wait_time of 0).

        Raises:
            InvalidArgumentError: a bad count, or a max_wait_time that is not above 0 (a ValueError,
                as in the SDK).
            MessagingEntityNotFoundError, MessagingEntityDisabledError, ServiceBusConnectionError.
        """
        n = validation.check_count("max_message_count", 1 if max_message_count is None else max_message_count)
        seconds = validation.check_wait("max_wait_time", max_wait_time)
        if seconds is not None and seconds <= 0:
            raise InvalidArgumentError("max_wait_time must be greater than 0 (wait=False receives without waiting)")
        if not wait:
            seconds = 0.0
        elif seconds is None:
            seconds = self._max_wait_time
        self._check_open()
        return self._receive_now(n, seconds)

    def _receive_now(self, n: int, wait: float | None) -> list[ServiceBusReceivedMessage]:
        with instrument.operation("receive", self.entity_name) as op:
            got = self._receive_waiting(n, wait)
            op.done(got)
        return got

    def _receive_waiting(self, n: int, wait: float | None) -> list[ServiceBusReceivedMessage]:
        got = self._from_buffer(n)
        if got:
            return self._hand_out(got)
        deadline = None if wait is None else time.monotonic() + wait
        pause = _POLL_MIN
        while True:
            got = self._receive_once(min(n + self._prefetch, validation.MAX_RECEIVE_COUNT))
            if got:
                got = self._fill(got, n, deadline)
                self._buffer.extend(got[n:])
                return self._hand_out(got[:n])
            if self._expired_left and (deadline is None or time.monotonic() < deadline):
                # a partition stopped on its expiry budget: a live message may wait behind the
                # expired ones it has left, so call again now rather than wait as if empty
                continue
            if self._context.forwarder.pull(self.entity_name):
                continue  # forwarded messages were waiting in an outbox upstream (see _forwarder.py)
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                return []
            delay = pause if deadline is None else min(pause, deadline - now)
            time.sleep(delay)
            pause = min(pause * 2, _POLL_MAX)

    def _fill(
        self, got: list[ServiceBusReceivedMessage], n: int, deadline: float | None
    ) -> list[ServiceBusReceivedMessage]:
        """Up to `n` messages: a script call stops reading on its time budget (READ_US,
        docs/keyspace.md "Per-call caps") and says so, so call again, within the wait, while a
        reply says more may be left."""
        while len(got) < n and self._expired_left and (deadline is None or time.monotonic() < deadline):
            extra = self._receive_once(min(n - len(got), validation.MAX_RECEIVE_COUNT))
            if not extra:
                break
            got += extra
        return got

    def _hand_out(self, messages: list[ServiceBusReceivedMessage]) -> list[ServiceBusReceivedMessage]:
        """Register handed-out locked messages with the receiver's AutoLockRenewer, if any (a
        session receiver's renewer renews the session lock, which covers its messages)."""
        if self._session is not None:
            for m in messages:
                m.session_locked = True
        elif self._renewer is not None:
            for m in messages:
                if m.lock_ref.nonce:
                    self._renewer.register(self, m)
        return messages

    def _from_buffer(self, n: int) -> list[ServiceBusReceivedMessage]:
        """Buffered messages whose lock still holds (by the server's clock)."""
        out: list[ServiceBusReceivedMessage] = []
        now = int(time.time() * 1000) + self._clock_offset_ms
        while self._buffer and len(out) < n:
            m = self._buffer.popleft()
            if self._session is not None and m.locked_until_ms:
                m.locked_until_ms = self._session.locked_until_ms  # renewing the session renewed it
            if m.locked_until_ms == 0 or m.locked_until_ms > now:
                out.append(m)
        return out

    def __iter__(self) -> ServiceBusReceiver:
        return self

    def __next__(self) -> ServiceBusReceivedMessage:
        """Next message; stops when max_wait_time passes with nothing (never, when unset)."""
        self._check_open()
        batch = self._receive_now(1, self._max_wait_time)
        if not batch:
            raise StopIteration
        return batch[0]

    def next(self) -> ServiceBusReceivedMessage:
        """The SDK's name for the iterator's next step (``receiver.next()``).

        Raises:
            StopIteration: max_wait_time passed with nothing.
        """
        return self.__next__()

    def receive_deferred_messages(
        self, sequence_numbers: int | Iterable[int], *, timeout: float | None = None
    ) -> list[ServiceBusReceivedMessage]:
        """The deferred messages with these sequence numbers (locked, or deleted in
        RECEIVE_AND_DELETE mode). Expired ones are expired instead of returned.

        Raises:
            InvalidArgumentError: not sequence numbers of this entity.
            MessageNotFoundError: a number is not a deferred message (nothing was received).
        """
        validation.check_timeout(timeout)
        seqs = validation.sequence_numbers(sequence_numbers)
        self._check_open()
        meta = self._meta()
        groups: dict[int, list[int]] = {}
        for s in seqs:
            p, local = validation.split_sequence_number(s, meta.partition_count)
            groups.setdefault(p, []).append(local)
        nonce, session_id = settlement.new_nonce(), ""
        if self._session is not None:  # the session's messages only, locked under its lock
            self._session.ensure_locked()
            nonce, session_id = self._session.nonce, self._session.key
            if set(groups) - {self._session.partition}:
                raise MessageNotFoundError("A sequence number does not name a deferred message of this session.")
        elif meta.sessions and self._group is Group.MAIN:
            raise sess.refuse_plain_receive(self.entity_name)
        out: list[ServiceBusReceivedMessage] = []
        pending = list(groups.items())
        while pending:  # a call that stopped on its read budget leaves the rest of its numbers
            calls = [
                receive_deferred.call(self.entity_name, p, self._group, self._mode, nonce, v, session_id)
                for p, v in pending
            ]
            replies = self._context.transport.run_many(protocol.stamped(calls, meta.generation), self.entity_name)
            rest: list[tuple[int, list[int]]] = []
            for (p, v), c, reply in zip(pending, calls, replies, strict=True):
                if isinstance(reply, MessagingEntityNotFoundError) and self._context.recreated(
                    self.entity_name, meta.generation
                ):
                    raise MessageNotFoundError(
                        f"'{self.entity_name}' was deleted and created again: its deferred messages are gone."
                    )
                if isinstance(reply, ServiceBusError):
                    raise reply
                _, msgs = receive_deferred.parse(
                    reply,
                    self.entity_name,
                    c.partition,
                    self._group,
                    nonce,
                    self.receive_mode,
                    ServiceBusMessageState.DEFERRED,
                )
                out += msgs
                if taken := receive_deferred.taken(reply):
                    rest.append((p, v[taken:]))
            pending = rest
        return self._hand_out(out) if self._session is not None else out

    def peek_messages(
        self, max_message_count: int = 1, *, sequence_number: int | None = None, timeout: float | None = None
    ) -> list[ServiceBusReceivedMessage]:
        """Up to `max_message_count` messages from `sequence_number` on (default: after the last
        peeked), in sequence-number order, without locking them. Expired messages may show.

        Raises:
            InvalidArgumentError: a bad count or sequence number.
        """
        validation.check_timeout(timeout)
        n = validation.check_count("max_message_count", max_message_count)
        if sequence_number is not None and (
            isinstance(sequence_number, bool) or not isinstance(sequence_number, int) or sequence_number < 0
        ):
            raise InvalidArgumentError("sequence_number must be a non-negative int")
        self._check_open()
        self._context.forwarder.pull(self.entity_name)  # messages forwarded here, still upstream
        meta = self._meta()
        try:
            msgs = self._peek(meta, sequence_number, n)
        except MessagingEntityNotFoundError:
            if not self._context.recreated(self.entity_name, meta.generation):
                raise
            meta = self._meta()  # the entity was deleted and created again
            msgs = self._peek(meta, sequence_number, n)
        if msgs:
            self._last_peeked, self._peeked_gen = msgs[-1].sequence_number, meta.generation
        return msgs

    def _peek(self, meta: EntityMeta, sequence_number: int | None, n: int) -> list[ServiceBusReceivedMessage]:
        # after the last peeked, unless that was in the entity before it was created again
        start = sequence_number or (self._last_peeked + 1 if self._peeked_gen == meta.generation else 1)
        first_p, first_local = start >> PARTITION_SHIFT, start & validation.LOCAL_MASK
        parts, session_id = range(first_p, meta.partition_count), ""
        if self._session is not None:  # that session's messages: its partition only
            self._session.ensure_locked()
            session_id = self._session.key
            sp = self._session.partition
            parts = range(sp, sp + 1) if first_p <= sp else range(0)
        calls = [
            peek.call(self.entity_name, p, self._group, first_local if p == first_p else 1, n, session_id)
            for p in parts
        ]
        msgs: list[ServiceBusReceivedMessage] = []
        wanted = dict.fromkeys(parts, n)
        while calls:
            further = []
            for c, reply in zip(calls, self._run_many(protocol.stamped(calls, meta.generation)), strict=True):
                if isinstance(reply, ServiceBusError):
                    continue
                got = peek.parse(reply, self.entity_name, c.partition, self._group)
                msgs += got
                wanted[c.partition] -= len(got)
                resume = peek.resume(reply)
                if resume and wanted[c.partition] > 0:  # a session peek stopped on its scan cap
                    further.append(
                        peek.call(self.entity_name, c.partition, self._group, resume, wanted[c.partition], session_id)
                    )
            calls = further
        msgs.sort(key=lambda m: m.sequence_number)
        return msgs[:n]

    # -- settlement
    def _settle(
        self, name: str, messages: list[ServiceBusReceivedMessage], extra: tuple[Any, ...] = (), transaction: Any = None
    ) -> list[ServiceBusReceivedMessage]:
        """Check the messages (raising before anything is sent), then settle them; concurrent
        settlements of one kind coalesce into one script call per partition. With a transaction,
        the settlement waits for its commit (docs/transactions.md)."""
        self._check_open()
        settlement.settle_groups(messages, self.entity_name, self._group, name)
        if transaction is not None:
            tx = joinable(transaction)
            tx.join_settle(self._context, self, name, messages, *(extra if name == "dead_letter" else ()))
            return []
        if not messages:
            return []
        with instrument.operation("renew_message_lock" if name == "renew" else name, self.entity_name, messages):
            done: list[ServiceBusReceivedMessage] = self._settler.submit((name, extra), messages)
        return done

    def _settle_now(self, key: tuple[str, tuple[Any, ...]], entries: list[list[Any]]) -> list[Any]:
        """Settle entries (each one caller's messages) together; one outcome per entry: the
        messages, the first partition error, or MessageLockLostError naming the lost ones."""
        name, extra = key
        if len(entries) == 1 and len(entries[0]) == 1 and (name == "renew" or not entries[0][0].settled):
            one = self._settle_one(name, extra, entries[0][0])
            return [entries[0]] if not one else self._outcomes(name, entries, one)
        status: dict[int, Any] = {}  # id(message) -> LOCK_LOST or the partition's error; absent: done
        unique: list[ServiceBusReceivedMessage] = entries[0]  # one caller: settle_groups refused repeats
        if len(entries) > 1 or (name != "renew" and any(m.settled for m in unique)):
            # the same message from two callers is sent once; one a batch before this one settled
            # (its caller's checks ran while that batch was at Redis) is not sent again
            unique, sent = [], set[int]()
            for entry in entries:
                for m in entry:
                    if id(m) in sent:
                        continue
                    sent.add(id(m))
                    if m.settled and name != "renew":
                        status[id(m)] = MessageAlreadySettled("The message was settled by a concurrent call.")
                    else:
                        unique.append(m)
        groups = [
            (p, chunk)
            for p, part in (settlement.by_partition(unique) if unique else {}).items()
            for chunk in settlement.chunks(part)
        ]
        script = SETTLE[name]
        cached = self._context.meta.get(self.entity_name)
        gen = cached.generation if cached is not None else ""
        calls = [script.call(self.entity_name, p, self._group, c, *extra) for p, c in groups]
        replies = (
            self._context.transport.run_many(protocol.stamped(calls, gen), self.entity_name) if calls else []
        )
        # locks taken before the entity was deleted and created again are lost with it
        recreated = any(isinstance(r, MessagingEntityNotFoundError) for r in replies) and (
            self._context.recreated(self.entity_name, gen)
        )
        for (_, chunk), reply in zip(groups, replies, strict=True):
            if recreated and isinstance(reply, MessagingEntityNotFoundError):
                for m in chunk:
                    status[id(m)] = LOCK_LOST
                continue
            if isinstance(reply, ServiceBusError):
                for m in chunk:
                    status[id(m)] = reply
                continue
            script.apply(chunk, reply, status)
        if len(entries) == 1 and not status:
            return [entries[0]]
        return self._outcomes(name, entries, status)

    def _settle_one(self, name: str, extra: tuple[Any, ...], m: ServiceBusReceivedMessage) -> dict[int, Any]:
        """_settle_now's work for one caller's one message (complete_message in a loop): its one
        script call made directly, without grouping, chunking or a second Call for the generation
        (about half of _settle_now's own CPU, docs/benchmarks.md "Loops against raw round trips").
        Returns the status _settle_now's outcomes read (empty: done)."""
        script = SETTLE[name]
        cached = self._context.meta.get(self.entity_name)
        gen = cached.generation if cached is not None else ""
        c = protocol.stamp(script.call(self.entity_name, m.partition_id, self._group, [m], *extra), gen)
        [reply] = self._context.transport.run_many([c], self.entity_name)
        status: dict[int, Any] = {}
        if isinstance(reply, ServiceBusError):
            # locks taken before the entity was deleted and created again are lost with it
            recreated = isinstance(reply, MessagingEntityNotFoundError) and (
                self._context.recreated(self.entity_name, gen)
            )
            status[id(m)] = LOCK_LOST if recreated else reply
        else:
            script.apply([m], reply, status)
        return status

    def _outcomes(self, name: str, entries: list[list[Any]], status: dict[int, Any]) -> list[Any]:
        """One outcome per entry from the settlement's status (id(message) -> LOCK_LOST or the
        partition's error; absent: done): the messages, the first error, or a lock-lost error."""
        outcomes: list[Any] = []
        seen: set[int] = set()
        for entry in entries:
            lost = []
            error: ServiceBusError | None = None
            for m in entry:
                st = status.get(id(m))
                if id(m) in seen and name != "renew" and st is None:
                    st = MessageAlreadySettled("The message was settled by a concurrent call.")
                seen.add(id(m))
                if st is LOCK_LOST:
                    lost.append(m)
                elif st is not None:
                    error = error or st
            if error is not None:
                outcomes.append(error)
            elif lost and self._session is not None:
                instrument.lock_lost(self.entity_name, name, len(lost))
                outcomes.append(
                    SessionLockLostError(
                        f"The session lock on '{self.entity_name}' was lost (it elapsed, or another receiver took "
                        f"the session); {len(lost)} message(s) could not be settled.",
                        messages=lost,
                    )
                )
            elif lost:
                instrument.lock_lost(self.entity_name, name, len(lost))
                outcomes.append(
                    MessageLockLostError(
                        f"The lock on {len(lost)} message(s) of '{self.entity_name}' was lost (elapsed, not held "
                        "by this receiver, or the message is gone); nothing was changed for them.",
                        messages=lost,
                    )
                )
            else:
                outcomes.append(entry)
        return outcomes

    def renew_each(self, messages: list[ServiceBusReceivedMessage]) -> list[Any]:
        """Renew many locks at one script call per partition; one outcome per message (for the
        AutoLockRenewer): the message, or the error."""
        if self._closed:
            return [InvalidOperationError("the receiver is closed")] * len(messages)
        if self._session is not None:  # the renewer renews a session receiver's session
            try:
                self._session.renew_lock()
            except ServiceBusError as e:
                return [e] * len(messages)
            return list(messages)
        return self._settle_now(("renew", ()), [[m] for m in messages])

    def complete_message(self, message: ServiceBusReceivedMessage, *, transaction: Any = None) -> None:
        """Remove the message (it was processed).

        Raises:
            MessageLockLostError: the lock elapsed or is not ours; nothing changed.
            MessageAlreadySettled: settled before.
            InvalidOperationError: received in RECEIVE_AND_DELETE mode (a ValueError, as in the SDK).
            InvalidOperationError: the message is from another entity, or was peeked, or breaks a
                rule of `transaction` (the settlement then waits for its commit).
        """
        self._settle("complete", [message], (), transaction)

    def complete_messages(
        self, messages: Iterable[ServiceBusReceivedMessage], *, transaction: Any = None
    ) -> None:
        """Complete many at one script call per partition. Messages whose locks were lost are
        listed in the MessageLockLostError; the others are completed."""
        self._settle("complete", list(messages), (), transaction)

    def abandon_message(
        self, message: ServiceBusReceivedMessage, *, transaction: Any = None, delay: float | None = None
    ) -> None:
        """Release the lock now; the message is available again (delivery_count counts this
        delivery; after max_delivery_count it moves to the dead-letter subqueue).

        `delay` (seconds; an sbredis extension): the message is available again only then, as a
        scheduled message, in the same script call (a retry with backoff; the delivery count
        carries on). Not with a transaction.

        Raises:
            InvalidArgumentError: a bad delay.
            InvalidOperationError: a delay with a transaction.
        """
        self.abandon_messages([message], transaction=transaction, delay=delay)

    def abandon_messages(
        self,
        messages: Iterable[ServiceBusReceivedMessage],
        *,
        transaction: Any = None,
        delay: float | None = None,
    ) -> None:
        """abandon_message for many, at one script call per partition."""
        extra = settlement.abandon_extra(delay)
        if len(extra) > 1 and transaction is not None:
            raise InvalidOperationError("an abandon with a delay cannot join a transaction")
        self._settle("abandon", list(messages), extra, transaction)

    def defer_message(self, message: ServiceBusReceivedMessage, *, transaction: Any = None) -> None:
        """Set the message aside: only receive_deferred_messages(sequence_number) returns it."""
        self._settle("defer", [message], (), transaction)

    def defer_messages(self, messages: Iterable[ServiceBusReceivedMessage], *, transaction: Any = None) -> None:
        self._settle("defer", list(messages), (), transaction)

    def dead_letter_message(
        self,
        message: ServiceBusReceivedMessage,
        reason: str | None = None,
        error_description: str | None = None,
        *,
        transaction: Any = None,
    ) -> None:
        """Move the message to the dead-letter subqueue with `reason` and `error_description`.

        Raises:
            InvalidOperationError: on a dead-letter receiver (the message is dead-lettered already).
            InvalidArgumentError: `reason` or `error_description` is not a str, holds a lone
                surrogate, or is longer than 4096 characters (nothing is settled).
            As complete_message otherwise.
        """
        self.dead_letter_messages([message], reason, error_description, transaction=transaction)

    def dead_letter_messages(
        self,
        messages: Iterable[ServiceBusReceivedMessage],
        reason: str | None = None,
        error_description: str | None = None,
        *,
        transaction: Any = None,
    ) -> None:
        if self._group is not Group.MAIN:
            raise InvalidOperationError("messages in the dead-letter subqueue cannot be dead-lettered again")
        texts = (
            validation.dead_letter_text("reason", reason),
            validation.dead_letter_text("error_description", error_description),
        )
        self._settle("dead_letter", list(messages), texts, transaction)

    def renew_message_lock(
        self, message: ServiceBusReceivedMessage, *, timeout: float | None = None, transaction: Any = None
    ) -> datetime:
        """Extend the lock by the entity's lock duration from now; returns the new locked_until_utc
        (with a transaction: the current one; the renewal happens at commit).

        Raises:
            MessageLockLostError: the lock elapsed or is not ours.
            InvalidOperationError: a session receiver's message (renew the session's lock instead).
        """
        validation.check_timeout(timeout)
        if self._session is not None:
            raise InvalidOperationError("A session message's lock is the session lock: renew receiver.session instead.")
        self._settle("renew", [message], (), transaction)
        return codec.from_ms(message.locked_until_ms)

    # -- lifecycle
    def _check_open(self) -> None:
        if self._closed:  # a ValueError, as the SDK's
            raise InvalidOperationError("the receiver is closed: get a new one from the ServiceBusClient")

    def close(self) -> None:
        """Release messages fetched ahead but never handed out (their delivery is not counted)."""
        if self._closed:
            return
        self._closed = True
        pending = [m for m in self._buffer if m.lock_ref.nonce and not m.settled]
        self._buffer.clear()
        if self._session is not None:
            self._session.release([m.local_seq for m in pending])
        elif pending:
            groups = settlement.settle_groups(pending, self.entity_name, self._group, "abandon")
            calls = [abandon.call(self.entity_name, p, self._group, v, "1") for p, v in groups.items()]
            cached = self._context.meta.get(self.entity_name)
            self._context.transport.run_many(
                protocol.stamped(calls, cached.generation if cached is not None else ""), self.entity_name
            )

    def __enter__(self) -> ServiceBusReceiver:
        self._check_open()
        if self._session is not None:
            self._session.ensure_locked()
        elif (
            self._group == Group.MAIN
            and (self._meta()).sessions
            # read again before refusing: the entity may have been created again without sessions
            and (self._context.entity(self.entity_name, refresh=True)).sessions
        ):
            # as the SDK's receiver fails to open: a session entity's messages need a session receiver
            raise InvalidOperationError(
                f"'{self.entity_name}' requires sessions: pass session_id (or NEXT_AVAILABLE_SESSION) to receive"
            )
        return self

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        sub = "" if self.sub_queue is None else f", sub_queue={self.sub_queue.value!r}"
        if self._session is not None:
            sub += f", session_id={self._session.session_id!r}"
        return f"ServiceBusReceiver(queue={self.entity_name!r}{sub})"
