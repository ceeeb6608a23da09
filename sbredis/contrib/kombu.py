# mypy: disallow-untyped-calls=False
"""A kombu virtual transport on sbredis queues: ``sbredis.contrib.kombu:Transport``.

Importing this module (or ``sbredis.contrib.celery``) registers the URL scheme ``sbredis``::

    Connection("sbredis://127.0.0.1:6379/0")          # redis:// underneath
    Connection("sbredis+rediss://host:6380/0")        # TLS; also sbredis+unix:///path/redis.sock
    Connection("sbredis://:password@host:6379/0", ssl={"ssl_ca_certs": "ca.pem"})  # TLS (rediss)
    Connection("redis://host:6379/0", transport="sbredis.contrib.kombu:Transport")  # no import needed

Each kombu queue is an sbredis queue (created on declare). The mapping:

* deliver = peek-lock receive; ``ack`` = complete; ``reject(requeue=True)`` / ``requeue`` = abandon;
  ``reject(requeue=False)`` = dead-letter (reason ``transport_options["dead_letter_reason"]``,
  default ``"Rejected"``). A consumer with ``no_ack=True`` receives in RECEIVE_AND_DELETE mode.
* While a message is delivered and not yet acknowledged, its lock is renewed (up to
  ``max_lock_renewal_duration`` seconds, default 3600), so a long task is never handed to a second
  consumer. A consumer that dies stops renewing: the lock elapses, the message is delivered again
  with ``delivery_count`` + 1 (``delivery_info["redelivered"]`` is true), and after the queue's
  ``max_delivery_count`` it is dead-lettered with reason ``MaxDeliveryCountExceeded``.
  ``delivery_info`` also carries ``delivery_count`` (the attempt number, 1 on the first delivery:
  the message's own ``delivery_count`` + 1, since that counts the deliveries before it) and
  ``sequence_number``.
* A message whose ``headers["eta"]`` (Celery's ETA and countdown) is in the future is sent as a
  scheduled message: it appears at its time instead of waiting unacknowledged in a worker.
* ``expiration`` becomes the message's ``time_to_live``; a queue's ``x-message-ttl`` its
  ``default_message_time_to_live``. Priorities are not supported (sbredis has none).
* Unacknowledged messages of a channel that closes are abandoned (delivered again at once).

Consuming does not poll. In an event loop (the transport is ``asynchronous``: Celery's worker runs
it in its hub, as it does kombu's Redis transport, so a prefork worker's main process carries tasks
to and from its children itself) each tick hands out what the queues hold as far as the prefetch
count allows; a channel that found nothing sends an ``XREAD BLOCK`` on a connection of its own,
and its reply (a message sent, the wait's time up) makes the socket readable and the loop tick
again. Acks made in the loop are held while its ticks keep delivering and completed together
(one script call per partition for up to ACK_BATCH of them, at most ACK_DELAY seconds later, at
once when the loop has nothing to deliver): the slot an ack frees is taken by the next receive
first, so a worker at prefetch 1 makes one script call per task on its hot path rather than two.
A worker that dies meanwhile has those tasks delivered again, as if it had died before the acks.
Without an event loop, ``drain_events`` blocks the same way in the calling thread and an ack
completes at once.

Exchanges and fanout: sbredis has no topics yet, so routing stays kombu's (direct, topic and fanout
exchange types), with the binding tables in Redis so every process routes alike: one sorted set
per exchange, ``sbredis:kombu:binding:<prefix><exchange>``, whose members are
``routing_key \\x06\\x16 pattern \\x06\\x16 queue``. A fanout publish sends one copy to the sbredis
queue of every bound queue (the publisher writes them, one send per queue): the equivalent of a
topic with one subscription per bound queue, and durable, acknowledged and dead-lettered like any
other message (unlike pub/sub, where a copy published while a consumer reconnects is lost). A
queue declared with ``x-expires`` (Celery's ``*.celery.pidbox`` and reply queues) gets a leased
binding: the connection that bound it renews the lease from a background thread while it is open
(so a worker busy with a long task keeps it), removes it when it closes, and a publisher routes
nothing to a binding whose lease lapsed: a killed worker's queue stops getting broadcasts
``2 x x-expires`` after its death. A queue declared with ``auto_delete`` and ``x-expires`` (those
same Celery queues) is deleted when the channel that declared it closes, so ``celery inspect``
leaves no reply queue behind (a consumer in another process whose copy was deleted declares it
again on its next poll). Every queue declared with ``x-expires`` (Celery's event queues
``celeryev.*`` too) is created with ``auto_delete_on_idle``, and a connection that declared one
keeps it in use and deletes the namespace's idle queues from its background thread: a killed
process's event, reply and mailbox queues go away after the idle time. Lease times are the
clients' clocks.

Transport options (``transport_options=`` / Celery's ``broker_transport_options``):
``queue_name_prefix`` (prepended to every queue name and binding key), ``queue_properties`` (a dict
of ``create_queue`` keyword arguments for queues this transport creates, e.g. ``lock_duration``,
``max_delivery_count``, ``enable_partitioning``), ``max_lock_renewal_duration`` (seconds),
``dead_letter_reason``, ``max_wait`` (seconds an idle consumer blocks before it looks again on
its own, default 1: it wakes at once for a message sent to its queues, a lock elapsing or a
scheduled message coming due; an abandon in another process is seen within this time),
``prefetch_batch`` (most messages one receive may take for a consumer, default 16),
``auto_delete_on_idle`` (seconds of the queues declared with ``x-expires``; default: x-expires,
at least 300, Service Bus's minimum),
``socket_timeout``, ``reply_poll_time`` (docs/client.md, "Waiting for a reply"), and the clients'
retry policy (the SDK's ``retry_total``, ``retry_backoff_factor``, ``retry_backoff_max``,
``retry_mode``).

kombu queue names that are not valid sbredis names (Celery's ``celery@host.celery.pidbox``) are
mapped to ``<name with invalid characters as '_'>-<crc32 of the name>``.
"""

from __future__ import annotations

import contextlib
import logging
import re
import socket
import threading
import time
import uuid
import zlib
from collections import deque
from datetime import UTC, datetime, timedelta
from queue import Empty
from typing import Any
from urllib.parse import quote

import redis
from kombu.transport import TRANSPORT_ALIASES, virtual
from kombu.transport.base import to_rabbitmq_queue_arguments
from kombu.utils.json import dumps, loads

from sbredis import (
    AutoLockRenewer,
    ServiceBusClient,
    ServiceBusMessage,
    ServiceBusReceivedMessage,
    ServiceBusReceiveMode,
    ServiceBusReceiver,
    ServiceBusSender,
    __version__,
)
from sbredis._core.keys import partition_keys
from sbredis._core.retry import RETRY_OPTIONS
from sbredis._message import PARTITION_SHIFT
from sbredis.exceptions import (
    MessageAlreadySettled,
    MessageLockLostError,
    MessagingEntityAlreadyExistsError,
    MessagingEntityNotFoundError,
    OperationTimeoutError,
    ServiceBusConnectionError,
    ServiceBusError,
    ServiceBusServerBusyError,
)
from sbredis.management import ServiceBusAdministrationClient

