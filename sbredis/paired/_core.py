"""Paired namespaces, sans-IO: options, the failover state machine, backlog rotation, property moves.

The shells (``_aio.py`` and its generated sync twin ``_sync.py``) run the I/O; everything that
decides lives here, with time passed in as ``time.monotonic()`` readings (docs/paired-namespaces.md).

State per client (the sync shell's threads share it: every method reads copies of the containers):

* per entity: ``failing_since`` (when the first send failure that fails over was seen with no
  successful send since), ``unavailable`` (sends go to a backlog queue) and ``next_ping``;
* the rotation: the backlog queue indexes that sends may use. Each sender keeps the index it
  picked at random until that queue leaves the rotation; when the last one leaves, the rotation
  is refilled (the next send tries them all again, rather than the client failing forever).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, fields, replace
from datetime import datetime, timedelta
from typing import Any

from .._core import fanout, ops, scripts
from .._core.entity import TIMESPAN_MAX, QueueProperties
from .._core.keys import entity_keys
from .._message import ServiceBusMessage, duration_ms
from ..exceptions import (
    InvalidArgumentError,
    InvalidOperationError,
    MessageSizeExceededError,
    MessagingEntityDisabledError,
    MessagingEntityNotFoundError,
    OperationTimeoutError,
    ServiceBusConnectionError,
    ServiceBusQuotaExceededError,
    ServiceBusServerBusyError,
)

BACKLOG_PREFIX = "x-servicebus-transfer/"
# The reference's ping is an empty message of this content type with a 1-second TTL; sbredis
# pings with an empty send batch instead (ping_calls), so no ping message ever exists.
PING_CONTENT_TYPE = "application/vnd.ms-servicebus-ping"
# Application properties a message carries while it waits in a backlog queue.
PATH = "x-ms-path"  # its destination (queue or topic) in the primary
SESSION_ID = "x-ms-sessionid"
TIME_TO_LIVE = "x-ms-timetolive"
# The reference names this one x-ms-path too, which would overwrite the destination.
SCHEDULED_ENQUEUE_TIME = "x-ms-scheduledenqueuetimeutc"
MOVED = (PATH, SESSION_ID, TIME_TO_LIVE, SCHEDULED_ENQUEUE_TIME)

# A backlog queue's properties (the reference's table); every other one is the QueueProperties default.
BACKLOG_PROPERTIES: dict[str, Any] = {
    "max_size_in_megabytes": 5120,
    "max_delivery_count": 2**31 - 1,
    "default_message_time_to_live": TIMESPAN_MAX,
    "auto_delete_on_idle": TIMESPAN_MAX,
    "lock_duration": timedelta(minutes=1),
    "dead_lettering_on_message_expiration": True,
    "enable_batched_operations": True,
}
FAULT_GRACE = 5.0  # seconds one side of a syphon-hosting client may stay open after the other closed or faulted
SYPHON_BATCH = 100  # messages a syphon takes from a backlog queue at a time
LEASE_MARGIN_MS = 5000  # a syphon lease outlasts the backlog queue's lock duration by this much


def backlog_name(index: int) -> str:
    return f"{BACKLOG_PREFIX}{index}"


def _interval(name: str, value: Any, zero_ok: bool = False) -> timedelta:
    if zero_ok and not isinstance(value, bool) and value in (0, timedelta(0)):
        return timedelta(0)
    try:
        return timedelta(milliseconds=duration_ms(name, value))
    except OverflowError:
        raise InvalidArgumentError(f"{name} must be at most {timedelta.max}") from None


@dataclass(frozen=True)
class SendAvailabilityPairedNamespaceOptions:
    """How a client pairs its (primary) Redis with a secondary one, as the .NET SDK's options.

    secondary: the secondary's URL (any URL ServiceBusClient takes; not the primary's).
    backlog_queue_count: backlog queues ``x-servicebus-transfer/0 .. n-1`` in the secondary.
    failover_interval: how long sends to an entity may fail (with an error that fails over)
        without one succeeding before they go to a backlog queue (0: at the first such failure).
    ping_primary_interval: how often an unavailable entity is pinged.
    enable_syphon: run the syphon in this client (it starts with the first send, or call
        ``start_syphon()``); at least one process must run one.
    syphon_poll_interval: how often an idle syphon looks at the backlog queues (sbredis only: Redis
        has no 15-minute long poll; each look costs one receive script call per backlog queue).

    Durations are timedelta or seconds.

    Raises:
        InvalidArgumentError: a value of the wrong type or out of range.
    """

    secondary: str
    backlog_queue_count: int = 10
    failover_interval: timedelta = timedelta(minutes=1)
    ping_primary_interval: timedelta = timedelta(minutes=1)
    enable_syphon: bool = False
    syphon_poll_interval: timedelta = timedelta(seconds=1)

    def __post_init__(self) -> None:
        if not isinstance(self.secondary, str) or "://" not in self.secondary:
            raise InvalidArgumentError("secondary must be a connection string (redis://host:port/db)")
        n = self.backlog_queue_count
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 1000:
            raise InvalidArgumentError("backlog_queue_count must be an int between 1 and 1000")
        if not isinstance(self.enable_syphon, bool):
            raise InvalidArgumentError("enable_syphon must be a bool")
        for name in ("failover_interval", "ping_primary_interval", "syphon_poll_interval"):
            value = _interval(name, getattr(self, name), zero_ok=name == "failover_interval")
            object.__setattr__(self, name, value)


@dataclass
class PairedNamespaceMetrics:
    """What the pairing did (each costs Redis work; docs/paired-namespaces.md lists the costs).

    A "call" is one script call (one round trip's share); messages are counted separately.
    """

    failovers: int = 0  # an entity's sends switched to the backlog queues
    failbacks: int = 0  # a ping succeeded: the entity's sends went back to the primary
    backlog_sends: int = 0  # send operations on a backlog queue (the secondary)
    backlog_messages_sent: int = 0
    backlog_send_failures: int = 0  # a backlog queue left the rotation
    pings: int = 0  # ping script calls (one per partition of a pinged entity)
    ping_failures: int = 0
    backlog_receives: int = 0  # syphon receive calls on a backlog queue
    backlog_messages_received: int = 0
    backlog_settlements: int = 0  # complete / abandon / dead-letter calls on a backlog queue
    # these three keep the reference's spelling: public names, and the keys of as_dict() (sbredis syphon --json)
    siphon_sends: int = 0  # syphon send operations on the primary
    siphon_messages_sent: int = 0  # messages the syphon delivered to their destinations
    siphon_dead_lettered: int = 0  # backlog messages that cannot be delivered (backlog dead-letter subqueue)
    lease_calls: int = 0  # syphon lease script calls on the secondary

    def snapshot(self) -> PairedNamespaceMetrics:
        return replace(self)

    def as_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


# ------------------------------------------------------------------------------ errors
def fails_over(e: BaseException) -> bool:
    """Whether a send error (after the retry policy gave up) counts toward failover: the primary
    could not take the send (unreachable, timed out, busy or loading, read-only, out of memory).
    The caller's own errors (validation, size, entity missing or disabled, entity full,
    credentials) never fail over."""
    if isinstance(e, (ServiceBusConnectionError, OperationTimeoutError, ServiceBusServerBusyError)):
        return True
    # Redis out of memory carries the redis-py error class; an entity at max size does not
    return isinstance(e, ServiceBusQuotaExceededError) and e.error is not None


def leaves_rotation(e: BaseException) -> bool:
    """Whether a failed send to a backlog queue takes that queue out of the rotation."""
    return fails_over(e) or isinstance(
        e, (MessagingEntityNotFoundError, MessagingEntityDisabledError, ServiceBusQuotaExceededError)
    )


def undeliverable(e: BaseException) -> bool:
    """Whether a syphon delivery error is permanent (the backlog message is dead-lettered):
    the destination does not exist or cannot take this message. Other errors are retried."""
    return isinstance(e, (MessagingEntityNotFoundError, InvalidOperationError, MessageSizeExceededError))


# ------------------------------------------------------------------------------ state machine
@dataclass
class EntityState:
    failing_since: float | None = None
    unavailable: bool = False
    next_ping: float = 0.0


@dataclass
class PairedState:
    """The failover timers, the unavailable entities and the backlog rotation of one client."""

    options: SendAvailabilityPairedNamespaceOptions
    rng: random.Random = field(default_factory=random.Random)
    entities: dict[str, EntityState] = field(default_factory=dict)
    metrics: PairedNamespaceMetrics = field(default_factory=PairedNamespaceMetrics)
    rotation: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.rotation = list(range(self.options.backlog_queue_count))

    # -- the primary
    def diverting(self, entity: str, now: float) -> bool:
        """Whether a send to `entity` goes to a backlog queue now (the failover timer may expire here)."""
        st = self.entities.get(entity)
        if st is None:
            return False
        elapsed = None if st.failing_since is None else now - st.failing_since
        if not st.unavailable and elapsed is not None and elapsed >= self.options.failover_interval.total_seconds():
            self._fail_over(st, now)
        return st.unavailable

    def primary_succeeded(self, entity: str) -> None:
        st = self.entities.get(entity)
        if st is not None and not st.unavailable:
            st.failing_since = None

    def primary_failed(self, entity: str, now: float) -> bool:
        """A send to `entity` failed with an error that fails over: start the timer, or fail over
        when it ran out. Returns whether the failed send goes to a backlog queue."""
        st = self.entities.setdefault(entity, EntityState())
        if st.failing_since is None:
            st.failing_since = now
        return self.diverting(entity, now)

    def _fail_over(self, st: EntityState, now: float) -> None:
        st.unavailable = True
        st.next_ping = now + self.options.ping_primary_interval.total_seconds()
        self.metrics.failovers += 1

    @property
    def unavailable(self) -> list[str]:
        return sorted(name for name, st in list(self.entities.items()) if st.unavailable)

    # -- pings
    def pings_due(self, now: float) -> list[str]:
        """The unavailable entities to ping now (their next ping is then one interval away)."""
        due = [(name, st) for name, st in list(self.entities.items()) if st.unavailable and st.next_ping <= now]
        for _, st in due:
            st.next_ping = now + self.options.ping_primary_interval.total_seconds()
        return [name for name, _ in due]

    def next_ping_in(self, now: float) -> float | None:
        """Seconds until the next ping is due; None when no entity is unavailable (the ping task ends)."""
        waits = [max(0.0, st.next_ping - now) for st in list(self.entities.values()) if st.unavailable]
        return min(waits) if waits else None

    def ping_succeeded(self, entity: str) -> None:
        """Every sender of the client sends to the primary again."""
        st = self.entities.pop(entity, None)
        if st is not None and st.unavailable:
            self.metrics.failbacks += 1

    # -- the rotation
    def pick(self, current: int | None) -> int:
        """A sender's backlog queue: the one it picked while that stays in the rotation, else a
        random one of the rotation."""
        if current is not None and current in self.rotation:
            return current
        rotation = list(self.rotation)  # the sync shell's threads share it
        if not rotation:
            rotation = self.rotation = list(range(self.options.backlog_queue_count))
        return self.rng.choice(rotation)

    def drop(self, index: int) -> bool:
        """Take a backlog queue out of the rotation (for every sender); returns False when it was
        the last one (the rotation is refilled for later sends)."""
        if index in self.rotation:
            self.rotation.remove(index)
            self.metrics.backlog_send_failures += 1
        if not self.rotation:
            self.rotation = list(range(self.options.backlog_queue_count))
            return False
        return True


# ------------------------------------------------------------------------------ backlog queues
def backlog_differences(p: QueueProperties) -> list[str]:
    """The properties of an existing backlog queue that differ from the table."""
    return [
        f"{name}={getattr(p, name)!r} (expected {want!r})"
        for name, want in BACKLOG_PROPERTIES.items()
        if getattr(p, name) != want
    ]


def lease_call(backlog: str, holder: str, lease_ms: int) -> ops.Call:
    """The syphon lease of a backlog queue (on its partition 0); lease_ms 0 releases it."""
    return ops.Call(scripts.load("syphon_lease"), entity_keys(backlog, 0), (holder, lease_ms), 0)


def ping_calls(meta: ops.EntityMeta) -> list[ops.Call]:
    """A ping: an empty send batch on every partition of the entity. It runs the send script's
    checks (the node answers and takes writes, the entity exists and accepts sends) and stores
    nothing, so no receiver, peek or dead-letter subqueue can ever see a ping."""
    if isinstance(meta, fanout.TopicMeta):
        return [
            fanout.publish_call(meta.name, p, meta.subs.get(p) or fanout.TopicSubs(), "", [])
            for p in range(meta.partition_count)
        ]
    return [ops.call("send", meta.name, p, 0, 1) for p in range(meta.partition_count)]


# ------------------------------------------------------------------------------ property moves
def _copy(
    m: ServiceBusMessage,
    props: dict[str | bytes, Any],
    session_id: str | None = None,
    time_to_live: timedelta | None = None,
    scheduled_enqueue_time_utc: datetime | None = None,
) -> ServiceBusMessage:
    """A message to send with m's body, message id and header properties, with `props` as its
    application properties and the three movable properties as given."""
    partition_key = m.partition_key
    return ServiceBusMessage(
        m.body_bytes,
        application_properties=props or None,
        message_id=m.message_id,
        session_id=session_id,
        # the getter falls back to the session id; an explicit key always equals it when both are set
        partition_key=None if partition_key == m.session_id else partition_key,
        content_type=m.content_type,
        correlation_id=m.correlation_id,
        subject=m.subject,
        to=m.to,
        reply_to=m.reply_to,
        reply_to_session_id=m.reply_to_session_id,
        time_to_live=time_to_live,
        scheduled_enqueue_time_utc=scheduled_enqueue_time_utc,
    )


def to_backlog(m: ServiceBusMessage, destination: str) -> ServiceBusMessage:
    """The copy of `m` that waits in a backlog queue: session id, time to live and scheduled
    enqueue time move into application properties (so nothing in the backlog queue expires,
    waits for its schedule or needs a session), and ``x-ms-path`` names the destination."""
    props: dict[str | bytes, Any] = {k: v for k, v in (m.sent_application_properties or {}).items()}
    for key in MOVED:
        props.pop(key, None)
    props[PATH] = destination
    if m.session_id is not None:
        props[SESSION_ID] = m.session_id
    if m.time_to_live:
        props[TIME_TO_LIVE] = m.time_to_live
    if m.scheduled_enqueue_time_utc is not None:
        props[SCHEDULED_ENQUEUE_TIME] = m.scheduled_enqueue_time_utc
    return _copy(m, props)


def from_backlog(m: ServiceBusMessage) -> tuple[str, ServiceBusMessage]:
    """(destination, the message as it was sent) for a message taken from a backlog queue.

    Raises:
        InvalidOperationError: the message carries no destination (not written by a paired sender).
    """
    props: dict[str | bytes, Any] = {k: v for k, v in (m.sent_application_properties or {}).items()}
    destination = props.pop(PATH, None)
    if not isinstance(destination, str) or not destination:
        raise InvalidOperationError(f"a backlog message without a {PATH} property: no destination")
    sid = props.pop(SESSION_ID, None)
    ttl = props.pop(TIME_TO_LIVE, None)
    sched = props.pop(SCHEDULED_ENQUEUE_TIME, None)
    return destination, _copy(
        m,
        props,
        session_id=sid if isinstance(sid, str) else None,
        time_to_live=ttl if isinstance(ttl, timedelta) else None,
        scheduled_enqueue_time_utc=sched if isinstance(sched, datetime) else None,
    )
