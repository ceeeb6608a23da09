"""ServiceBusSession: the session a session receiver holds (``receiver.session``), as the Azure SDK's.

The receiver locks its session when it is opened (``async with``, or its first operation): a named
session, or with NEXT_AVAILABLE_SESSION the first session with available messages that no one
holds, searching the entity's partitions in turn until the receiver's max_wait_time passes
(OperationTimeoutError). Closing the receiver lets go of the session.
"""

from __future__ import annotations

import asyncio
import time
from datetime import datetime
from typing import TYPE_CHECKING, Any

from .._core import codec, protocol, settlement
from .._core import session as sess
from .._core.protocol import session_lock, session_release, session_renew, session_state
from .._enums import ServiceBusSessionFilter
from ..exceptions import InvalidOperationError, OperationTimeoutError, ServiceBusError

if TYPE_CHECKING:
    from ._receiver import ServiceBusReceiver

DEFAULT_SESSION_WAIT = 60.0  # seconds NEXT_AVAILABLE_SESSION waits without a max_wait_time
_POLL_MIN, _POLL_MAX = 0.005, 0.1


class ServiceBusSession:
    """The session of a session receiver: its id, lock and state.

    Raises (every method):
        SessionLockLostError: the lock elapsed or another receiver took the session.
        InvalidOperationError: the receiver is closed.
    """

    _is_session = True  # for the AutoLockRenewer: a renewable that is not a message

    def __init__(self, receiver: ServiceBusReceiver, session_id: str | ServiceBusSessionFilter) -> None:
        self._receiver = receiver
        self._wanted = session_id
        self._id: str | None = None if isinstance(session_id, ServiceBusSessionFilter) else session_id
        self._partition = 0
        self._nonce = ""
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

    @property
    def _settled(self) -> bool:  # the AutoLockRenewer stops renewing a session let go of
        return self._released or self._receiver._closed

    # -- opening
    async def _open(self) -> None:
        """Lock the session (once)."""
        if self._nonce:
            return
        r = self._receiver
        meta = await r._meta()
        if not meta.sessions:
            raise sess.refuse_session_receiver(r.entity_name)
        nonce = settlement.new_nonce()
        if self._id is not None:
            p = sess.session_partition(self._id, meta.partition_count)
            reply = await r._context.transport.run(session_lock.call(r.entity_name, p, self._id, nonce), r.entity_name)
            self._locked(p, nonce, reply)
            return
        wait = r._max_wait_time if r._max_wait_time is not None else DEFAULT_SESSION_WAIT
        deadline = time.monotonic() + wait
        pause = _POLL_MIN
        start = r._cursor
        while True:
            for i in range(meta.partition_count):
                p = (start + i) % meta.partition_count
                c = session_lock.call(r.entity_name, p, "", nonce)
                reply = await r._context.transport.run(c, r.entity_name)
                if self._locked(p, nonce, reply):
                    r._cursor = p + 1
                    return
            now = time.monotonic()
            if now >= deadline:
                raise OperationTimeoutError(
                    f"No unlocked session with messages on '{r.entity_name}' within {wait:g} s "
                    "(NEXT_AVAILABLE_SESSION)."
                )
            await asyncio.sleep(min(pause, deadline - now))
            pause = min(pause * 2, _POLL_MAX)

    def _locked(self, partition: int, nonce: str, reply: list[Any]) -> bool:
        now, until, sid = session_lock.parse(reply)
        if sid is None:
            return False
        self._receiver._clock_offset_ms = now - int(time.time() * 1000)
        self._id, self._partition, self._nonce, self._locked_ms = sid, partition, nonce, until
        renewer = self._receiver._renewer
        if renewer is not None:
            renewer.register(self._receiver, self)
        return True

    async def _run(self, c: protocol.Call) -> Any:
        if self._receiver._closed:
            raise InvalidOperationError("the receiver is closed")
        await self._open()
        return await self._receiver._context.transport.run(c, self._receiver.entity_name)

    # -- the SDK's methods
    async def get_state(self, *, timeout: float | None = None) -> bytes | None:
        """The session's state (None when it has none)."""
        await self._open()
        state = await self._run(session_state.get_call(self.entity_name, self._partition, self._key(), self._nonce))
        return session_state.parse_state(state)

    async def set_state(self, state: bytes | str | None, *, timeout: float | None = None) -> None:
        """Set the session's state (bytes, or str stored as UTF-8; None removes it). It stays after
        the session's messages are gone.

        Raises:
            InvalidArgumentError: not bytes, str or None.
            MessageSizeExceededError: larger than the entity's maximum message size.
        """
        value = sess.state_bytes(state)
        await self._open()
        await self._run(session_state.set_call(self.entity_name, self._partition, self._key(), self._nonce, value))

    async def _available_count(self) -> int:
        """How many of the session's messages are available (not locked, deferred or scheduled);
        sbredis's own (`sbredis sessions show`), not the Azure SDK's."""
        await self._open()
        c = session_state.count_call(self.entity_name, self._partition, self._key(), self._nonce)
        return int(await self._run(c))

    async def renew_lock(self, *, timeout: float | None = None) -> datetime:
        """Extend the session lock (and the locks of its messages) by the lock duration from now;
        returns the new locked_until_utc."""
        await self._open()
        reply = await self._run(session_renew.call(self.entity_name, self._partition, self._key(), self._nonce))
        now, self._locked_ms = session_renew.parse(reply)
        self._receiver._clock_offset_ms = now - int(time.time() * 1000)
        return codec.from_ms(self._locked_ms)

    def _key(self) -> str:
        assert self._id is not None
        return self._id

    async def _release(self, unhanded: list[int]) -> None:
        """Let go of the session (the receiver closes)."""
        if not self._nonce or self._released:
            return
        self._released = True
        r = self._receiver
        c = session_release.call(r.entity_name, self._partition, self._key(), self._nonce, unhanded)
        await r._context.transport.run_many([c], r.entity_name)

    def __repr__(self) -> str:
        return f"ServiceBusSession(session_id={self._id!r}, entity={self.entity_name!r})"
