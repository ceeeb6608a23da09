# Generated from sbredis/aio/_session.py by scripts/unasync.py: edit the async source, not this.
"""ServiceBusSession: the session a session receiver holds (``receiver.session``), as the Azure SDK's.

The receiver locks its session when it is opened (``with``, or its first operation): a named
session, or with NEXT_AVAILABLE_SESSION the first session with available messages that no one
holds, searching the entity's partitions in turn until the receiver's max_wait_time passes
(OperationTimeoutError). Closing the receiver lets go of the session.
"""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from .._core import codec, protocol, settlement, validation
from .._core import session as sess
from .._core.keys import SUBSCRIPTIONS
from .._core.meta import EntityMeta
from .._core.protocol import session_lock, session_release, session_renew, session_state
from .._enums import ServiceBusSessionFilter
from ..exceptions import (
    InvalidOperationError,
    MessageSizeExceededError,
    MessagingEntityNotFoundError,
    OperationTimeoutError,
    ServiceBusError,
    SessionLockLostError,
)
from ._forwarder import finish_journal

if TYPE_CHECKING:
    from ._handler import HandlerContext
    from ._receiver import ServiceBusReceiver

DEFAULT_SESSION_WAIT = 60.0  # seconds NEXT_AVAILABLE_SESSION waits without a max_wait_time
_POLL_MIN, _POLL_MAX = 0.005, 0.1