log = logging.getLogger("sbredis.contrib.kombu")

SCHEME = "sbredis"
BINDING_KEY = "sbredis:kombu:binding:"
_SEP = "\x06\x16"
_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._\-/]{0,258}[A-Za-z0-9])?$")
_BAD = re.compile(r"[^A-Za-z0-9._\-/]")
_EDGE = re.compile(r"^[^A-Za-z0-9]+|[^A-Za-z0-9]+$")
_FOREVER = float("inf")
LEASE_FACTOR = 2  # a leased binding lapses LEASE_FACTOR x the queue's x-expires after its last renewal
IDLE_MIN = 300.0  # seconds: Service Bus's smallest auto_delete_on_idle
ACK_BATCH = 32  # most acks an event loop's tick holds back (see Channel.basic_ack)
ACK_DELAY = 0.05  # seconds an ack is held back at most (while the loop keeps delivering)
REPLAN = 0.5  # seconds an event loop's wait reuses a plan's log positions (see _Waiter.reusable)


def _wake_keys(entity: str, partition: int) -> tuple[str, str, str, str]:
    """The keys of one partition that tell an idle consumer when to look again: ``st`` (its hash
    field ``seq`` is the last sequence number given out), ``log`` (a stream: a send adds entry
    ``<seq>-0``), ``sched`` and ``locked`` (sorted sets scored by the time a scheduled message
    becomes available and a lock elapses). The one place this module reads sbredis's keyspace
    (sbredis/_core/keys.py)."""
    keys = partition_keys(entity, partition)
    return keys[1], keys[2], keys[8], keys[4]


class _Watchable:
    """A redis-py connection whose socket an event loop can watch: redis-py gives the socket no
    public name (kombu's Redis transport reads the same attribute)."""

    _sock: Any  # redis-py's, set while connected

    def fileno(self) -> int:
        if self._sock is None:
            raise redis.ConnectionError("not connected")
        return int(self._sock.fileno())


class _Connection(_Watchable, redis.Connection):
    pass


class _SSLConnection(_Watchable, redis.SSLConnection):
    pass


class _UnixConnection(_Watchable, redis.UnixDomainSocketConnection):
    pass


_WATCHABLE: dict[type[Any], type[Any]] = {
    redis.Connection: _Connection,
    redis.SSLConnection: _SSLConnection,
    redis.UnixDomainSocketConnection: _UnixConnection,
}


class _Waiter:
    """Blocks an idle consumer until its queues may have a message, without polling.

    A send stores each message as a new entry of a partition's log stream, so ``XREAD BLOCK``
    from the partition's last sequence number returns as soon as anything is sent (nothing
    changes on the send path). What the log does not show (a scheduled message coming due, a
    lock elapsing) bounds the wait by its time, read from ``sched`` and ``locked`` when the wait
    is planned; a message abandoned in this process, or an ack that makes room under the
    prefetch limit, ends the wait with ``CLIENT UNBLOCK``. Abandons in other processes are seen
    within ``max_wait`` seconds.

    The wait has a connection of its own, held for good (not a pool's, whose pipelines would
    take a second connection and make ``CLIENT ID`` name the wrong one). It blocks in two ways:
    block() reads the reply in the calling thread (kombu's drain_events), start() only sends
    the XREAD so that an event loop (Celery's hub) reads it when the socket is readable.
    """

    def __init__(self, url: str, ssl: dict[str, Any], max_wait: float, unblocker: redis.Redis) -> None:
        self.max_wait = max_wait
        self._pool = redis.ConnectionPool.from_url(url, socket_timeout=max_wait + 30, socket_connect_timeout=10, **ssl)
        self._pool.connection_class = _WATCHABLE.get(self._pool.connection_class, self._pool.connection_class)
        self._conn: Any = self._pool.make_connection()
        self._unblocker = unblocker
        self._client_id: int | None = None
        self._blocking = False  # a thread is in block() (or on its way in)
        self._kicked = threading.Event()
        self.pending = False  # start() sent a command whose reply finish() has not read
        self.streams: dict[str, tuple[int, str]] = {}  # the last plan: log -> (position, entity)
        self._planned: tuple[tuple[str, int], ...] = ()
        self._plan_ends = 0.0  # monotonic time the last plan's wait bound ends
        self._plan_stale = 0.0  # monotonic time after which the last plan is not reused

    def _call(self, *commands: tuple[Any, ...]) -> list[Any]:
        conn = self._conn
        try:
            conn.send_packed_command(conn.pack_commands(commands))
            return [conn.read_response() for _ in commands]
        except BaseException:
            conn.disconnect()
            raise

    def plan(self, entities: list[tuple[str, int]]) -> tuple[dict[str, tuple[int, str]], float]:
        """Where each partition's log stands now and how long a wait may last at most: call it,
        look at the queues once more, then block() or start(); a message sent in between is
        then either seen by that look or past the plan's position."""
        commands: list[tuple[Any, ...]] = [("CLIENT", "ID"), ("TIME",)]
        parts = []
        for entity, count in entities:
            for p in range(count):
                st, log, sched, locked = _wake_keys(entity, p)
                parts.append((log, entity))
                commands += [("HGET", st, "seq"), ("ZRANGE", sched, 0, 0, "WITHSCORES")]
                commands.append(("ZRANGE", locked, 0, 0, "WITHSCORES"))
        out = self._call(*commands)
        self._client_id = int(out[0])
        secs, micros = out[1]
        now = int(secs) * 1000 + int(micros) // 1000
        streams: dict[str, tuple[int, str]] = {}  # log -> (position, entity)
        wait = self.max_wait
        for i, (log, entity) in enumerate(parts):
            seq, sched, locked = out[2 + 3 * i : 5 + 3 * i]
            streams[log] = (int(seq or 0), entity)
            for at in (*_scores(sched), *_scores(locked)):
                wait = min(wait, max(0.01, (at - now) / 1000 + 0.005))
        self.streams, self._planned = streams, tuple(entities)
        self._plan_ends = time.monotonic() + wait
        self._plan_stale = time.monotonic() + REPLAN
        return streams, wait

    def reusable(self, entities: list[tuple[str, int]]) -> float:
        """Seconds a wait may last on the last plan's positions (0: plan again). They stay
        right for a wait after an empty receive as long as each is at most the log's head
        when that receive ran: a plan's position was the head then, and seen() and finish()
        move it only to entries that existed. What may go stale is the wait's bound (a message
        scheduled or locked since), so a plan is reused for REPLAN seconds at most: a busy
        consumer plans a few times a second, not once per message."""
        now = time.monotonic()
        if tuple(entities) != self._planned or now >= self._plan_stale:
            return 0.0
        return max(0.0, self._plan_ends - now)

    def seen(self, entity: str, sequence_number: int) -> None:
        """A message of `entity` was received: its log entry exists, the wait may start past it."""
        log = _wake_keys(entity, sequence_number >> PARTITION_SHIFT)[1]
        self._advance(log, sequence_number & ((1 << PARTITION_SHIFT) - 1))

    def _advance(self, log: str, position: int) -> None:
        at = self.streams.get(log)
        if at is not None and position > at[0]:
            self.streams[log] = (position, at[1])

    @staticmethod
    def _xread(streams: dict[str, tuple[int, str]], seconds: float) -> tuple[Any, ...]:
        ms = max(1, int(seconds * 1000))
        return ("XREAD", "COUNT", 1, "BLOCK", ms, "STREAMS", *streams, *(f"{at}-0" for at, _ in streams.values()))

    def block(self, streams: dict[str, tuple[int, str]], seconds: float) -> set[str]:
        """Wait up to `seconds` for an entry past the plan in any of `streams` (none: only for
        a kick); returns the queues whose log grew."""
        self._blocking = True
        try:
            if self._kicked.is_set() or seconds <= 0:
                return set()
            if not streams:
                self._kicked.wait(seconds)
                return set()
            reply: Any = self._call(self._xread(streams, seconds))[0]
            grown = set()
            for log, _ in reply.items() if isinstance(reply, dict) else reply or ():
                grown.add(streams[log.decode() if isinstance(log, bytes) else log][1])
            return grown
        finally:
            self._blocking = False
            self._kicked.clear()

    def start(self, streams: dict[str, tuple[int, str]] | None, seconds: float = 0.0) -> int:
        """Send the wait (or, without streams, a PING that answers at once) and return the
        socket to watch; finish() reads the reply."""
        command = self._xread(streams, seconds) if streams else ("PING",)
        self._kicked.clear()
        self._conn.send_command(*command)
        self.pending = True
        return int(self._conn.fileno())

    def finish(self) -> None:
        """Read the reply of start()'s command (the socket is readable)."""
        self.pending = False
        try:
            reply: Any = self._conn.read_response()
        except BaseException:
            self._conn.disconnect()
            raise
        # an entry the wait returned exists: the next wait starts past it (else it returns at once)
        for log, entries in reply.items() if isinstance(reply, dict) else reply if isinstance(reply, list) else ():
            for entry_id, *_ in entries:
                self._advance(log.decode() if isinstance(log, bytes) else log, int(entry_id.split(b"-")[0]))

    @property
    def kicked(self) -> bool:
        return self._kicked.is_set()

    def cancel(self) -> None:
        """End a wait sent by start() now (its reply, nil, makes the socket readable)."""
        client_id = self._client_id
        if client_id is not None:
            try:
                self._unblocker.client_unblock(client_id)
            except redis.RedisError as e:
                log.debug("CLIENT UNBLOCK failed: %s", e)

    def kick(self) -> None:
        """Make the consumer look again: a thread in block() wakes now; an event loop's wait
        is ended by its next tick (see Transport.on_tick)."""
        self._kicked.set()
        client_id = self._client_id
        if client_id is None:
            return
        # CLIENT UNBLOCK finds nothing when it arrives before the XREAD it races: try again
        # while the consumer is still on its way into the wait.
        for _ in range(50):
            if not self._blocking:
                return
            try:
                if self._unblocker.client_unblock(client_id):
                    return
            except redis.RedisError:
                return
            time.sleep(0.001)

    def reset(self) -> None:
        """Drop the connection (it reconnects on next use)."""
        self.pending = False
        self._conn.disconnect()

    def close(self) -> None:
        self._kicked.set()
        self.pending = False
        self._conn.disconnect()
        self._pool.disconnect()


