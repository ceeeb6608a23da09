"""Session processing for the Worker (``session=True``), in the shape of the Service Bus session processor.

Up to ``concurrency`` sessions are held at once. One loop takes them: whenever a slot is free, a
session receiver with NEXT_AVAILABLE_SESSION (each attempt waits ``poll_interval`` seconds, then
the loop asks again). A held session's messages are handled one at a time in sequence order: the
handler runs and the message is settled before the next one is handed out (``prefetch`` messages
are fetched ahead under the session lock). While a session is held, its lock (which covers its
messages) is renewed by the worker's AutoLockRenewer (``receiver.session``).

The worker lets go of a session (closes its receiver; messages fetched ahead go back uncounted,
and another worker, or this one, may take the session next) when:

- no message came for ``session_idle_timeout`` seconds, so other sessions get the slot;
- a message was abandoned (its handler failed): the session starts again from that message, so no
  message fetched ahead of it is handled before it;
- a settlement or receive failed (the session lock was lost: the lock elapsed or another receiver
  took the session);
- it has been held for ``max_lock_renewal_duration`` seconds (checked between messages; the lock is
  renewed up to twice that from when the session was taken, so every handler gets at least
  ``max_lock_renewal_duration`` seconds of renewal);
- the worker stops, after the drain (see _processor.py).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from sbredis import NEXT_AVAILABLE_SESSION
from sbredis.aio import AutoLockRenewer, ServiceBusClient, ServiceBusReceivedMessage, ServiceBusReceiver
from sbredis.exceptions import OperationTimeoutError, ServiceBusError

if TYPE_CHECKING:
    from ._processor import Worker

log = logging.getLogger("sbredis.worker")

KEEP_ON = ("complete", "dead_letter")  # settlements after which the session's next message is handled
SESSION_PREFETCH = 16  # messages fetched ahead under a session's lock (renewed with it) when prefetch is None


class SessionSlots:
    """The sessions one worker holds, each served by its own task.

    It reads the worker's public settings; the worker's own machinery comes in explicitly: `room`
    (set when a slot may have come free or the worker stops), `stopping`, and the worker's
    receiver factory, back-off, hooks and handler start.
    """

    def __init__(
        self,
        worker: Worker,
        client: ServiceBusClient,
        renewer: AutoLockRenewer,
        *,
        room: asyncio.Event,
        stopping: Callable[[], bool],
        make_receiver: Callable[..., ServiceBusReceiver],
        back_off: Callable[[ServiceBusError, float, str], Awaitable[float]],
        hook: Callable[..., Awaitable[None]],
        start: Callable[[ServiceBusReceiver, ServiceBusReceivedMessage], asyncio.Task[Any]],
    ) -> None:
        self.worker = worker
        self.client = client
        self.renewer = renewer
        self.room = room
        self.stopping = stopping
        self.make_receiver = make_receiver
        self.back_off = back_off
        self.hook = hook
        self.start = start
        self.held: dict[asyncio.Task[None], ServiceBusReceiver] = {}

    async def run(self) -> None:
        """Take sessions while there is room, until the worker stops.

        Raises:
            ServiceBusError: one that retrying cannot fix (the entity is gone, ...).
        """
        w = self.worker
        pause = 0.0
        while not self.stopping():
            if len(self.held) >= w.concurrency:
                self.room.clear()
                await self.room.wait()
                continue
            receiver = self.make_receiver(
                self.client,
                session_id=NEXT_AVAILABLE_SESSION,
                max_wait_time=w.poll_interval,
                prefetch_count=SESSION_PREFETCH if w.prefetch is None else w.prefetch,
            )
            try:
                await receiver.__aenter__()  # locks the next available session
            except OperationTimeoutError:
                await _close(receiver)
                continue
            except ServiceBusError as e:
                await _close(receiver)
                pause = await self.back_off(e, pause, "taking a session of")
                continue
            pause = 0.0
            if self.stopping():
                await _close(receiver)
                break
            task = asyncio.get_running_loop().create_task(self._serve(receiver))
            self.held[task] = receiver
            task.add_done_callback(self._let_go)

    def _let_go(self, task: asyncio.Task[None]) -> None:
        self.held.pop(task, None)
        self.room.set()
        if not task.cancelled() and task.exception() is not None:
            log.error("session task failed", exc_info=task.exception())

    async def _serve(self, receiver: ServiceBusReceiver) -> None:
        """Handle the held session's messages one at a time until it is to be let go of."""
        w = self.worker
        session = receiver.session
        assert session is not None
        taken = time.monotonic()
        idle_since = taken
        try:
            self.renewer.register(receiver, session, max_lock_renewal_duration=2 * w.max_lock_renewal_duration)
            log.debug("session %r of %r taken", session.session_id, w.path)
            while not self.stopping() and time.monotonic() - taken < w.max_lock_renewal_duration:
                wait = min(w.poll_interval, max(0.0, idle_since + w.session_idle_timeout - time.monotonic()))
                await self.hook("before_receive", 1)
                try:
                    # a wait of 0 (the session's idle time is up): one look, without waiting
                    messages = await receiver.receive_messages(
                        max_message_count=1, max_wait_time=wait if wait > 0 else None, wait=wait > 0
                    )
                except ServiceBusError as e:
                    log.warning("session %r of %r let go of: %s", session.session_id, w.path, e.message)
                    break
                if not messages:
                    if time.monotonic() - idle_since >= w.session_idle_timeout:
                        break
                    continue
                await self.hook("after_receive", messages)
                w.stats["received"] += len(messages)
                task = self.start(receiver, messages[0])
                await asyncio.wait([task])  # a cancelled handler (the drain) ends this wait, not this task
                if task.cancelled() or task.exception() is not None or task.result() not in KEEP_ON:
                    break
                idle_since = time.monotonic()
        finally:
            await _close(receiver)
            log.debug("session %r of %r let go of", session.session_id, w.path)

    async def close(self) -> None:
        """Wait for the sessions held to be let go of (after the drain they end within a poll interval)."""
        if not self.held:
            return
        tasks = set(self.held)
        _, late = await asyncio.wait(tasks, timeout=self.worker.poll_interval + 5.0)
        for t in late:
            t.cancel()
        if late:
            await asyncio.wait(late, timeout=1.0)


async def _close(receiver: ServiceBusReceiver) -> None:
    try:
        await receiver.close()
    except Exception:
        log.debug("closing a session receiver failed", exc_info=True)