class ServiceBusSession:
    """The session of a session receiver: its id, lock and state.

    Raises (every method):
        SessionLockLostError: the lock elapsed or another receiver took the session.
        InvalidOperationError: the receiver is closed.

    Internal (its receiver and the AutoLockRenewer use these; not part of the API):
    ``ensure_locked()``, ``partition``, ``nonce``, ``key``, ``locked_until_ms``, ``settled`` and
    ``release()``. The session reaches its receiver only through the receiver's documented
    ``closed`` and ``saw_server_time()``, and the rest through what the receiver handed it.
    """

    _is_session = True  # for the AutoLockRenewer: a renewable that is not a message

    def __init__(
        self,
        receiver: ServiceBusReceiver,
        session_id: str | ServiceBusSessionFilter,
        context: HandlerContext,
        max_wait_time: float | None,
        renewer: Any,
    ) -> None:
        self._receiver = receiver
        self._context = context
        self._max_wait_time = max_wait_time
        self._renewer = renewer
        self._cursor = 0  # where NEXT_AVAILABLE_SESSION starts its next search over partitions
        self._wanted = session_id
        self._id: str | None = None if isinstance(session_id, ServiceBusSessionFilter) else session_id
        self._partition = 0
        self._nonce = ""
        self._gen = ""  # the entity's generation when the session was locked
        self._locked_ms = 0
        self._released = False
        self.auto_renew_error: ServiceBusError | None = None
        self.entity_name = receiver.entity_name

    @property
    def session_id(self) -> str | None:
        """The session's id (None until a NEXT_AVAILABLE_SESSION receiver has found one)."""
        return self._id

    @property
    def locked_until_utc(self) -> datetime | None:
        return codec.from_ms(self._locked_ms) if self._locked_ms else None

    # -- internal: for the receiver and the AutoLockRenewer
    @property
    def settled(self) -> bool:
        """Let go of (released, or its receiver closed): the AutoLockRenewer stops renewing it."""
        return self._released or self._receiver.closed

    @property
    def partition(self) -> int:
        return self._partition

    @property
    def nonce(self) -> str:
        """The session lock's nonce ('' until locked); its messages are locked under it."""
        return self._nonce

    @property
    def key(self) -> str:
        """The session id, once locked."""
        return self._key()

    @property
    def locked_until_ms(self) -> int:
        return self._locked_ms

    def ensure_locked(self) -> None:
        """Lock the session (once)."""
        self._open()

    def call(self, c: protocol.Call) -> Any:
        """Run a call under the session lock (locking the session first)."""
        return self._run(c)

    def release(self, unhanded: list[int]) -> None:
        """Let go of the session (the receiver closes); `unhanded`: the partition-local sequence
        numbers of its messages fetched ahead but never handed out."""
        self._release(unhanded)

    # -- opening
    def _open(self) -> None:
        if self._nonce:
            return
        meta = self._context.entity(self.entity_name)
        try:
            self._lock(meta)
        except MessagingEntityNotFoundError:
            if not self._context.recreated(self.entity_name, meta.generation):
                raise
            self._lock(self._context.entity(self.entity_name))  # the entity was created again

    def _lock(self, meta: EntityMeta) -> None:
        entity = self.entity_name
        if not meta.sessions:
            raise sess.refuse_session_receiver(entity)
        nonce = settlement.new_nonce()
        if self._id is not None:
            p = sess.session_partition(self._id, meta.partition_count)
            c = replace(session_lock.call(entity, p, self._id, nonce), gen=meta.generation)
            self._locked(p, nonce, self._context.transport.run(c, entity), meta.generation)
            return
        wait = self._max_wait_time if self._max_wait_time is not None else DEFAULT_SESSION_WAIT
        deadline = time.monotonic() + wait
        pause = _POLL_MIN
        start = self._cursor
        while True:
            for i in range(meta.partition_count):
                p = (start + i) % meta.partition_count
                c = replace(session_lock.call(entity, p, "", nonce), gen=meta.generation)
                while True:  # again while the partition's search stops on its budget, within the wait
                    reply = self._context.transport.run(c, entity)
                    if session_lock.journal_pending(reply):  # a fan-out to this subscription is unfinished
                        finish_journal(self._context.transport, entity.partition(SUBSCRIPTIONS)[0], p)
                        continue
                    if self._locked(p, nonce, reply, meta.generation):
                        self._cursor = p + 1
                        return
                    if not session_lock.again(reply) or time.monotonic() >= deadline:
                        break
            if self._context.forwarder.pull(entity):
                continue  # sessions forwarded here were waiting in an outbox upstream (see _forwarder.py)
            now = time.monotonic()
            if now >= deadline:
                raise OperationTimeoutError(
                    f"No unlocked session with messages on '{entity}' within {wait:g} s (NEXT_AVAILABLE_SESSION)."
                )
            time.sleep(min(pause, deadline - now))
            pause = min(pause * 2, _POLL_MAX)

    def _locked(self, partition: int, nonce: str, reply: list[Any], gen: str) -> bool:
        now, until, sid = session_lock.parse(reply)
        if sid is None:
            return False
        self._receiver.saw_server_time(now)
        self._id, self._partition, self._nonce, self._locked_ms = sid, partition, nonce, until
        self._gen = gen
        if self._renewer is not None:
            self._renewer.register(self._receiver, self)
        return True

    def _run(self, c: protocol.Call) -> Any:
        if self._receiver.closed:
            raise InvalidOperationError("the receiver is closed")
        self._open()
        try:
            return self._context.transport.run(replace(c, gen=self._gen), self.entity_name)
        except MessagingEntityNotFoundError:
            if not self._context.recreated(self.entity_name, self._gen):
                raise
        raise SessionLockLostError(
            f"The session lock on '{self.entity_name}' was lost: the entity was deleted and created again."
        )

    # -- the SDK's methods
    def get_state(self, *, timeout: float | None = None) -> bytes | None:
        """The session's state (None when it has none)."""
        validation.check_timeout(timeout)
        self._open()
        state = self._run(session_state.get_call(self.entity_name, self._partition, self._key(), self._nonce))
        return session_state.parse_state(state)

    def set_state(self, state: bytes | str | None, *, timeout: float | None = None) -> None:
        """Set the session's state (bytes, or str stored as UTF-8; None removes it). It stays after
        the session's messages are gone.

        Raises:
            InvalidArgumentError: not bytes, str or None.
            MessageSizeExceededError: larger than the entity's maximum message size.
        """
        validation.check_timeout(timeout)
        value = sess.state_bytes(state)
        self._open()
        if value is not None and len(value) > (self._context.entity(self.entity_name)).max_message_bytes:
            # refused here, not by the script: Redis would copy the whole state into the script call
            # (about 90 ms for 100 MiB, stalling every client) only to refuse it; the limit may have
            # been raised since the metadata was read
            fresh = self._context.entity(self.entity_name, refresh=True)
            if len(value) > fresh.max_message_bytes:
                raise MessageSizeExceededError(
                    f"A session state of {len(value)} bytes exceeds the maximum of {fresh.max_message_bytes} bytes"
                    f" on '{self.entity_name}'."
                )
        self._run(session_state.set_call(self.entity_name, self._partition, self._key(), self._nonce, value))

    def available_count(self) -> int:
        """How many of the session's messages are available (not locked, deferred or scheduled).
        sbredis's own, not the Azure SDK's (`sbredis sessions show` prints it)."""
        self._open()
        c = session_state.count_call(self.entity_name, self._partition, self._key(), self._nonce)
        return int(self._run(c))

    def renew_lock(self, *, timeout: float | None = None) -> datetime:
        """Extend the session lock (and the locks of its messages) by the lock duration from now;
        returns the new locked_until_utc."""
        validation.check_timeout(timeout)
        self._open()
        reply = self._run(session_renew.call(self.entity_name, self._partition, self._key(), self._nonce))
        now, self._locked_ms = session_renew.parse(reply)
        self._receiver.saw_server_time(now)
        return codec.from_ms(self._locked_ms)

    def _key(self) -> str:
        assert self._id is not None
        return self._id

    def _release(self, unhanded: list[int]) -> None:
        if not self._nonce or self._released:
            return
        self._released = True
        c = session_release.call(self.entity_name, self._partition, self._key(), self._nonce, unhanded)
        self._context.transport.run_many([replace(c, gen=self._gen)], self.entity_name)

    def __repr__(self) -> str:
        return f"ServiceBusSession(session_id={self._id!r}, entity={self.entity_name!r})"