def _scores(reply: Any) -> list[float]:
    """The scores of a ZRANGE WITHSCORES reply (RESP2: flat member, score; RESP3: pairs)."""
    if not reply:
        return []
    if isinstance(reply[0], list):
        return [float(score) for _, score in reply]
    return [float(score) for score in reply[1::2]]


def register() -> None:
    """Make ``sbredis://`` (and ``sbredis+rediss://``, ``sbredis+unix://``) a kombu URL scheme."""
    TRANSPORT_ALIASES[SCHEME] = "sbredis.contrib.kombu:Transport"


def entity_name(queue: str, prefix: str = "") -> str:
    """The sbredis queue for a kombu queue: the name itself when sbredis accepts it, else the name
    with invalid characters replaced and a CRC-32 of the original appended (stable, readable)."""
    raw = prefix + queue
    if _NAME.fullmatch(raw):
        return raw
    clean = _EDGE.sub("", _BAD.sub("_", raw))[:240] or "q"
    return f"{clean}-{zlib.crc32(raw.encode()):08x}"


def ready_messages(props: Any) -> int:
    """Messages of a queue (its QueueRuntimeProperties) ready to be delivered: not locked,
    deferred or scheduled (kombu's queue size, Flower's queue length)."""
    return sum(
        max(0, p.active_message_count - p.locked_message_count - p.deferred_message_count) for p in props.partitions
    )


def redis_url(conninfo: Any) -> str:
    """The redis://, rediss:// or unix:// URL behind a kombu connection (kombu parsed
    ``sbredis://`` URLs into parts; ``sbredis+rediss://`` and ``sbredis+unix://`` keep theirs)."""
    host = conninfo.hostname or "localhost"
    if "://" in host:
        return str(host)
    auth = ""
    if conninfo.password:
        auth = f"{quote(str(conninfo.userid or ''), safe='')}:{quote(str(conninfo.password), safe='')}@"
    vhost = str(conninfo.virtual_host or "0").strip("/")
    scheme = "rediss" if conninfo.ssl else "redis"
    return f"{scheme}://{auth}{host}:{conninfo.port or 6379}/{vhost if vhost.isdigit() else 0}"


def _ssl_options(conninfo: Any) -> dict[str, Any]:
    """kombu's ``ssl={...}`` (ssl_cert_reqs, ssl_ca_certs, ssl_certfile, ssl_keyfile) for redis-py."""
    ssl = conninfo.ssl
    return {k: v for k, v in ssl.items() if k.startswith("ssl_")} if isinstance(ssl, dict) else {}


def _eta(headers: dict[str, Any]) -> datetime | None:
    """Celery's protocol-2 ETA header as an aware datetime (naive means UTC), if any."""
    raw = headers.get("eta")
    if not raw or not isinstance(raw, str):
        return None
    try:
        eta = datetime.fromisoformat(raw)
    except ValueError:
        return None
    return eta if eta.tzinfo else eta.replace(tzinfo=UTC)


