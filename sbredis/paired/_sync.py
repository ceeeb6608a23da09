# Generated from sbredis/paired/_aio.py by scripts/unasync.py: edit the async source, not this.
"""Paired namespaces, the shell that runs the I/O: send availability through a secondary Redis
(docs/paired-namespaces.md). ``_aio.py`` is the source; scripts/unasync.py writes ``_sync.py``.

``ServiceBusClient(primary_url, paired_namespace=SendAvailabilityPairedNamespaceOptions(...))``
gives the client a PairedNamespace (``client.paired_namespace``). Its senders send to the primary
as usual; a send that fails over (``_core.py``: fails_over) starts the entity's failover
timer, and once ``failover_interval`` passed with no successful send, sends to that entity go to a
backlog queue ``x-servicebus-transfer/<i>`` in the secondary (each sender keeps one picked at random
while it stays in the rotation), carrying their destination and moved properties. A ping task
pings the unavailable entities every ``ping_primary_interval``; the first ping that succeeds sends
every sender of the client back to the primary. The syphon (``start_syphon``) moves the backlog
messages to their destinations: one syphon at a time per backlog queue (a lease), peek-lock,
complete after the primary stored the message.

The client gives its pairing what it uses of it as a ``Primary`` (its transport and entity
lookup), and each of its senders asks ``route()`` once, when made, how to store its sends: an
unpaired client's senders never reach this module. The decisions are in ``_core.py``; the loops
(ping, syphon, fault watch) in ``_background.py`` (asyncio tasks here, threads in the sync shell).
"""

from __future__ import annotations

import logging
import time
import uuid
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .._core import protocol
from .._core.fanout import TopicMeta
from .._core.ops import EntityMeta
from .._core.redact import redact
from .._enums import ServiceBusReceiveMode
from .._message import ServiceBusMessage, ServiceBusReceivedMessage
from .._sync._admin import ServiceBusAdministrationClient
from .._sync._client import ServiceBusClient
from .._sync._forwarder import run_publish
from .._sync._receiver import ServiceBusReceiver
from .._sync._sender import ServiceBusSender
from .._sync._transport import Transport
from ..exceptions import (
    InvalidArgumentError,
    InvalidOperationError,
    MessagingEntityAlreadyExistsError,
    MessagingEntityNotFoundError,
    ServiceBusAuthenticationError,
    ServiceBusAuthorizationError,
    ServiceBusError,
)
from ._background import Background
from ._core import (
    BACKLOG_PROPERTIES,
    FAULT_GRACE,
    LEASE_MARGIN_MS,
    SYPHON_BATCH,
    PairedNamespaceMetrics,
    PairedState,
    SendAvailabilityPairedNamespaceOptions,
    backlog_differences,
    backlog_name,
    fails_over,
    from_backlog,
    lease_call,
    leaves_rotation,
    ping_calls,
    to_backlog,
    undeliverable,
)

log = logging.getLogger("sbredis")
WATCH_INTERVAL = 0.25  # seconds between two looks of the fault watch

# A sender's store: entries (each one caller's messages) in, one outcome per entry out.
Store = Callable[[int, list[list[ServiceBusMessage]]], list[Any]]


@dataclass(frozen=True)
class Primary:
    """What a pairing uses of its (primary) client, handed over by the client when it is made."""

    transport: Transport
    entity: Callable[[str], EntityMeta]  # the client's cached metadata lookup


class _BacklogSender(ServiceBusSender):
    """A sender on a backlog queue: the pairing stores entries through its store_entries and reads
    one outcome per entry (without the coalescing that public sends add)."""


class _BacklogReceiver(ServiceBusReceiver):
    """A peek-lock receiver on a backlog queue: the syphon takes one batch at a time, never waiting."""

    def receive_batch(self, max_count: int) -> list[ServiceBusReceivedMessage]:
        return self._receive_once(max_count)

    def _run_many(
        self, calls: list[protocol.Call], unreachable: dict[int, ServiceBusError] | None = None
    ) -> list[Any]:
        # A backlog queue that cannot be reached raises rather than being skipped and logged: the
        # syphon logs an unreachable secondary once per outage (PairedNamespace._syphon_failed),
        # not once per partition on every pass.
        return super()._run_many(calls, None)


