"""Worker: runs a handler on every message of a queue or a topic subscription (the Service Bus
processor shape), or with ``session=True`` on every session of a session entity (_sessions.py).

The handler gets a ServiceBusReceivedMessage. When it returns, the message is completed; when it
raises, the message is abandoned (delivered again, counted; after the queue's max_delivery_count
it is dead-lettered by sbredis), or dead-lettered at once when the exception is a
:class:`DeadLetter` or one of the ``dead_letter_on`` types. With a ``retry`` policy
(:class:`~._retry.Retry`) the abandoned message comes back only after its backoff delay, and is
dead-lettered after ``max_retries``; a handler raising :class:`~._retry.RetryAfter` picks the
delay itself. While the handler runs, the message's lock is renewed
(``sbredis.aio.AutoLockRenewer``, up to ``max_lock_renewal_duration`` seconds).

``concurrency`` handlers run at once: coroutine functions on the worker's event loop, plain
functions on that many daemon threads. A handler's slot frees when it returns: its settlement
runs on meanwhile, so the settlements of many handlers go to Redis together (one script call per
partition; up to SETTLE_BACKLOG + concurrency messages are in flight, handlers and settlements).
``prefetch`` messages are fetched ahead of what the free handlers ask for; they are handed to a
handler only while their lock holds, and released without counting a delivery when the worker
stops. Keep ``prefetch`` below what the worker gets through in one lock duration. By default
(``prefetch=None``) the worker sizes it to its handlers' pace (_pace.py): about a second of
their work, at most 256 messages and the work of a quarter of a lock.

Stopping (``stop()``, SIGTERM, or a first SIGINT under ``run()``) drains: no more receives, the
handlers in flight get ``grace_period`` seconds to finish and their messages are settled as usual;
the messages of handlers still running then are abandoned (their locks released at once, so
another worker can take them) and the worker returns. A second SIGINT (``stop(force=True)``) stops
waiting at once and abandons what is in flight. Handlers still running on threads are left
behind (daemon threads end with the process); coroutine handlers are cancelled.

Exit codes (``run()``, ``serve()`` and ``sbredis worker``): see :class:`ExitCode`.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import logging
import queue
import signal
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from enum import IntEnum
from typing import Any

from sbredis._core import instrument
from sbredis._core.entity import check_name
from sbredis._core.instrument import Op
from sbredis._core.keys import subscription_path
from sbredis._core.topic_entity import check_subscription_name
from sbredis.aio import AutoLockRenewer, ServiceBusClient, ServiceBusReceivedMessage, ServiceBusReceiver
from sbredis.aio.management import ServiceBusAdministrationClient
from sbredis.exceptions import InvalidArgumentError, MessageAlreadySettled, MessageLockLostError, ServiceBusError

from ._middleware import Middleware
from ._pace import Pace
from ._retry import Retry, RetryAfter
from ._sessions import SessionSlots

log = logging.getLogger("sbredis.worker")

Handler = Callable[[ServiceBusReceivedMessage], Any]
SETTLE_BACKLOG = 256  # messages whose handler finished and whose settlement has not, before receiving waits
COMPLETE_BATCH = 64  # completions that go to Redis at once, without waiting for more (see _Completions)
COMPLETE_HOLD = 0.002  # seconds a smaller batch waits for more while handlers still run


class ExitCode(IntEnum):
    """How a worker ended.

    OK (0): stopped, and every handler in flight finished within the grace period.
    ERROR (1): a fatal error: the queue does not exist, Redis refused or failed a call in a way
        that retrying cannot fix (handlers in flight were drained first).
    USAGE (2): bad arguments, or a handler that cannot be imported.
    GRACE_EXPIRED (3): the grace period ended with handlers still running; their messages were
        abandoned.
    FORCED (130): a second SIGINT (or stop(force=True)) ended the drain; in-flight messages were
        abandoned.
    """

    OK = 0
    ERROR = 1
    USAGE = 2
    GRACE_EXPIRED = 3
    FORCED = 130


class DeadLetter(Exception):  # noqa: N818 - an instruction, not an error
    """Raise from a handler to dead-letter the message with `reason` and `description`."""

    def __init__(self, reason: str = "DeadLettered", description: str | None = None) -> None:
        super().__init__(reason if description is None else f"{reason}: {description}")
        self.reason = reason
        self.description = description


class _DaemonPool:
    """Runs plain handlers on daemon threads (a handler stuck past a stop cannot hold the process).

    A thread starts only when every started one is busy: quick handlers keep few threads busy, and
    every thread more fights the event loop's thread for the GIL (each socket call of the loop
    then waits for a handler thread to let go of it). Results go back to the loop in batches: a
    thread wakes the loop only when no wake-up is pending already (each one is a write to the
    loop's self-pipe and a turn of the loop).
    """

    def __init__(self, size: int) -> None:
        self._size = size
        self._jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._outstanding = 0  # jobs submitted and not finished
        self._lock = threading.Lock()
        self._done: deque[tuple[asyncio.Future[Any], Any, BaseException | None]] = deque()
        self._wake_pending = False

    def submit(self, loop: asyncio.AbstractEventLoop, fn: Callable[..., Any], *args: Any) -> asyncio.Future[Any]:
        fut = loop.create_future()
        with self._lock:
            self._outstanding += 1
            more = self._outstanding > len(self._threads)
        if more and len(self._threads) < self._size:
            t = threading.Thread(target=self._work, name=f"sbredis-worker-{len(self._threads)}", daemon=True)
            self._threads.append(t)
            t.start()
        self._jobs.put((loop, fut, fn, args))
        return fut

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            loop, fut, fn, args = job
            try:
                result, error = fn(*args), None
            except BaseException as e:
                result, error = None, e
            self._done.append((fut, result, error))
            with self._lock:
                self._outstanding -= 1
                if self._wake_pending:
                    continue
                self._wake_pending = True
            try:
                loop.call_soon_threadsafe(self._deliver)
            except RuntimeError:  # a handler left behind after the worker stopped: its loop is closed
                pass

    def _deliver(self) -> None:
        """On the loop: resolve the futures of the handlers that finished."""
        with self._lock:
            self._wake_pending = False  # before draining: a result added meanwhile wakes the loop again
        done = self._done
        while done:
            _resolve(*done.popleft())

    def shutdown(self) -> None:
        for _ in self._threads:
            self._jobs.put(None)
        self._threads.clear()


class _Completions:
    """Completes the messages of one receiver in batches: what the handlers finish while a batch
    is at Redis goes in the next one, a complete_messages call (one script call per partition), so
    a message costs no settlement call of its own. Each message gets its own outcome.

    A batch smaller than COMPLETE_BATCH waits up to COMPLETE_HOLD seconds while handlers are
    still running (`busy`): quick handlers on threads hand their results back to the loop a few
    at a time, so a batch per turn of the loop held 4 messages on average (a no-op handler,
    threads x8); each call is a socket send that waits for the GIL, and a script call on Redis."""

    def __init__(self, receiver: ServiceBusReceiver, idle: Callable[[], object], busy: Callable[[], bool]) -> None:
        self.receiver = receiver
        self._idle = idle
        self._busy = busy
        self._waiting: list[tuple[ServiceBusReceivedMessage, asyncio.Future[None]]] = []
        self._task: asyncio.Task[None] | None = None
        self._full: asyncio.Future[None] | None = None  # set while a batch waits for more

    def complete(self, m: ServiceBusReceivedMessage) -> asyncio.Future[None]:
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()
        self._waiting.append((m, fut))
        if self._task is None:
            self._task = loop.create_task(self._flush())
        elif self._full is not None and len(self._waiting) >= COMPLETE_BATCH and not self._full.done():
            self._full.set_result(None)
        return fut

    async def _hold(self) -> None:
        """Wait up to COMPLETE_HOLD seconds for a full batch."""
        loop = asyncio.get_running_loop()
        full = self._full = loop.create_future()
        timer = loop.call_later(COMPLETE_HOLD, _set_once, full)
        try:
            await full
        finally:
            timer.cancel()
            self._full = None

    async def _flush(self) -> None:
        try:
            while self._waiting:
                if len(self._waiting) < COMPLETE_BATCH and self._busy():
                    await self._hold()
                batch, self._waiting = self._waiting, []
                await self._complete(batch)
        finally:
            for _, fut in self._waiting:  # only when the flush itself was cancelled (the loop is closing)
                fut.cancel()
            self._waiting = []
            self._task = None
            self._idle()

    async def _complete(self, batch: list[tuple[ServiceBusReceivedMessage, asyncio.Future[None]]]) -> None:
        before = [m.settled for m, _ in batch]  # settled elsewhere already (the drain's abandon)
        todo = [m for m, _ in batch if not m.settled]
        error: BaseException | None = None
        try:
            if todo:
                await self.receiver.complete_messages(todo)
        except asyncio.CancelledError:
            raise
        except Exception as e:
            error = e
        lost = {id(x) for x in error.messages} if isinstance(error, MessageLockLostError) else set()
        for (m, fut), was in zip(batch, before, strict=True):
            if fut.done():
                continue
            if was:
                fut.set_exception(MessageAlreadySettled("The message has been settled already."))
            elif m.settled:
                fut.set_result(None)
            elif id(m) in lost:
                assert isinstance(error, MessageLockLostError)
                fut.set_exception(MessageLockLostError(error.message, messages=[m]))
            else:
                fut.set_exception(error or ServiceBusError("The message was not completed."))


def _chain(done: asyncio.Future[Any], task: asyncio.Future[Any]) -> None:
    """Pass `task`'s outcome on to `done` (unless the drain cancelled `done` first)."""
    if done.done():
        return
    if task.cancelled():
        done.cancel()
    elif task.exception() is not None:
        done.set_exception(task.exception())  # type: ignore[arg-type]
    else:
        done.set_result(task.result())


def _set_once(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


def _resolve(fut: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if fut.cancelled():
        return
    if error is not None:
        fut.set_exception(error)
    else:
        fut.set_result(result)


class Worker:
    """Processes the messages of `entity` with `handler` (see the module docstring).

    With ``session=True`` the entity must require sessions: ``concurrency`` sessions are processed
    at once, each one message at a time in order (see _sessions.py); a session is let go of after
    ``session_idle_timeout`` seconds without messages.

    Raises:
        InvalidArgumentError: a bad entity or subscription name, concurrency, prefetch or duration.
    """

    def __init__(
        self,
        url: str,
        handler: Handler,
        *,
        entity: str,
        subscription: str | None = None,
        session: bool = False,
        concurrency: int = 8,
        prefetch: int | None = None,
        dead_letter_on: type[BaseException] | Iterable[type[BaseException]] = (),
        grace_period: float = 30.0,
        max_lock_renewal_duration: float = 300.0,
        middleware: Iterable[Middleware] = (),
        poll_interval: float = 1.0,
        session_idle_timeout: float = 1.0,
        retry: Retry | None = None,
        **client_options: Any,
    ) -> None:
        if not callable(handler):
            raise InvalidArgumentError("handler must be callable")
        if retry is not None and not isinstance(retry, Retry):
            raise InvalidArgumentError("retry must be a sbredis.worker.Retry or None")
        check_name(entity, "topic" if subscription is not None else "queue")
        if subscription is not None:
            check_subscription_name(subscription)
        for name, value, low in (("concurrency", concurrency, 1), ("prefetch", 0 if prefetch is None else prefetch, 0)):
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= 10_000:
                raise InvalidArgumentError(f"{name} must be an int between {low} and 10000")
        for name, seconds in (
            ("grace_period", grace_period),
            ("max_lock_renewal_duration", max_lock_renewal_duration),
            ("poll_interval", poll_interval),
            ("session_idle_timeout", session_idle_timeout),
        ):
            if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds < 0:
                raise InvalidArgumentError(f"{name} must be a non-negative number of seconds")
        self.url = url
        self.handler = handler
        self.entity = entity
        self.subscription = subscription
        self.path = entity if subscription is None else subscription_path(entity, subscription)
        self.session = bool(session)
        self.session_idle_timeout = float(session_idle_timeout)
        self.concurrency = concurrency
        self.prefetch = prefetch
        self.dead_letter_on = (dead_letter_on,) if isinstance(dead_letter_on, type) else tuple(dead_letter_on)
        self.grace_period = float(grace_period)
        self.max_lock_renewal_duration = float(max_lock_renewal_duration)
        self.middleware = list(middleware)
        self.poll_interval = float(poll_interval)
        self.retry = retry
        self.client_options = client_options
        self.stats = {
            "received": 0,
            "completed": 0,
            "abandoned": 0,
            "retried": 0,
            "dead_lettered": 0,
            "failed_settlements": 0,
        }
        self._is_async = inspect.iscoroutinefunction(handler) or inspect.iscoroutinefunction(
            getattr(handler, "__call__", None)  # noqa: B004 - an object with an async __call__
        )
        self._pool = _DaemonPool(concurrency)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping = False
        self._forced = False
        self._room: asyncio.Event | None = None
        self._force_event: asyncio.Event | None = None
        # handlers with their settlements: tasks, or futures on the thread handlers' fast path
        self._inflight: dict[asyncio.Future[str | None], tuple[ServiceBusReceiver, ServiceBusReceivedMessage]] = {}
        self._running = 0  # handlers running (the in-flight tasks not yet settling)
        self._completions: dict[ServiceBusReceiver, _Completions] = {}
        self._renewer: AutoLockRenewer | None = None  # serve()'s, once it runs
        self._released: set[int] = set()
        self._pace = Pace(concurrency)  # sizes the prefetch when it is None

    # -- control
    def stop(self, force: bool = False) -> None:
        """Begin draining (see the module docstring); `force` also ends the drain. Thread-safe."""
        loop = self._loop
        if loop is not None and loop.is_running():
            try:
                running = asyncio.get_running_loop()
            except RuntimeError:
                running = None
            if running is not loop:
                loop.call_soon_threadsafe(self.stop, force)
                return
        self._stopping = True
        if force:
            self._forced = True
            if self._force_event is not None:
                self._force_event.set()
        if self._room is not None:
            self._room.set()

    def _on_sigint(self) -> None:
        if self._stopping:
            log.warning("second SIGINT: abandoning the messages in flight and stopping now")
            self.stop(force=True)
        else:
            log.info("SIGINT: draining (up to %.0f s); SIGINT again to stop now", self.grace_period)
            self.stop()

    def _on_sigterm(self) -> None:
        log.info("SIGTERM: draining (up to %.0f s)", self.grace_period)
        self.stop()

    def run(self, handle_signals: bool = True) -> int:
        """Run until stopped; returns an ExitCode. Installs SIGTERM/SIGINT handlers (main thread only)."""
        return asyncio.run(self._main(handle_signals))

    async def _main(self, handle_signals: bool) -> int:
        loop = asyncio.get_running_loop()
        handled = handle_signals and threading.current_thread() is threading.main_thread()
        if handled:
            loop.add_signal_handler(signal.SIGTERM, self._on_sigterm)
            loop.add_signal_handler(signal.SIGINT, self._on_sigint)
        try:
            return await self.serve()
        finally:
            if handled:
                loop.remove_signal_handler(signal.SIGTERM)
                loop.remove_signal_handler(signal.SIGINT)

    # -- the loop
    async def serve(self) -> int:
        """Process messages until stop(); returns an ExitCode."""
        self._loop = asyncio.get_running_loop()
        self._room = asyncio.Event()
        self._force_event = asyncio.Event()
        if self._forced:
            self._force_event.set()
        try:
            async with ServiceBusAdministrationClient.from_connection_string(self.url, **self.client_options) as admin:
                if self.subscription is None:
                    props: Any = await admin.get_queue(self.entity)
                else:
                    props = await admin.get_subscription(self.entity, self.subscription)
        except ServiceBusError as e:
            log.error("cannot start a worker on %r: %s", self.path, e.message)
            return ExitCode.ERROR
        if bool(props.requires_session) != self.session:
            log.error(
                "cannot start a worker on %r: it %s sessions; %s",
                self.path,
                "requires" if props.requires_session else "does not require",
                "use --session (session=True)" if props.requires_session else "omit --session (session=False)",
            )
            return ExitCode.ERROR
        client = ServiceBusClient.from_connection_string(self.url, **self.client_options)
        renewer = self._renewer = AutoLockRenewer(
            max_lock_renewal_duration=self.max_lock_renewal_duration, on_lock_renew_failure=self._renew_failed
        )
        log.info(
            "worker on %r: %sconcurrency %d, prefetch %s, %s handler",
            self.path,
            "sessions, " if self.session else "",
            self.concurrency,
            "adaptive" if self.prefetch is None else self.prefetch,
            "async" if self._is_async else "thread",
        )
        code = ExitCode.OK
        receiver: ServiceBusReceiver | None = None
        sessions = SessionSlots(
            self,
            client,
            renewer,
            room=self._room,
            stopping=lambda: self._stopping,
            make_receiver=self._receiver,
            back_off=self._back_off,
            hook=self._hook,
            start=self._start,
        )
        try:
            try:
                if self.session:
                    await sessions.run()
                else:
                    prefetch = self._pace.ahead if self.prefetch is None else self.prefetch
                    receiver = self._receiver(client, prefetch_count=prefetch, auto_lock_renewer=renewer)
                    await self._receive_loop(receiver)
            except ServiceBusError as e:
                log.error("worker on %r stops: %s", self.path, e.message)
                code = ExitCode.ERROR
            drained = await self._drain()
            if code is ExitCode.OK:
                code = drained
        finally:
            await sessions.close()
            closing = [renewer.close, client.close]
            if receiver is not None:
                closing.insert(0, receiver.close)
            for close in closing:
                try:
                    await close()
                except Exception:
                    log.debug("closing failed", exc_info=True)
            self._pool.shutdown()
        log.info("worker on %r stopped (%s): %s", self.path, code.name, self.stats)
        return int(code)

    def _receiver(self, client: ServiceBusClient, **options: Any) -> ServiceBusReceiver:
        if self.subscription is None:
            return client.get_queue_receiver(self.entity, **options)
        return client.get_subscription_receiver(self.entity, self.subscription, **options)

    async def _receive_loop(self, receiver: ServiceBusReceiver) -> None:
        assert self._room is not None
        pause = 0.0
        room = self.concurrency + SETTLE_BACKLOG
        while not self._stopping:
            free = min(self.concurrency - self._running, room - len(self._inflight))
            if free <= 0:
                self._room.clear()
                await self._room.wait()
                continue
            await self._hook("before_receive", free)
            if self.prefetch is None:
                receiver.prefetch_count = self._pace.prefetch()
            try:
                poll = self.poll_interval
                messages = await receiver.receive_messages(
                    max_message_count=free, max_wait_time=poll if poll > 0 else None, wait=poll > 0
                )
            except ServiceBusError as e:
                pause = await self._back_off(e, pause, "receive from")
                continue
            pause = 0.0
            if messages and self.prefetch is None and messages[0].locked_until_ms:
                now_ms = time.time() * 1000 + receiver.clock_offset_ms
                self._pace.saw_lock((messages[0].locked_until_ms - now_ms) / 1000)
            await self._hook("after_receive", messages)
            self.stats["received"] += len(messages)
            start = self._start_direct if self._direct() else self._start
            for m in messages:
                start(receiver, m)

    async def _back_off(self, error: ServiceBusError, pause: float, what: str) -> float:
        """Sleep before retrying after `error` (doubling `pause`, 0.1 to 5 s); returns the pause slept.

        Raises:
            ServiceBusError: `error`, when retrying cannot fix it.
        """
        if not error.retryable:
            raise error
        pause = min(max(pause * 2, 0.1), 5.0)
        log.warning("%s %r failed (retrying in %.1f s): %s", what, self.path, pause, error.message)
        await asyncio.sleep(pause)
        return pause

    def _start(self, receiver: ServiceBusReceiver, m: ServiceBusReceivedMessage) -> asyncio.Task[str | None]:
        """Run the handler on `m` and settle it, as a task counted in flight."""
        assert self._loop is not None
        task = self._loop.create_task(self._process(receiver, m))
        self._running += 1
        self._inflight[task] = (receiver, m)
        task.add_done_callback(self._finished)
        return task

    def _direct(self) -> bool:
        """Whether a plain handler's message may skip its asyncio task (see _start_direct)."""
        return not self._is_async and not self.middleware and not instrument.enabled

    def _start_direct(self, receiver: ServiceBusReceiver, m: ServiceBusReceivedMessage) -> asyncio.Future[str | None]:
        """_start for a plain handler without middleware or instrumentation: callbacks instead of
        a task per message (its steps, wake-ups and frames cost the worker about a fifth of its
        CPU per no-op message). What a failed handler's message needs, or a handler that returned
        an awaitable, runs in a task as in _start."""
        assert self._loop is not None
        done: asyncio.Future[str | None] = self._loop.create_future()
        self._running += 1
        self._inflight[done] = (receiver, m)
        done.add_done_callback(self._finished)
        handled = self._pool.submit(self._loop, contextvars.copy_context().run, self.handler, m)
        handled.add_done_callback(functools.partial(self._handled, receiver, m, done))
        return done

    def _handled(
        self,
        receiver: ServiceBusReceiver,
        m: ServiceBusReceivedMessage,
        done: asyncio.Future[str | None],
        handled: asyncio.Future[Any],
    ) -> None:
        error = handled.exception()
        if error is None and inspect.isawaitable(handled.result()) and not done.done():
            self._follow(done, self._awaited(receiver, m, handled.result()))  # (App's coroutine tasks)
            return
        self._handler_done()
        if done.done():  # cancelled by the drain, which abandoned the message
            return
        if id(m) in self._released:
            done.set_result(None)
            return
        if error is not None:
            self._follow(done, self._settle_failed(receiver, m, error))
            return
        completed = self._completer(receiver).complete(m)
        completed.add_done_callback(functools.partial(self._completed, m, done))

    def _follow(self, done: asyncio.Future[str | None], coro: Coroutine[Any, Any, str | None]) -> None:
        """Run the rest of a message's work in a task whose outcome `done` takes (a drain that
        cancels `done` cancels the task)."""
        assert self._loop is not None
        task = self._loop.create_task(coro)
        task.add_done_callback(functools.partial(_chain, done))
        done.add_done_callback(lambda d: task.cancel() if d.cancelled() else None)

    async def _awaited(self, receiver: ServiceBusReceiver, m: ServiceBusReceivedMessage, result: Any) -> str | None:
        """_process_traced's rest for a plain handler that returned an awaitable."""
        error: BaseException | None = None
        try:
            await result
        except asyncio.CancelledError:
            self._handler_done()
            raise
        except Exception as e:
            error = e
        self._handler_done()
        return await self._conclude(receiver, m, error)

    async def _conclude(
        self, receiver: ServiceBusReceiver, m: ServiceBusReceivedMessage, error: BaseException | None
    ) -> str | None:
        """Settle `m` after its handler: complete, or as a failure says; None when the drain
        abandoned it already."""
        if id(m) in self._released:
            return None
        if error is None:
            return await self._settle(receiver, m, "complete")
        return await self._settle_failed(receiver, m, error)

    def _completed(
        self, m: ServiceBusReceivedMessage, done: asyncio.Future[str | None], fut: asyncio.Future[None]
    ) -> None:
        if done.done():
            return
        if fut.cancelled():
            done.cancel()
            return
        error = fut.exception()
        if error is None:
            self.stats["completed"] += 1
            done.set_result("complete")
        elif isinstance(error, ServiceBusError):
            self._settlement_failed(m, "complete", error)
            done.set_result(None)
        else:
            done.set_exception(error)

    def _finished(self, task: asyncio.Future[str | None]) -> None:
        self._inflight.pop(task, None)
        if self._room is not None:
            self._room.set()
        if not task.cancelled() and task.exception() is not None:
            log.error("worker task failed", exc_info=task.exception())

    async def _process(self, receiver: ServiceBusReceiver, m: ServiceBusReceivedMessage) -> str | None:
        """Handle and settle `m`; the settlement done ('complete', 'abandon', 'dead_letter'), or None
        when it failed or the drain abandoned the message already."""
        with instrument.operation("process", self.path, (m,)) as op:  # the handler and the settlement
            return await self._process_traced(receiver, m, op)

    async def _process_traced(self, receiver: ServiceBusReceiver, m: ServiceBusReceivedMessage, op: Op) -> str | None:
        error: BaseException | None = None
        try:
            if self.middleware:  # (a hook call per message costs when there is none)
                await self._hook("before_process", m, strict=True)
            result = await self._call(m)
            if inspect.isawaitable(result):
                await result
        except asyncio.CancelledError:
            self._handler_done()
            raise
        except Exception as e:
            error = e
        self._handler_done()
        op.fail(error)
        if self.middleware:
            await self._hook("after_process", m, error, reverse=True)
        return await self._conclude(receiver, m, error)

    async def _settle_failed(
        self, receiver: ServiceBusReceiver, m: ServiceBusReceivedMessage, error: BaseException
    ) -> str | None:
        """Settle the message of a handler that raised `error` (dead-letter, retry or abandon)."""
        if isinstance(error, DeadLetter):
            # clipped to the dead-letter text limit: a handler's long text must not fail the settlement
            reason, description = error.reason[:4096], error.description and error.description[:4096]
            return await self._settle(receiver, m, "dead_letter", reason, description)
        if self.dead_letter_on and isinstance(error, self.dead_letter_on):
            log.warning("handler failed on %r, dead-lettering it: %r", m, error)
            return await self._settle(receiver, m, "dead_letter", type(error).__name__, str(error)[:4096])
        if self.session:  # a delayed retry would let the session's later messages overtake it
            log.warning("handler failed on %r, abandoning it: %r", m, error, exc_info=error)
            return await self._settle(receiver, m, "abandon")
        if isinstance(error, RetryAfter):
            log.info("handler asked to retry %r in %.3g s: %r", m, error.seconds, error.__cause__ or error)
            return await self._settle(receiver, m, "abandon", delay=error.seconds)
        if self.retry is not None:
            dc = m.delivery_count + 1  # the attempt number: delivery_count counts the ones before
            if self.retry.exhausted(dc):
                log.warning("handler failed on %r after %d deliveries, dead-lettering it: %r", m, dc, error)
                return await self._settle(receiver, m, "dead_letter", *retries_exhausted(dc, error))
            delay = self.retry.delay(dc)
            log.warning("handler failed on %r, retrying in %.3g s: %r", m, delay, error, exc_info=error)
            return await self._settle(receiver, m, "abandon", delay=delay)
        log.warning("handler failed on %r, abandoning it: %r", m, error, exc_info=error)
        return await self._settle(receiver, m, "abandon")

    def _handler_done(self) -> None:
        """A handler ended: its slot is free while its settlement runs."""
        self._running -= 1
        self._pace.handled()
        if self._room is not None:
            self._room.set()

    def _call(self, m: ServiceBusReceivedMessage) -> Awaitable[Any]:
        if self._is_async:
            result: Awaitable[Any] = self.handler(m)
            return result
        assert self._loop is not None  # the handler's thread sees this task's context (its process span)
        return self._pool.submit(self._loop, contextvars.copy_context().run, self.handler, m)

    async def _settle(
        self,
        receiver: ServiceBusReceiver,
        m: ServiceBusReceivedMessage,
        action: str,
        reason: str | None = None,
        description: str | None = None,
        delay: float | None = None,
    ) -> str | None:
        if self.middleware:
            await self._hook("before_settle", m, action)
        error: ServiceBusError | None = None
        try:
            if action == "complete":
                await self._completer(receiver).complete(m)
                self.stats["completed"] += 1
            elif action == "abandon":
                await receiver.abandon_message(m, delay=delay or None)
                self.stats["abandoned"] += 1
                if delay:
                    self.stats["retried"] += 1
            else:
                await receiver.dead_letter_message(m, reason=reason, error_description=description)
                self.stats["dead_lettered"] += 1
        except ServiceBusError as e:
            error = e
            self._settlement_failed(m, action, e)
        if self.middleware:
            await self._hook("after_settle", m, action, error, reverse=True)
        return action if error is None else None

    def _settlement_failed(self, m: ServiceBusReceivedMessage, action: str, e: ServiceBusError) -> None:
        self.stats["failed_settlements"] += 1
        log.warning("could not %s %r: %s", action.replace("_", "-"), m, e.message)
        if self._renewer is not None and not isinstance(e, (MessageLockLostError, MessageAlreadySettled)):
            # unsettled (Redis away): its lock elapses and it is delivered again, rather than
            # renewed until max_lock_renewal_duration
            self._renewer.stop_renewing(m)

    def _completer(self, receiver: ServiceBusReceiver) -> _Completions:
        c = self._completions.get(receiver)
        if c is None:
            c = self._completions[receiver] = _Completions(
                receiver, lambda: self._completions.pop(receiver, None), lambda: self._running > 0
            )
        return c

    async def _drain(self) -> ExitCode:
        assert self._force_event is not None
        pending: set[asyncio.Future[Any]] = set(self._inflight)
        if pending and not self._forced:
            log.info("draining %d message(s) in flight (grace period %.0f s)", len(pending), self.grace_period)
            loop = asyncio.get_running_loop()
            deadline = loop.time() + self.grace_period
            forced = asyncio.ensure_future(self._force_event.wait())
            try:
                while pending and not forced.done() and loop.time() < deadline:
                    await asyncio.wait(
                        [*pending, forced], timeout=deadline - loop.time(), return_when=asyncio.FIRST_COMPLETED
                    )
                    pending = {t for t in pending if not t.done()}
            finally:
                forced.cancel()
        if pending:
            by_receiver: dict[ServiceBusReceiver, list[ServiceBusReceivedMessage]] = {}
            for t in pending:
                if t in self._inflight:
                    receiver, m = self._inflight[t]
                    by_receiver.setdefault(receiver, []).append(m)
                    self._released.add(id(m))
            for receiver, messages in by_receiver.items():
                try:
                    await receiver.abandon_messages(messages)
                    self.stats["abandoned"] += len(messages)
                except ServiceBusError as e:
                    log.warning("could not abandon %d message(s) in flight: %s", len(messages), e.message)
            log.warning("abandoned %d message(s) whose handlers were still running", len(pending))
            for t in pending:
                t.cancel()
            await asyncio.wait(pending, timeout=1.0)
        if self._forced:
            return ExitCode.FORCED
        return ExitCode.GRACE_EXPIRED if pending else ExitCode.OK

    async def _renew_failed(self, message: Any, error: Exception | None) -> None:
        log.warning("lock renewal of %r failed (it may be delivered again): %s", message, error)

    async def _hook(self, name: str, *args: Any, strict: bool = False, reverse: bool = False) -> None:
        chain = reversed(self.middleware) if reverse else self.middleware
        for mw in chain:
            try:
                result = getattr(mw, name)(self, *args)
                if inspect.isawaitable(result):
                    await result
            except Exception:
                if strict:
                    raise
                log.exception("middleware %s.%s raised", type(mw).__name__, name)

    def __repr__(self) -> str:
        return f"Worker(entity={self.path!r}, concurrency={self.concurrency}, prefetch={self.prefetch})"


def retries_exhausted(delivery_count: int, error: BaseException) -> tuple[str, str]:
    """The dead-letter reason and description of a message whose retries ran out."""
    return "MaxRetriesExceeded", f"failed {delivery_count} time(s); the last error: {error!r}"[:4096]