Entry = tuple[ServiceBusReceiver, ServiceBusReceivedMessage]


def _complete(entries: list[Entry], renewer: AutoLockRenewer) -> None:
    """Complete acknowledged messages, one call per receiver (a script call per partition). When
    a complete fails otherwise than on a lost lock (Redis away), their locks are renewed no more:
    they elapse and the messages are delivered again, rather than held for max_lock_renewal_duration."""
    by_receiver: dict[int, tuple[ServiceBusReceiver, list[ServiceBusReceivedMessage]]] = {}
    for receiver, m in entries:
        by_receiver.setdefault(id(receiver), (receiver, []))[1].append(m)
    for receiver, messages in by_receiver.values():
        try:
            if len(messages) == 1:
                receiver.complete_message(messages[0])
            else:
                receiver.complete_messages(messages)
        except MessageLockLostError as e:
            what = repr(messages[0]) if len(messages) == 1 else f"{len(messages)} messages"
            log.warning("ack of %s: the lock was lost; it may be delivered again: %s", what, e)
        except MessageAlreadySettled:
            pass
        except ServiceBusError:
            for m in messages:
                renewer.stop_renewing(m)
            raise


class _Broker:
    """What a kombu connection shares among its channels: clients, senders, receivers, renewer."""

    def __init__(self, url: str, options: dict[str, Any], ssl: dict[str, Any]) -> None:
        timeout = float(options.get("socket_timeout", 30.0))
        self.redis = redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=min(timeout, 10.0), **ssl)
        self.redis.ping()  # fail now (a kombu connection error) rather than on first use
        retry = {k: options[k] for k in (*RETRY_OPTIONS, "reply_poll_time") if k in options}
        self.client = ServiceBusClient.from_connection_string(url, socket_timeout=timeout, **retry, **ssl)
        self.admin = ServiceBusAdministrationClient.from_connection_string(url, socket_timeout=timeout, **retry, **ssl)
        self.renewal_seconds = float(options.get("max_lock_renewal_duration", 3600))
        self.renewer = AutoLockRenewer(
            max_lock_renewal_duration=self.renewal_seconds, on_lock_renew_failure=self._on_renew_failure
        )
        self.senders: dict[str, ServiceBusSender] = {}
        self.receivers: dict[tuple[str, bool], ServiceBusReceiver] = {}
        self.declared: set[str] = set()
        self.lock = threading.Lock()
        self._waiter_args = (url, ssl, float(options.get("max_wait", 1.0)), self.redis)
        self.waiter = self.new_waiter()  # drain_events' (in an event loop each channel has one)
        self.partitions: dict[str, int] = {}
        idle = options.get("auto_delete_on_idle")
        self.idle_seconds = float(idle) if idle else None
        self._idle_sweep = 0.0  # seconds between sweeps for idle queues (0: none declared here yet)
        self._kept: dict[str, ServiceBusReceiver | None] = {}  # auto-delete-on-idle queues declared here
        self.leases: dict[tuple[str, str], int] = {}  # (binding key, member) -> the queue's x-expires (ms)
        self._stop = threading.Event()
        self._nudge = threading.Event()  # a new lease: the background thread plans again
        self._lease_thread: threading.Thread | None = None

    def new_waiter(self) -> _Waiter:
        return _Waiter(*self._waiter_args)

    @staticmethod
    def _on_renew_failure(message: Any, error: Exception | None) -> None:
        log.warning("could not renew the lock of %r (it may be delivered again): %s", message, error)

    def sender(self, entity: str) -> ServiceBusSender:
        s = self.senders.get(entity)
        if s is None:
            s = self.senders[entity] = self.client.get_queue_sender(entity)
        return s

    def receiver(self, entity: str, no_ack: bool) -> ServiceBusReceiver:
        r = self.receivers.get((entity, no_ack))
        if r is None:
            if no_ack:
                r = self.client.get_queue_receiver(entity, receive_mode=ServiceBusReceiveMode.RECEIVE_AND_DELETE)
            else:  # every message it hands out is renewed until settled
                r = self.client.get_queue_receiver(entity, auto_lock_renewer=self.renewer)
            self.receivers[(entity, no_ack)] = r
        return r

    def partition_count(self, entity: str) -> int:
        n = self.partitions.get(entity)
        if n is None:
            n = self.partitions[entity] = self.admin.get_queue(entity).partition_count
        return n

    def forget(self, entity: str) -> None:
        with self.lock:
            kept = self._kept.pop(entity, None)
        if kept is not None:
            kept.close()
        self.partitions.pop(entity, None)
        self.declared.discard(entity)
        self.senders.pop(entity, None)
        for key in [k for k in self.receivers if k[0] == entity]:
            self.receivers.pop(key).close()

    # -- leased bindings (queues with x-expires): kept while this connection is open
    def idle_timeout(self, entity: str, expires_ms: int) -> timedelta:
        """The auto_delete_on_idle of a queue declared with x-expires: the transport option
        ``auto_delete_on_idle`` (seconds) if set, else x-expires but at least IDLE_MIN. Declaring
        one makes this connection sweep: every half idle time (at most a minute) it peeks at the
        idle-deleted queues it declared, so that they stay while it is open even when it does not
        receive (a solo worker busy with a long task), and deletes the namespace's idle queues
        (a dead process's event and reply queues), since sbredis has no server process."""
        seconds = self.idle_seconds or max(expires_ms / 1000, IDLE_MIN)
        with self.lock:
            self._kept.setdefault(entity, None)
            interval = min(max(seconds / 2, 0.5), 60.0)
            self._idle_sweep = min(self._idle_sweep or interval, interval)
            self._start_background()
        return timedelta(seconds=seconds)

    def _start_background(self) -> None:
        if self._lease_thread is None:  # (called with self.lock held)
            t = threading.Thread(target=self._keep_leases, name="sbredis-kombu-leases", daemon=True)
            self._lease_thread = t
            t.start()

    def lease(self, key: str, member: str, expires_ms: int) -> None:
        with self.lock:
            self.leases[(key, member)] = expires_ms
            self._start_background()
        self._nudge.set()
        self.redis.zadd(key, {member: time.time() * 1000 + LEASE_FACTOR * expires_ms})

    def unlease(self, key: str, member: str) -> None:
        with self.lock:
            self.leases.pop((key, member), None)

    def _keep_leases(self) -> None:
        """Renew the leased bindings; delete idle queues (see idle_timeout)."""
        next_sweep: float | None = None
        while True:
            with self.lock:
                leases = dict(self.leases)
                sweep = self._idle_sweep
            shortest = min(leases.values(), default=10_000)
            pause = min(max(shortest / 2000, 0.05), 5.0)
            if sweep:
                if next_sweep is None:
                    next_sweep = time.monotonic() + sweep
                pause = min(pause, max(0.0, next_sweep - time.monotonic()))
            self._nudge.wait(pause)
            self._nudge.clear()
            if self._stop.is_set():
                return
            if leases:
                now = time.time() * 1000
                try:
                    with self.redis.pipeline(transaction=False) as pipe:
                        for (key, member), expires in leases.items():
                            pipe.zadd(key, {member: now + LEASE_FACTOR * expires})
                        pipe.execute()
                except redis.RedisError as e:
                    log.warning("could not renew binding leases: %s", e)
            if sweep and next_sweep is not None and time.monotonic() >= next_sweep:
                next_sweep = time.monotonic() + sweep
                self._keep_queues()
                try:
                    for path in self.admin.delete_idle_entities():
                        log.info("deleted the idle queue %s", path)
                except Exception as e:
                    log.warning("could not delete idle queues: %s", e)

    def _keep_queues(self) -> None:
        """Use (peek at) the idle-deleted queues this connection declared: they are not idle."""
        with self.lock:
            kept = list(self._kept.items())
        for entity, receiver in kept:
            try:
                if receiver is None:
                    receiver = self.client.get_queue_receiver(entity)  # this thread's own
                    with self.lock:
                        if entity not in self._kept:
                            receiver.close()
                            continue
                        self._kept[entity] = receiver
                receiver.peek_messages(1)
            except MessagingEntityNotFoundError:
                pass
            except Exception as e:
                log.warning("could not keep the queue %s from idling: %s", entity, e)

    def close(self) -> None:
        self._stop.set()
        self._nudge.set()
        with self.lock:
            leases, self.leases = self.leases, {}
        try:  # a closing connection takes its expiring (auto-delete) bindings with it
            with self.redis.pipeline(transaction=False) as pipe:
                for key, member in leases:
                    pipe.zrem(key, member)
                pipe.execute()
        except redis.RedisError:
            pass  # they lapse by themselves
        self.renewer.close()
        self.waiter.close()
        for kept in self._kept.values():
            if kept is not None:
                kept.close()
        self._kept.clear()
        for r in self.receivers.values():
            try:
                r.close()
            except Exception:
                log.debug("closing a receiver failed", exc_info=True)
        self.receivers.clear()
        self.senders.clear()
        self.client.close()
        self.admin.close()
        self.redis.close()