class _Secondary(ServiceBusClient):
    """The pairing's client on the secondary: a plain ServiceBusClient that also lends the pairing
    its transport (leases, close and fault) and makes its backlog senders and receivers."""

    @property
    def transport(self) -> Transport:
        return self._transport

    def backlog_sender(self, index: int) -> _BacklogSender:
        sender = _BacklogSender(self.handler_context, backlog_name(index))
        self._handlers.add(sender)  # closed with the client, as the ones get_queue_sender makes
        return sender

    def backlog_receiver(self, index: int) -> _BacklogReceiver:
        receiver = _BacklogReceiver(
            self.handler_context, backlog_name(index), ServiceBusReceiveMode.PEEK_LOCK, None, None, 0
        )
        self._handlers.add(receiver)
        return receiver


@dataclass(eq=False)
class _Sender:
    """One sender of the paired client: its entity, its own store, and its backlog queue."""

    entity: str
    store: Store
    backlog: int | None = None  # the index it picked (it keeps it while it stays in the rotation)


def _side_state(transport: Transport) -> str:
    if transport.faulted is not None:
        return "faulted"
    return "closed" if transport.closed else "open"


class PairedNamespace:
    """A client's pairing with a secondary namespace (``client.paired_namespace``).

    ``secondary`` is a ServiceBusClient on the secondary (its backlog senders and syphon receivers
    live there); ``metrics`` counts what the pairing did; ``unavailable_entities`` lists the
    entities whose sends go to the backlog queues now.
    """

    def __init__(self, client: ServiceBusClient, options: Any, primary: Primary) -> None:
        if not isinstance(options, SendAvailabilityPairedNamespaceOptions):
            raise InvalidArgumentError("paired_namespace takes a SendAvailabilityPairedNamespaceOptions")
        if primary.transport.url == redact(options.secondary):
            raise InvalidArgumentError("the secondary namespace must not be the primary one")
        self.options = options
        self._client = client
        self._primary = primary
        policy = primary.transport.retry_policy
        # the secondary's clients (and the admin client that makes the backlog queues) retry as the primary's
        self._retry = {
            "retry_total": policy.retry_total,
            "retry_backoff_factor": policy.retry_backoff_factor,
            "retry_backoff_max": policy.retry_backoff_max,
            "retry_mode": policy.retry_mode,
        }
        self.secondary = _Secondary(options.secondary, **self._retry)
        self._admin: ServiceBusAdministrationClient | None = None
        self._state = PairedState(options)
        self._bg = Background()
        # the latest sender made for each entity (the syphon sends through its own ones)
        self._senders: weakref.WeakValueDictionary[str, _Sender] = weakref.WeakValueDictionary()
        self._backlog_ready = False
        self._backlog_senders: dict[int, _BacklogSender] = {}
        # the syphon
        self._syphon = False
        self._holder = uuid.uuid4().hex
        self._lease_ms = int(BACKLOG_PROPERTIES["lock_duration"].total_seconds() * 1000) + LEASE_MARGIN_MS
        self._leases: dict[int, float] = {}  # backlog index -> when to renew its lease (monotonic)
        self._receivers: dict[int, _BacklogReceiver] = {}
        self._primary_senders: dict[str, tuple[ServiceBusSender, Store]] = {}
        self._lone_since: float | None = None
        # the syphon's passes that could not reach the secondary, since the first (None: it can)
        self._unreached: int | None = None
        # the syphon's deliveries that could not reach the primary, since the first (None: they can)
        self._undelivered: int | None = None

    # -- what a user sees
    @property
    def metrics(self) -> PairedNamespaceMetrics:
        """A snapshot of the counters (see PairedNamespaceMetrics)."""
        return self._state.metrics.snapshot()

    @property
    def unavailable_entities(self) -> list[str]:
        """The entities whose sends go to the backlog queues now."""
        return self._state.unavailable

    @property
    def primary_state(self) -> str:
        """'open', 'closed' or 'faulted'."""
        return _side_state(self._primary.transport)

    @property
    def secondary_state(self) -> str:
        return _side_state(self.secondary.transport)

    @property
    def syphon_running(self) -> bool:
        return self._bg.running("syphon")

    # -- backlog queues
    def _admin_client(self) -> ServiceBusAdministrationClient:
        if self._admin is None:
            self._admin = ServiceBusAdministrationClient(self.options.secondary, **self._retry)
        return self._admin

    def create_backlog_queues(self) -> None:
        """Create the backlog queues the secondary lacks (the reference's properties). Existing
        ones are used as they are (a warning names properties that differ from the table);
        others (a higher index) are left alone.

        Raises:
            ServiceBusError: the secondary could not be reached or refused the change.
        """
        admin = self._admin_client()
        lock = BACKLOG_PROPERTIES["lock_duration"]
        for i in range(self.options.backlog_queue_count):
            name = backlog_name(i)
            try:
                props = admin.get_queue(name)
            except MessagingEntityNotFoundError:
                try:
                    props = admin.create_queue(name, **BACKLOG_PROPERTIES)
                except MessagingEntityAlreadyExistsError:  # another client made it meanwhile
                    props = admin.get_queue(name)
            diff = backlog_differences(props)
            if diff:
                log.warning("backlog queue %s differs from the backlog properties, used as it is: %s", name, diff)
            lock = max(lock, props.lock_duration)
        self._lease_ms = int(lock.total_seconds() * 1000) + LEASE_MARGIN_MS
        self._backlog_ready = True

    def _backlog_sender(self, index: int) -> _BacklogSender:
        sender = self._backlog_senders.get(index)
        if sender is None:
            sender = self._backlog_senders[index] = self.secondary.backlog_sender(index)
        return sender

    # -- sending
    def route(self, entity: str, store: Store) -> Store:
        """How a sender of the client stores its sends (ServiceBusSender asks once, when made):
        `store` is the sender's own (to the primary); the route sends to a backlog queue instead
        while `entity` is unavailable."""
        sender = self._senders[entity] = _Sender(entity, store)

        def routed(sched_ms: int, entries: list[list[ServiceBusMessage]]) -> list[Any]:
            return self._store(sender, sched_ms, entries)

        return routed

    def _store(self, sender: _Sender, sched_ms: int, entries: list[list[ServiceBusMessage]]) -> list[Any]:
        """Store a sender's entries in the primary, or in a backlog queue when the entity is
        unavailable (or its failover timer ran out with this send). One outcome per entry.
        schedule_messages (sched_ms) returns the primary's sequence numbers: it never fails over."""
        if self.options.enable_syphon and not self._syphon:
            self._start_syphon()
        entity = sender.entity
        if sched_ms == 0 and self._state.diverting(entity, time.monotonic()):
            self._bg.ensure("ping", self._ping_step)
            return self._to_backlog(sender, entries)
        outcomes = sender.store(sched_ms, entries)
        failed = [i for i, o in enumerate(outcomes) if isinstance(o, BaseException) and fails_over(o)]
        if any(not isinstance(o, BaseException) for o in outcomes):
            self._state.primary_succeeded(entity)
        if not failed:
            return outcomes
        before = self._state.metrics.failovers
        if self._state.primary_failed(entity, time.monotonic()) and sched_ms == 0:
            if self._state.metrics.failovers != before:
                log.warning(
                    "sends to %s go to the backlog queues of %s until a ping succeeds: %s",
                    entity,
                    self.secondary.fully_qualified_namespace,
                    outcomes[failed[0]],
                )
            self._bg.ensure("ping", self._ping_step)
            moved = self._to_backlog(sender, [entries[i] for i in failed])
            for i, outcome in zip(failed, moved, strict=True):
                outcomes[i] = outcome
        return outcomes

    def _to_backlog(self, sender: _Sender, entries: list[list[ServiceBusMessage]]) -> list[Any]:
        """Store entries in the sender's backlog queue; a queue whose send fails leaves the
        rotation (for every sender) and the entries go to another, until none is left."""
        if not self._backlog_ready:
            try:
                self.create_backlog_queues()
            except ServiceBusError as e:
                return [e] * len(entries)
        entity = sender.entity
        copies = [[to_backlog(m, entity) for m in entry] for entry in entries]
        outcomes: list[Any] = [None] * len(entries)
        todo = list(range(len(entries)))
        metrics = self._state.metrics
        while todo:
            index = sender.backlog = self._state.pick(sender.backlog)
            replies = self._backlog_sender(index).store_entries(0, [copies[i] for i in todo])
            metrics.backlog_sends += 1
            retry = []
            for i, reply in zip(todo, replies, strict=True):
                outcomes[i] = reply
                if not isinstance(reply, BaseException):
                    metrics.backlog_messages_sent += len(copies[i])
                elif leaves_rotation(reply):
                    retry.append(i)
            if not retry:
                break
            log.warning("backlog queue %s leaves the rotation: %s", backlog_name(index), outcomes[retry[0]])
            if not self._state.drop(index):
                break  # every backlog queue failed: the errors stand (the rotation is full again)
            todo = retry
        return outcomes

    # -- pings
    def _ping_step(self) -> float | None:
        now = time.monotonic()
        for entity in self._state.pings_due(now):
            if self._ping(entity):
                self._state.ping_succeeded(entity)
                log.warning("a ping to %s succeeded: its sends go to the primary again", entity)
        return self._state.next_ping_in(time.monotonic())

    def _ping(self, entity: str) -> bool:
        """Whether the primary takes sends to `entity` again (ping_calls: nothing is stored)."""
        metrics = self._state.metrics
        transport = self._primary.transport
        try:
            meta = self._primary.entity(entity)
        except ServiceBusError as e:
            metrics.ping_failures += 1
            return not fails_over(e)
        calls = ping_calls(meta)
        metrics.pings += len(calls)
        if isinstance(meta, TopicMeta):
            replies = run_publish(transport, meta, calls)
        else:
            replies = transport.run_many(calls, entity, retry="none")
        if any(isinstance(r, BaseException) and fails_over(r) for r in replies):
            metrics.ping_failures += 1
            return False
        return True

    # -- the syphon
    def start_syphon(self, *, wait_for_secondary: bool = False) -> None:
        """Create the backlog queues the secondary lacks, then move backlog messages to their
        destinations in the background until the client closes. With `wait_for_secondary`, a
        secondary that cannot be reached yet is logged and the syphon keeps trying.

        Raises:
            ServiceBusError: the secondary could not be reached (without `wait_for_secondary`).
        """
        try:
            self.create_backlog_queues()
        except ServiceBusError as e:
            if not wait_for_secondary:
                raise
            log.warning("the backlog queues could not be set up yet: %s", e)
            if fails_over(e):
                self._unreached = 0  # said just now: the syphon's passes need not say it again
        self._start_syphon()

    def _start_syphon(self) -> None:
        self._syphon = True
        self._bg.ensure("syphon", self._syphon_step)
        self._bg.ensure("fault-watch", self._watch_step)

    def _syphon_step(self) -> float | None:
        poll = self.options.syphon_poll_interval.total_seconds()
        if self.primary_state != "open" or self.secondary_state != "open":
            return None
        if not self._backlog_ready:
            try:
                self.create_backlog_queues()
            except ServiceBusError as e:
                self._syphon_passed(self._syphon_failed(e, "could not set up the backlog queues"))
                return poll
        busy = unreached = False
        for i in range(self.options.backlog_queue_count):
            try:
                busy = self._syphon_queue(i) or busy
            except ServiceBusError as e:
                self._leases.pop(i, None)
                unreached = self._syphon_failed(e, f"could not work on {backlog_name(i)}") or unreached
        self._syphon_passed(unreached)
        return 0.0 if busy else poll

    def _syphon_failed(self, e: ServiceBusError, what: str) -> bool:
        """Log a failed syphon call to the secondary, unless it could not reach the secondary
        (fails_over) while that is known already; returns whether it could not."""
        self._note_error(e, self.secondary.transport)
        if not fails_over(e):
            log.warning("the syphon %s: %s", what, e)
            return False
        if self._unreached is None:
            log.warning("the syphon %s: %s; it cannot reach the secondary and keeps trying", what, e)
            self._unreached = 0
        return True

    def _syphon_passed(self, unreached: bool) -> None:
        """Count the syphon's passes that could not reach the secondary: an outage is logged once
        when it starts (_syphon_failed) and once when a pass reaches the secondary again, not on
        every pass in between."""
        if unreached and self._unreached is not None:
            self._unreached += 1
        elif self._unreached is not None:
            log.warning("the syphon reaches the secondary again, after %d failed passes", self._unreached)
            self._unreached = None

    def _delivered(self, destination: str, failure: ServiceBusError | None) -> None:
        """Log a failed delivery to the primary; while the primary cannot be reached (fails_over),
        once when that starts and once when a delivery gets through again, not on every pass in
        between (the backlog messages wait meanwhile, as the secondary's outage is logged)."""
        if failure is not None and fails_over(failure):
            if self._undelivered is None:
                log.warning(
                    "the syphon could not deliver to %s: %s; it cannot reach the primary and keeps trying",
                    destination,
                    failure,
                )
                self._undelivered = 0
            self._undelivered += 1
            return
        if self._undelivered is not None:
            log.warning("the syphon delivers to the primary again, after %d failed deliveries", self._undelivered)
            self._undelivered = None
        if failure is not None:
            log.warning("the syphon could not deliver to %s: %s", destination, failure)

    def _hold_lease(self, index: int) -> bool:
        """Take or keep the lease of a backlog queue (renewed at half its length)."""
        now = time.monotonic()
        renew_at = self._leases.get(index)
        if renew_at is not None and now < renew_at:
            return True
        name = backlog_name(index)
        reply = self.secondary.transport.run(lease_call(name, self._holder, self._lease_ms), name)
        self._state.metrics.lease_calls += 1
        if int(reply) == 1:
            self._leases[index] = now + self._lease_ms / 2000
            return True
        self._leases.pop(index, None)
        return False

    def _syphon_queue(self, index: int) -> bool:
        """Move one batch of a backlog queue; returns whether all of it moved (more may wait)."""
        if not self._hold_lease(index):
            return False
        receiver = self._receivers.get(index)
        if receiver is None:
            receiver = self._receivers[index] = self.secondary.backlog_receiver(index)
        metrics = self._state.metrics
        got = receiver.receive_batch(SYPHON_BATCH)
        metrics.backlog_receives += 1
        metrics.backlog_messages_received += len(got)
        if not got:
            return False
        by_destination: dict[str, list[tuple[ServiceBusReceivedMessage, ServiceBusMessage]]] = {}
        bad: list[tuple[ServiceBusReceivedMessage, BaseException]] = []
        for m in got:
            try:
                destination, original = from_backlog(m)
            except ServiceBusError as e:
                bad.append((m, e))
                continue
            by_destination.setdefault(destination, []).append((m, original))
        done: list[ServiceBusReceivedMessage] = []
        retry: list[ServiceBusReceivedMessage] = []
        for destination, pairs in by_destination.items():
            try:
                store = self._primary_store(destination)
                outcomes = store(0, [[original] for _, original in pairs])
                metrics.siphon_sends += 1
            except ServiceBusError as e:
                outcomes = [e] * len(pairs)
            for (m, _), outcome in zip(pairs, outcomes, strict=True):
                if not isinstance(outcome, BaseException):
                    done.append(m)
                elif undeliverable(outcome):
                    bad.append((m, outcome))
                else:
                    retry.append(m)
            failure = next((o for o in outcomes if isinstance(o, ServiceBusError)), None)
            if failure is not None:
                self._note_error(failure, self._primary.transport)
            self._delivered(destination, failure)
        metrics.siphon_messages_sent += len(done)
        self._settle(receiver, "complete", done)
        for m, error in bad:
            metrics.siphon_dead_lettered += 1
            self._settle(receiver, "dead_letter", [m], type(error).__name__, str(error)[:1024])
        self._settle(receiver, "abandon", retry)
        return not retry and len(got) >= SYPHON_BATCH

    def _settle(
        self, receiver: ServiceBusReceiver, how: str, messages: list[ServiceBusReceivedMessage], *reason: str
    ) -> None:
        """Settle backlog messages; a failure is logged (an unsettled message is moved again
        after its lock elapses, and dropped by duplicate detection when the destination has it)."""
        if not messages:
            return
        self._state.metrics.backlog_settlements += 1
        try:
            if how == "complete":
                receiver.complete_messages(messages)
            elif how == "abandon":
                receiver.abandon_messages(messages)
            else:
                receiver.dead_letter_messages(messages, *reason)
        except ServiceBusError as e:
            log.warning("the syphon could not %s %d backlog message(s): %s", how, len(messages), e)

    def _primary_store(self, destination: str) -> Store:
        """The own store of a primary sender the syphon made for `destination`: the syphon's
        sends go to the primary even while the entity is unavailable (never back to a backlog)."""
        made = self._primary_senders.get(destination)
        if made is None:
            meta = self._primary.entity(destination)
            sender: ServiceBusSender
            if meta.kind == "topic":
                sender = self._client.get_topic_sender(destination)
            elif meta.kind == "queue":
                sender = self._client.get_queue_sender(destination)
            else:
                raise InvalidOperationError(f"'{destination}' is a {meta.kind}: messages cannot be sent to it")
            # the sender asked route() for its route just now, handing over its own store
            made = self._primary_senders[destination] = (sender, self._senders[destination].store)
        return made[1]

    # -- close and fault coordination
    def _note_error(self, e: ServiceBusError, transport: Transport) -> None:
        """Credentials refused (authentication, ACL) fault that side: no retry can fix them."""
        if isinstance(e, (ServiceBusAuthenticationError, ServiceBusAuthorizationError)) and transport.faulted is None:
            log.warning("the %s side of the paired namespace faulted: %s", self._side_name(transport), e)
            transport.fault(e)

    def _side_name(self, transport: Transport) -> str:
        return "primary" if transport is self._primary.transport else "secondary"

    def _watch_step(self) -> float | None:
        """When one side is closed or faulted and the other stays open FAULT_GRACE seconds, fault the other."""
        primary, secondary = self.primary_state, self.secondary_state
        if primary == "open" and secondary == "open":
            self._lone_since = None
            return WATCH_INTERVAL
        if primary != "open" and secondary != "open":
            return None
        now = time.monotonic()
        if self._lone_since is None:
            self._lone_since = now
        if now - self._lone_since < FAULT_GRACE:
            return WATCH_INTERVAL
        gone, state, other = (
            ("secondary", secondary, self._primary.transport)
            if primary == "open"
            else ("primary", primary, self.secondary.transport)
        )
        error = ServiceBusError(
            f"The {gone} side of the paired namespace is {state} and this side was not closed within "
            f"{FAULT_GRACE:g} s: the syphon put it in the faulted state."
        )
        log.warning("%s", error.message)
        other.fault(error)
        return None

    def close(self) -> None:
        """Stop the loops, give up the syphon's leases, close the secondary side."""
        self._bg.stop()
        for index in list(self._leases):
            name = backlog_name(index)
            try:
                self.secondary.transport.run(lease_call(name, self._holder, 0), name)
            except ServiceBusError:
                pass  # it runs out by itself
        self._leases.clear()
        self.secondary.close()
        if self._admin is not None:
            self._admin.close()

    def __repr__(self) -> str:
        return f"PairedNamespace(secondary={self.secondary.fully_qualified_namespace})"