class Channel(virtual.Channel):  # type: ignore[misc]
    """A kombu channel whose queues are sbredis queues."""

    supports_fanout = True
    do_restore = True
    dead_letter_reason = "Rejected"
    queue_name_prefix = ""
    queue_properties: dict[str, Any] | None = None
    prefetch_batch = 16
    from_transport_options: tuple[str, ...] = (  # type: ignore[assignment]
        *virtual.Channel.from_transport_options,
        "dead_letter_reason",
        "queue_name_prefix",
        "queue_properties",
        "prefetch_batch",
    )

    def __init__(self, connection: Any, **kwargs: Any) -> None:
        super().__init__(connection, **kwargs)
        self._sb: _Broker = connection.broker()
        self._noack_tags: set[str] = set()
        self._locked: dict[str, tuple[ServiceBusReceiver, ServiceBusReceivedMessage]] = {}
        self._buffers: dict[str, deque[ServiceBusReceivedMessage]] = {}
        self._expires: dict[str, int] = {}  # queue -> x-expires (ms): its bindings are leased
        self._transient: dict[str, dict[str, Any]] = {}  # auto-delete queues with x-expires -> declare args
        self.hub_waiter: _Waiter | None = None  # in an event loop: this channel's wait (see on_tick)
        self._saw_all = False  # the last receive found the channel's only queue empty after it
        self._tick_thread: int | None = None  # the event loop's thread, once it ticked
        self._acks: list[Entry] = []  # see basic_ack
        self._acks_since = 0.0  # monotonic time of the oldest of them

    # -- names
    def _entity(self, queue: str) -> str:
        return entity_name(queue, self.queue_name_prefix)

    def _binding_key(self, exchange: str) -> str:
        return BINDING_KEY + self.queue_name_prefix + exchange

    # -- queues
    def prepare_queue_arguments(self, arguments: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        """Queue(expires=, message_ttl=, ...) as x-expires, x-message-ttl, ... (as for AMQP)."""
        return dict(to_rabbitmq_queue_arguments(arguments, **kwargs))

    def _new_queue(self, queue: str, auto_delete: bool = False, **kwargs: Any) -> None:
        arguments = kwargs.get("arguments") or {}
        expires = arguments.get("x-expires")
        if expires:
            self._expires[queue] = int(expires)
            if auto_delete:
                self._transient[queue] = dict(kwargs, auto_delete=True)
        entity = self._entity(queue)
        if entity in self._sb.declared:
            return
        props = dict(self.queue_properties or {})
        if expires:
            props.setdefault("auto_delete_on_idle", self._sb.idle_timeout(entity, int(expires)))
        ttl = arguments.get("x-message-ttl")
        if ttl:
            props["default_message_time_to_live"] = timedelta(milliseconds=int(ttl))
        try:
            self._sb.admin.create_queue(entity, **props)
        except MessagingEntityAlreadyExistsError:
            pass
        self._sb.declared.add(entity)

    def _has_queue(self, queue: str, **kwargs: Any) -> bool:
        try:
            self._sb.admin.get_queue(self._entity(queue))
        except MessagingEntityNotFoundError:
            return False
        return True

    def _size(self, queue: str) -> int:
        """Messages ready to be delivered (not locked, deferred or scheduled)."""
        try:
            props = self._sb.admin.get_queue_runtime_properties(self._entity(queue))
        except MessagingEntityNotFoundError:
            return 0
        return ready_messages(props)

    def _purge(self, queue: str) -> int:
        entity = self._entity(queue)
        self._buffers.pop(queue, None)
        n = 0
        try:
            with self._sb.client.get_queue_receiver(
                entity, receive_mode=ServiceBusReceiveMode.RECEIVE_AND_DELETE
            ) as receiver:
                while batch := receiver.receive_messages(max_message_count=100, wait=False):
                    n += len(batch)
        except MessagingEntityNotFoundError:
            pass
        return n

    def queue_delete(self, queue: str, if_unused: bool = False, if_empty: bool = False, **kwargs: Any) -> None:
        """Delete the sbredis queue and this queue's bindings (in every process's view)."""
        if if_empty and self._size(queue):
            return
        for exchange, routing_key, args in self.state.queue_bindings(queue):
            self._unbind(exchange, self.typeof(exchange).prepare_bind(queue, exchange, routing_key, args))
        self.state.queue_bindings_delete(queue)
        self._buffers.pop(queue, None)
        entity = self._entity(queue)
        try:
            self._sb.admin.delete_queue(entity)
        except MessagingEntityNotFoundError:
            pass
        self._sb.forget(entity)

    # -- bindings, kept in Redis so that every process routes alike
    def _queue_bind(self, exchange: str, routing_key: str, pattern: str, queue: str) -> None:
        key, member = self._binding_key(exchange), _SEP.join((routing_key or "", pattern or "", queue))
        expires = self._expires.get(queue)
        if expires:
            self._sb.lease(key, member, expires)
        else:
            self._sb.redis.zadd(key, {member: _FOREVER})

    def _unbind(self, exchange: str, meta: tuple[Any, ...]) -> None:
        key, member = self._binding_key(exchange), _SEP.join(str(m or "") for m in meta)
        self._sb.unlease(key, member)
        self._sb.redis.zrem(key, member)

    def queue_unbind(
        self,
        queue: str,
        exchange: str | None = None,
        routing_key: str = "",
        arguments: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        super().queue_unbind(queue, exchange, routing_key, arguments, **kwargs)
        if exchange:
            self._unbind(exchange, self.typeof(exchange).prepare_bind(queue, exchange, routing_key, arguments))

    def get_table(self, exchange: str) -> list[tuple[str, str, str]]:
        """The exchange's live bindings: (routing_key, pattern, queue)."""
        key = self._binding_key(exchange)
        now = time.time() * 1000
        with self._sb.redis.pipeline(transaction=False) as pipe:
            pipe.zremrangebyscore(key, "-inf", f"({now}")
            pipe.zrange(key, 0, -1)
            members = pipe.execute()[1]
        table = []
        for raw in members:
            rk, pattern, queue = raw.decode().split(_SEP, 2)
            table.append((rk, pattern, queue))
        return table

    # -- publish
    def _put(self, queue: str, message: dict[str, Any], **kwargs: Any) -> None:
        entity = self._entity(queue)
        props = message.get("properties") or {}
        headers = message.get("headers") or {}
        msg = ServiceBusMessage(
            dumps(message),
            content_type=message.get("content-type") or None,
            correlation_id=props.get("correlation_id") or None,
            subject=headers.get("task") or None,
        )
        expiration = props.get("expiration")
        if expiration:
            msg.time_to_live = timedelta(milliseconds=max(1, int(float(expiration))))
        eta = _eta(headers)
        for attempt in (1, 2):
            sender = self._sb.sender(entity)
            try:
                if eta is not None and eta > datetime.now(UTC):
                    sender.schedule_messages(msg, eta)
                else:
                    sender.send_messages(msg)
                return
            except MessagingEntityNotFoundError:
                # Published to a queue nobody declared (or that was deleted): create it, as
                # kombu's Redis transport would by pushing to the list.
                if attempt == 2:
                    raise
                self._sb.forget(entity)
                self._new_queue(queue)

    def _put_fanout(self, exchange: str, message: dict[str, Any], routing_key: str, **kwargs: Any) -> None:
        for queue in self.typeof(exchange).lookup(self.get_table(exchange), exchange, routing_key, None):
            self._put(queue, message, **kwargs)

    # -- consume
    def basic_consume(self, queue: str, no_ack: bool, callback: Any, consumer_tag: str, **kwargs: Any) -> Any:
        if no_ack:
            self._noack_tags.add(consumer_tag)
        return super().basic_consume(queue, no_ack, callback, consumer_tag, **kwargs)

    def basic_cancel(self, consumer_tag: str) -> Any:
        queue = self._tag_to_queue.get(consumer_tag)
        self._noack_tags.discard(consumer_tag)
        result = super().basic_cancel(consumer_tag)
        if queue is not None and queue not in self._active_queues:
            self._release(queue)
        return result

    def basic_get(self, queue: str, no_ack: bool = False, **kwargs: Any) -> Any:
        try:
            message = self.Message(self._receive(queue, no_ack), channel=self)
        except Empty:
            return None
        if not no_ack:
            self.qos.append(message, message.delivery_tag)
        return message

    def _get(self, queue: str, timeout: float | None = None) -> dict[str, Any]:
        no_ack = any(self._tag_to_queue.get(t) == queue for t in self._noack_tags)
        return self._receive(queue, no_ack)

    def _receive(self, queue: str, no_ack: bool) -> dict[str, Any]:
        buffered = self._buffers.get(queue)
        if buffered and not no_ack:
            m = buffered.popleft()
            return self._delivered(queue, self._sb.receiver(self._entity(queue), False), m)
        entity = self._entity(queue)
        receiver = self._sb.receiver(entity, no_ack)
        want = 1
        if not no_ack and self._consumers:
            want = max(1, min(self.prefetch_batch, self.qos.can_consume_max_estimate() or 1))
        try:
            got = receiver.receive_messages(max_message_count=want, wait=False)
        except MessagingEntityNotFoundError:
            self._sb.forget(entity)
            if queue in self._transient:  # deleted by another channel that declared it too
                self._new_queue(queue, **self._transient[queue])
            raise Empty() from None
        # fewer than asked of a one-queue, one-partition channel: the queue had no more, and the
        # wait can start without another receive to find it empty (see on_tick)
        self._saw_all = (
            len(got) < want
            and not no_ack
            and len(self._active_queues) == 1
            and self._sb.partitions.get(entity) == 1
            and self.hub_waiter is not None
        )
        if not got:
            raise Empty()
        if no_ack:
            return self._payload(got[0])
        if self.hub_waiter is not None:
            for m in got:
                self.hub_waiter.seen(entity, m.sequence_number)
        if len(got) > 1:
            self._buffers.setdefault(queue, deque()).extend(got[1:])
        return self._delivered(queue, receiver, got[0])

    def _payload(self, m: ServiceBusReceivedMessage) -> dict[str, Any]:
        payload: dict[str, Any] = loads(m.body_bytes or b"")
        props = payload.setdefault("properties", {})
        props["delivery_tag"] = m.lock_token or uuid.uuid4().hex
        info = props.setdefault("delivery_info", {})
        info["redelivered"] = m.delivery_count > 0
        # the attempt number (1 at first); the message's delivery_count counts the ones before it
        info["delivery_count"] = m.delivery_count + 1
        info["sequence_number"] = m.sequence_number
        payload["redelivered"] = m.delivery_count > 0
        return payload

    def _delivered(self, queue: str, receiver: ServiceBusReceiver, m: ServiceBusReceivedMessage) -> dict[str, Any]:
        payload = self._payload(m)
        self._locked[payload["properties"]["delivery_tag"]] = (receiver, m)
        return payload

    def _release(self, queue: str) -> None:
        """Abandon the messages fetched ahead for `queue` and not delivered."""
        buffered = self._buffers.pop(queue, None)
        if buffered:
            try:
                self._sb.receiver(self._entity(queue), False).abandon_messages(list(buffered))
            except Exception as e:
                log.warning("could not release %d prefetched message(s) of %s: %s", len(buffered), queue, e)

    # -- settle
    def basic_ack(self, delivery_tag: str, multiple: bool = False) -> None:
        """Complete the message. In an event loop, an ack made in the loop's thread waits: a tick
        that delivers leaves it for a later one, so that the task it hands out goes to work
        first (a prefork child runs it while the ack is completed), and the acks go together:
        one script call for up to ACK_BATCH of them, made when a tick finds nothing to deliver,
        or when ACK_BATCH acks or ACK_DELAY seconds have gathered. A worker at prefetch 1 then
        makes one round trip per task rather than two. The slot under the prefetch limit frees
        at once. A process that dies in between has its message delivered again, as if it had
        died before the ack."""
        full = not self.qos.can_consume()
        entry = self._locked.pop(delivery_tag, None)
        if entry is not None:
            if self._tick_thread == threading.get_ident():
                if not self._acks:
                    self._acks_since = time.monotonic()
                    self.connection.flush_later(ACK_DELAY)
                self._acks.append(entry)
            else:
                _complete([entry], self._sb.renewer)
        super().basic_ack(delivery_tag)
        if full:  # room under the prefetch limit again: a consumer waiting for it looks now
            self._sb.waiter.kick()

    def flush_acks(self) -> None:
        """Complete the acks the event loop's thread made and has not completed yet."""
        if self._acks:
            acks, self._acks = self._acks, []
            _complete(acks, self._sb.renewer)

    def acks_due(self, early: float = 0.0) -> bool:
        """Whether the acks waiting in this channel go now rather than after the next delivery
        (see basic_ack)."""
        if len(self._acks) >= ACK_BATCH:
            return True
        return bool(self._acks) and time.monotonic() - self._acks_since >= ACK_DELAY - early

    def basic_reject(self, delivery_tag: str, requeue: bool = False) -> None:
        entry = self._locked.pop(delivery_tag, None)
        if entry is not None:
            receiver, m = entry
            try:
                if requeue:
                    receiver.abandon_message(m)
                else:
                    receiver.dead_letter_message(
                        m,
                        reason=self.dead_letter_reason,
                        error_description="rejected without requeue by a kombu consumer",
                    )
            except MessageLockLostError:
                log.warning("reject of %r: the lock was lost; it may be delivered again", m)
            except MessageAlreadySettled:
                pass
        super().basic_reject(delivery_tag, requeue=False)
        self.connection.kick()  # room under the prefetch limit, or the message is back

    def _restore(self, message: Any) -> None:
        """Abandon an unacknowledged message (channel closing, recover): delivered again at once."""
        entry = self._locked.pop(message.delivery_tag, None)
        if entry is not None:
            receiver, m = entry
            try:
                receiver.abandon_message(m)
            except (MessageLockLostError, MessageAlreadySettled):
                pass
            self.connection.kick()

    def deliver_from(self, queue: str, callback: Any) -> None:
        """Take one message of `queue` and hand it to `callback` (kombu's _get_and_deliver, for the
        transport's wait loop)."""
        self._get_and_deliver(queue, callback)

    def waitable(self) -> list[tuple[Channel, str, str, int]]:
        """(this channel, queue, sbredis queue, its partition count) for each queue this channel
        would receive from now."""
        if self.closed or not self._consumers or not self.qos.can_consume():
            return []
        out = []
        for queue in self._active_queues:
            entity = self._entity(queue)
            try:
                out.append((self, queue, entity, self._sb.partition_count(entity)))
            except MessagingEntityNotFoundError:
                pass  # deleted: the next receive declares it again or gives up
        return out

    def on_tick(self, deliver: Any, watch: Any, limit: int) -> int:
        """In an event loop: hand out what this channel's queues hold, up to the prefetch limit
        and at most `limit` messages, and return how many; when it found none, start an XREAD
        BLOCK on this channel's own connection and `watch` its socket. A channel at its
        prefetch limit waits for nothing: an ack comes first, and the next tick looks again;
        the other channels (Celery's pidbox) keep their waits meanwhile. Acks made in the loop
        are completed when due or when the tick delivered nothing (see basic_ack)."""
        self._tick_thread = threading.get_ident()
        if self.acks_due():
            self.flush_acks()
        delivered = self._tick(deliver, watch, limit)
        if not delivered and not (self._consumers and not self.qos.can_consume()):
            self.flush_acks()  # (at the prefetch limit they wait for the next delivery, or ACK_DELAY)
        return delivered

    def _tick(self, deliver: Any, watch: Any, limit: int) -> int:
        waiter = self.hub_waiter
        if waiter is None:
            if self.closed or not self._consumers:
                return 0
            waiter = self.hub_waiter = self._sb.new_waiter()
        if waiter.pending:
            if waiter.kicked:  # a message came back (abandoned here): look again now
                waiter.cancel()
            return 0
        delivered = 0
        self._saw_all = False
        while delivered < limit and not self._dry():
            try:
                self.drain_events(callback=deliver)
            except Empty:
                break
            delivered += 1
        if delivered and not self._dry():  # the next tick (at once, see Transport.on_tick) looks again
            return delivered
        targets = self.waitable()
        if not targets:  # at the prefetch limit: the acks wait for the next delivery (or ACK_DELAY)
            return delivered
        self.flush_acks()  # before a wait (nothing else to do first)
        entities = [(entity, count) for _, _, entity, count in targets]
        left = waiter.reusable(entities)
        if left > 0.005:
            watch(self, waiter.start(waiter.streams, left))
            return delivered
        if delivered:  # a new plan needs a look after it: the next tick's
            return delivered
        streams, wait = waiter.plan(entities)
        try:  # again: what was sent before plan() is here, what comes after ends the wait
            self.drain_events(callback=deliver)
        except Empty:
            watch(self, waiter.start(streams, wait))
            return 0
        return 1

    def _dry(self) -> bool:
        return self._saw_all and not any(self._buffers.values())

    def _restore_at_beginning(self, message: Any) -> None:
        self._restore(message)

    def close(self) -> None:
        """Release prefetched messages, delete the transient queues this channel declared
        (auto-delete with x-expires: Celery's pidbox, reply and event queues), close."""
        if not self.closed:
            self.flush_acks()
            for queue in list(self._buffers):
                self._release(queue)
            for queue in list(self._transient):
                try:
                    self.queue_delete(queue)
                except Exception as e:
                    log.warning("could not delete the transient queue %s: %s", queue, e)
            self._transient.clear()
            if self.hub_waiter is not None:
                self.connection.unwatch(self)
                self.hub_waiter.close()
        super().close()


_Channel = Channel  # (inside Transport, "Channel" is its class attribute)


class Transport(virtual.Transport):  # type: ignore[misc]
    """kombu transport on sbredis (see the module docstring)."""

    Channel = Channel

    polling_interval: float | None = None  # type: ignore[assignment]  # an idle consumer blocks (see _Waiter): drain_events never sleeps
    can_parse_url = False  # kombu parses sbredis:// URLs as it does redis:// ones
    default_port = 6379  # type: ignore[assignment]
    driver_type = "sbredis"
    driver_name = "sbredis"

    implements = virtual.Transport.implements.extend(
        asynchronous=True,
        exchange_type=frozenset(["direct", "topic", "fanout"]),
        heartbeats=False,
    )

    connection_errors: tuple[type[BaseException], ...] = (  # type: ignore[assignment]
        *virtual.Transport.connection_errors,
        ServiceBusConnectionError,
        OperationTimeoutError,
        ServiceBusServerBusyError,
        redis.ConnectionError,
        redis.TimeoutError,
        socket.error,
    )

    #: most messages one tick of an event loop hands out before it lets the loop run
    tick_deliveries = 16

    def __init__(self, client: Any, **kwargs: Any) -> None:
        super().__init__(client, **kwargs)
        self._broker: _Broker | None = None
        self._broker_lock = threading.Lock()
        self._loop: Any = None
        self._fds: dict[_Channel, int] = {}  # in an event loop: each waiting channel's socket
        self._nudge: tuple[socket.socket, socket.socket] | None = None  # wakes the loop (see on_tick)

    def broker(self) -> _Broker:
        with self._broker_lock:
            if self._broker is None:
                conninfo: Any = self.client
                self._broker = _Broker(
                    redis_url(conninfo), dict(conninfo.transport_options or {}), _ssl_options(conninfo)
                )
            return self._broker

    def close_connection(self, connection: Any) -> None:
        try:
            super().close_connection(connection)
        finally:
            if self._loop is not None:
                self.unregister_from_event_loop(connection, self._loop)
            with self._broker_lock:
                broker, self._broker = self._broker, None
            if broker is not None:
                broker.close()

    # -- in an event loop (Celery's hub): kombu's Redis transport does the same with BRPOP
    def register_with_event_loop(self, connection: Any, loop: Any) -> None:
        """Consume in `loop`: each tick hands out what the queues hold (as far as the prefetch
        limit allows), then sends an XREAD BLOCK (see _Waiter) whose reply, when a message is
        sent or the wait's time is up, makes the socket readable and the loop tick again."""
        self._loop = loop
        self._fds = {}
        if self._nudge is None:
            reader, writer = socket.socketpair()
            reader.setblocking(False)
            writer.setblocking(False)
            self._nudge = (reader, writer)
        loop.add_reader(self._nudge[0].fileno(), self._on_nudge)
        loop.on_tick.add(self.on_tick)

    def unregister_from_event_loop(self, connection: Any, loop: Any) -> None:
        loop.on_tick.discard(self.on_tick)
        for fd in self._fds.values():
            loop.remove_reader(fd)
        self._fds.clear()
        if self._nudge is not None:
            loop.remove_reader(self._nudge[0].fileno())
            for sock in self._nudge:
                sock.close()
            self._nudge = None
        self._loop = None

    def on_tick(self) -> None:
        """Each consuming channel delivers what is there, else starts a wait (see Channel.on_tick).

        A tick that delivered wakes the loop's next poll at once through a socket pair of its
        own: what the delivery set going (Celery's prefork pool registers a child's pipe for
        writing from a tick of its own, which may have run before this one) must not wait for
        the poll's timeout, and the next tick looks for more. Without it a delivery waits up
        to a second whenever the hub happens to run the pool's tick first."""
        if self._broker is None or self._loop is None:
            return
        delivered = 0
        for channel in list(self.channels):
            delivered += channel.on_tick(self._deliver, self._watch, self.tick_deliveries)
        if delivered and self._nudge is not None:
            with contextlib.suppress(OSError):
                self._nudge[1].send(b"\0")

    def flush_later(self, seconds: float) -> None:
        """Complete the acks that are due by then, even if the loop has nothing else to do."""
        if self._loop is not None:
            self._loop.call_later(seconds, self._flush_due)

    def _flush_due(self) -> None:
        for channel in list(self.channels):
            if channel.acks_due(early=ACK_DELAY / 10):  # (a timer may fire a little early)
                channel.flush_acks()

    def _on_nudge(self) -> None:
        if self._nudge is not None:
            with contextlib.suppress(OSError):
                self._nudge[0].recv(4096)

    def _watch(self, channel: _Channel, fd: int) -> None:
        old = self._fds.get(channel)
        if old != fd:
            if old is not None:
                self._loop.remove_reader(old)
            self._fds[channel] = fd
            self._loop.add_reader(fd, self._on_readable, channel, fd)

    def unwatch(self, channel: _Channel) -> None:
        fd = self._fds.pop(channel, None)
        if fd is not None and self._loop is not None:
            self._loop.remove_reader(fd)

    def _on_readable(self, channel: _Channel, fileno: int) -> None:
        """A channel's wait replied: read it; the loop's next tick delivers."""
        waiter = channel.hub_waiter
        if waiter is not None and waiter.pending:
            try:
                waiter.finish()
                return
            except Exception:
                self.unwatch(channel)
                raise
        # nothing was asked: the server closed the idle connection (it reconnects on next use)
        self.unwatch(channel)
        if waiter is not None:
            waiter.reset()

    def kick(self) -> None:
        """A message came back: every wait of this connection looks again."""
        if self._broker is not None:
            self._broker.waiter.kick()
        for channel in list(self.channels):
            if channel.hub_waiter is not None:
                channel.hub_waiter.kick()

    def drain_events(self, connection: Any, timeout: float | None = None, **kwargs: Any) -> None:
        """Deliver one message, blocking while there is none (see _Waiter) up to `timeout`.

        Raises:
            socket.timeout: nothing came within `timeout` seconds.
        """
        start = time.monotonic()
        waiter = self.broker().waiter
        cycle: Any = self.cycle
        woke: list[tuple[Channel, str]] = []
        while True:
            for channel, queue in woke:  # the queues whose log just grew, first
                try:
                    channel.deliver_from(queue, self._deliver)
                    return
                except Empty:
                    pass
            if not woke:
                try:
                    cycle.get(self._deliver, timeout=timeout)
                    return
                except Empty:
                    pass
            targets = [t for channel in self.channels for t in channel.waitable()]
            streams, wait = waiter.plan([(entity, count) for _, _, entity, count in targets])
            try:  # again: what was sent before plan() is here, what comes after wakes the wait
                cycle.get(self._deliver, timeout=timeout)
                return
            except Empty:
                pass
            if timeout is not None:
                left = timeout - (time.monotonic() - start)
                if left <= 0:
                    raise TimeoutError()
                wait = min(wait, left)
            grown = waiter.block(streams, wait)
            woke = [(channel, queue) for channel, queue, entity, count in targets if entity in grown]

    def driver_version(self) -> str:
        return __version__


register()
