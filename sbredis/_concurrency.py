"""Concurrency primitives that differ between the shells, both variants side by side (as httpcore's
``_synchronization.py``): everything else in sbredis/_sync is generated from sbredis/aio.

* Coalescer: what many tasks submit at once runs as one batch per key. A sender (or a receiver's
  settlements) submits a list of items under a key; while a batch for that key is at Redis, new
  submissions wait and go together in the next batch, so N concurrent awaited sends cost about one
  round trip per batch instead of N; a submission with nothing of its key in flight runs at once
  in its own task. The items submitted and not yet done are bounded: past the limit, submitters
  wait for room. The sync variant runs each call at once as its own batch.
* gather: run awaitables concurrently; the sync variant gets results already computed in order.
* log_failure: a done-callback for work nobody awaits (pre-settled sends): log its error.
* send_command: send a command on a pooled connection (the asyncio variant skips redis-py's
  per-command write task).
* read_reply: read a command's reply on a pooled connection (the asyncio variant reads it from
  the connection's hiredis reader under one timer per connection, without redis-py's per-read layers),
  polling for it first for a given time (_core/reply_poll.py): the sync variant polls the socket,
  the asyncio variant keeps the event loop from sleeping, so other tasks run meanwhile.
* AutoLockRenewer: renews registered message locks, from one background task (asyncio) or one
  daemon thread (sync); a renewal that fails unexpectedly (a bug, not a Redis error) is logged and
  reported to ``on_lock_renew_failure`` in both.

UNASYNC maps each async name to its sync twin: scripts/unasync.py applies it when it generates
sbredis/_sync, and tests/unit/test_concurrency.py holds each pair to the same public names and
signatures.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import select
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Hashable
from types import TracebackType
from typing import Any, Generic, TypeVar

from ._core.renewal import FailureCallback, Registration, Schedule, describe
from .exceptions import InvalidArgumentError, ServiceBusError

log = logging.getLogger("sbredis")
POLL = getattr(select, "poll", None)  # not on Windows: there a sync read sleeps at once
T = TypeVar("T")

UNASYNC = {
    "AsyncCoalescer": "SyncCoalescer",
    "async_gather": "sync_gather",
    "async_log_failure": "sync_log_failure",
    "AsyncAutoLockRenewer": "SyncAutoLockRenewer",
    "async_items": "sync_items",
    "async_send_command": "sync_send_command",
    "async_read_reply": "sync_read_reply",
}

# run(key, entries) -> one outcome per entry: a result, or an exception to raise in its submitter
AsyncRunner = Callable[[Any, list[list[Any]]], Awaitable[list[Any]]]


class AsyncCoalescer:
    """Concurrent submissions under one key run as one batch (tasks wait for their outcome)."""

    def __init__(self, run: AsyncRunner, limit: int, max_batch: int = 5000) -> None:
        self._run = run
        self._limit = limit
        self._max_batch = max_batch
        self._load = 0  # items submitted and not done
        self._room: deque[asyncio.Future[None]] = deque()
        self._queues: dict[Hashable, deque[tuple[list[Any], asyncio.Future[Any]]]] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def pending(self) -> int:
        """Items submitted and not done yet."""
        return self._load

    async def submit(self, key: Hashable, items: list[Any]) -> Any:
        """Queue `items` under `key` and wait for their outcome (raises the entry's exception).

        With nothing of `key` in flight (a loop awaiting one call at a time) the batch runs in the
        caller's task at once: no future, no flush task, no extra event-loop turn. What others
        submit under `key` meanwhile queues behind it and goes in the next batch, as it would.
        """
        n = min(len(items), self._limit)
        if key in self._queues or self._load + n > self._limit:
            return await (await self.enqueue(key, items))
        queue: deque[tuple[list[Any], asyncio.Future[Any]]] = deque()
        self._queues[key] = queue
        self._load += n
        try:
            outcome = (await self._run(key, [items]))[0]
        finally:
            self._release(n)
            if queue:
                self._start_flush(key, queue)
            else:
                del self._queues[key]
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    async def enqueue(self, key: Hashable, items: list[Any]) -> asyncio.Future[Any]:
        """Queue `items` once there is room; returns the future of their outcome."""
        n = min(len(items), self._limit)
        loop = asyncio.get_running_loop()
        while self._load and self._load + n > self._limit:
            waiter: asyncio.Future[None] = loop.create_future()
            self._room.append(waiter)
            await waiter
        self._load += n
        fut: asyncio.Future[Any] = loop.create_future()
        fut.add_done_callback(lambda _: self._release(n))
        queue = self._queues.get(key)
        if queue is None:
            queue = self._queues[key] = deque()
            self._start_flush(key, queue)
        queue.append((items, fut))
        return fut

    def _start_flush(self, key: Hashable, queue: deque[tuple[list[Any], asyncio.Future[Any]]]) -> None:
        task = asyncio.get_running_loop().create_task(self._flush(key, queue))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _release(self, n: int) -> None:
        self._load -= n
        while self._room:  # wake the waiters; each checks for room again
            waiter = self._room.popleft()
            if not waiter.done():
                waiter.set_result(None)

    async def _flush(self, key: Hashable, queue: deque[tuple[list[Any], asyncio.Future[Any]]]) -> None:
        """Run the queue of `key` batch after batch until it is empty."""
        try:
            while queue:
                batch = [queue.popleft()]
                size = len(batch[0][0])
                while queue and size + len(queue[0][0]) <= self._max_batch:
                    size += len(queue[0][0])
                    batch.append(queue.popleft())
                try:
                    outcomes = await self._run(key, [items for items, _ in batch])
                except asyncio.CancelledError:
                    for _, fut in batch:
                        if not fut.done():
                            fut.cancel()
                    raise
                except Exception as e:  # this batch's callers get it; the batches behind still run
                    for _, fut in batch:
                        if not fut.done():
                            fut.set_exception(e)
                    continue
                except BaseException as e:
                    for _, fut in batch:
                        if not fut.done():
                            fut.set_exception(e)
                    raise
                for (_, fut), outcome in zip(batch, outcomes, strict=True):
                    if fut.done():
                        continue
                    if isinstance(outcome, BaseException):
                        fut.set_exception(outcome)
                    else:
                        fut.set_result(outcome)
        finally:
            del self._queues[key]
            while queue:  # only when the flush itself was cancelled (the loop is closing)
                _, fut = queue.popleft()
                if not fut.done():
                    fut.set_exception(ServiceBusError("The client closed before the operation ran."))

    async def drain(self) -> None:
        """Wait until everything queued so far is done."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)


def async_log_failure(what: str) -> Callable[[asyncio.Future[Any]], None]:
    """A done-callback for work nobody awaits (pre-settled sends): log its error."""

    def done(fut: asyncio.Future[Any]) -> None:
        if fut.cancelled():
            return
        e = fut.exception()
        if e is not None:
            log.warning("a pre-settled %s failed and was not reported to its caller: %s", what, e)

    return done


async def async_gather(calls: list[Awaitable[Any]]) -> list[Any]:
    """Run the calls (awaitables) concurrently; their results in order."""
    return list(await asyncio.gather(*calls))


async def async_send_command(conn: Any, *args: Any) -> None:
    """``conn.send_command(*args)`` on a redis.asyncio connection, without the task redis-py starts
    for every command it sends under a socket timeout (``asyncio.wait_for`` of the write: a task
    and an event-loop turn, 10 to 20 µs CPU, docs/benchmarks.md "Loops against raw round trips").
    The command goes to the stream's writer, which hands it to the socket at once; only what the
    socket did not take is waited for, under the timeout (TimeoutError past it, OSError from the
    socket: the caller drops the connection). A connection without the writer this expects
    (another redis-py) sends as redis-py does."""
    writer: Any = getattr(conn, "_writer", None)
    transport = getattr(writer, "transport", None)
    if transport is None or not conn.is_connected or transport.is_closing():
        await conn.send_command(*args)
        return
    writer.writelines(conn.pack_command(*args))
    if transport.get_write_buffer_size():
        await asyncio.wait_for(writer.drain(), conn.socket_timeout)


async def async_read_reply(conn: Any, poll: float = 0.0) -> Any:
    """``conn.read_response()``, or the connection's own ``read_reply`` where sbredis gave its pool
    a connection class with one (_core/packer.py: redis-py's read goes through four coroutines and
    an ``asyncio.timeout`` per reply, about 9 µs CPU of an awaited round trip's 30;
    docs/benchmarks.md "Loops against raw round trips"). For the first `poll` seconds the event
    loop does not sleep: it keeps turning (checking its sockets without waiting, running whatever
    else is ready), so the reply is read as soon as it arrives instead of after a wake-up."""
    read = getattr(conn, "read_reply", None)
    awake = _Awake(asyncio.get_running_loop(), poll) if poll else None
    try:
        return await (read() if read is not None else conn.read_response())
    finally:
        if awake is not None:
            awake.stop()


class _Awake:
    """Keeps an event loop from sleeping for a while: a callback that schedules itself again while
    the time lasts (a loop with a callback ready checks its sockets without waiting)."""

    __slots__ = ("handle", "loop", "until")

    def __init__(self, loop: asyncio.AbstractEventLoop, seconds: float) -> None:
        self.loop = loop
        self.until = loop.time() + seconds
        self.handle: asyncio.Handle | None = loop.call_soon(self.turn)

    def turn(self) -> None:
        self.handle = self.loop.call_soon(self.turn) if self.loop.time() < self.until else None

    def stop(self) -> None:
        if self.handle is not None:
            self.handle.cancel()
            self.handle = None


SyncRunner = Callable[[Any, list[list[Any]]], list[Any]]


class Done:
    """The already-known outcome of a call (what enqueue returns in the sync shell)."""

    __slots__ = ("outcome",)

    def __init__(self, outcome: Any) -> None:
        self.outcome = outcome

    def add_done_callback(self, fn: Callable[[Done], None]) -> None:
        fn(self)

    def cancelled(self) -> bool:
        return False

    def exception(self) -> BaseException | None:
        return self.outcome if isinstance(self.outcome, BaseException) else None


class SyncCoalescer:
    """A sync call runs at once as its own batch (a thread blocks on its own round trip)."""

    def __init__(self, run: SyncRunner, limit: int, max_batch: int = 5000) -> None:
        self._run = run

    @property
    def pending(self) -> int:
        return 0

    def submit(self, key: Hashable, items: list[Any]) -> Any:
        outcome = self._run(key, [items])[0]
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    def enqueue(self, key: Hashable, items: list[Any]) -> Done:
        return Done(self._run(key, [items])[0])

    def drain(self) -> None:
        """Nothing is ever queued."""


def sync_log_failure(what: str) -> Callable[[Done], None]:
    def done(fut: Done) -> None:
        e = fut.exception()
        if e is not None:
            log.warning("a pre-settled %s failed and was not reported to its caller: %s", what, e)

    return done


def sync_gather(calls: list[Any]) -> list[Any]:
    """The calls' results: in the sync shell they already ran, one after another, in the list."""
    return calls


def sync_send_command(conn: Any, *args: Any) -> None:
    """async_send_command's twin: the sync connection sends at once, with no task to skip."""
    conn.send_command(*args)


def sync_read_reply(conn: Any, poll: float = 0.0) -> Any:
    """async_read_reply's twin: redis-py's read, whose layers cost a sync call little, after
    polling the socket without waiting for up to `poll` seconds (until it is readable or closed)."""
    sock = getattr(conn, "_sock", None) if poll else None
    if sock is not None and POLL is not None:
        poller = POLL()
        poller.register(sock, select.POLLIN)
        until = time.monotonic() + poll
        while not poller.poll(0) and time.monotonic() < until:
            pass
    return conn.read_response()


# -------------------------------------------------------------------------- lock renewal
class AsyncAutoLockRenewer:
    """Keeps message locks alive while they are processed, as ``azure.servicebus.aio.AutoLockRenewer``.

    ``register(receiver, message)`` (or ``get_queue_receiver(..., auto_lock_renewer=renewer)``)
    starts renewing; settling the message, closing its receiver or the renewer, a failed renewal,
    or ``max_lock_renewal_duration`` seconds stop it. ``on_lock_renew_failure(message, error)`` may
    be a function or a coroutine function. Must be used inside a running event loop.
    """

    public_name = "sbredis.aio.AutoLockRenewer"  # how error messages name it

    def __init__(
        self, max_lock_renewal_duration: float = 300, on_lock_renew_failure: FailureCallback | None = None
    ) -> None:
        self._schedule = Schedule(max_lock_renewal_duration, on_lock_renew_failure)
        self._wake: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None

    def register(
        self,
        receiver: Any,
        renewable: Any,
        max_lock_renewal_duration: float | None = None,
        on_lock_renew_failure: FailureCallback | None = None,
    ) -> None:
        """Renew `renewable`'s lock (a message `receiver` handed out) until it is settled.

        Raises:
            InvalidOperationError: the renewer is closed, or the message holds no lock.
            InvalidArgumentError: not a received message, or bad options.
        """
        renew = getattr(receiver, "renew_each", None)  # none: Schedule.add says what register takes
        if renew is not None and not inspect.iscoroutinefunction(renew):
            raise InvalidArgumentError(
                "sbredis.aio.AutoLockRenewer renews the locks of sbredis.aio receivers; "
                "use sbredis.AutoLockRenewer with a sync receiver"
            )
        wake = self._schedule.add(receiver, renewable, max_lock_renewal_duration, on_lock_renew_failure)
        if self._task is None or self._task.done():
            self._wake = asyncio.Event()
            self._task = asyncio.get_running_loop().create_task(self._run())
        elif wake:
            assert self._wake is not None
            self._wake.set()

    def stop_renewing(self, renewable: Any) -> None:
        """Stop renewing `renewable`'s lock without settling it (sbredis's own): the lock then
        elapses as usual and the message is delivered again. For a caller that could not settle a
        message (a settlement that failed on the connection), whose lock would otherwise be
        renewed until max_lock_renewal_duration. Unknown or already stopped: nothing happens."""
        self._schedule.stop(renewable)

    async def _run(self) -> None:
        wake = self._wake
        assert wake is not None
        schedule = self._schedule
        while not schedule.closed:
            due, wait = schedule.due()
            for receiver, regs in due.items():
                try:
                    outcomes = await receiver.renew_each([r.message for r in regs])
                except Exception as e:  # a bug, not a Redis error (those come back as outcomes)
                    log.exception("auto lock renewal failed unexpectedly")
                    outcomes = [e] * len(regs)
                for reg, outcome in zip(regs, outcomes, strict=True):
                    if isinstance(outcome, BaseException) and not reg.message.settled:
                        await self._failed(reg, outcome)
            if not due:
                wake.clear()
                try:
                    await asyncio.wait_for(wake.wait(), wait)
                except TimeoutError:
                    pass

    async def _failed(self, reg: Registration, error: BaseException) -> None:
        callback, wrapped = self._schedule.failed(reg, error)
        log.warning("auto lock renewal of %s stopped: %s", describe(reg.message), error)
        if callback is not None:
            try:
                result = callback(reg.message, wrapped)
                if inspect.isawaitable(result):
                    await result
            except Exception:
                log.exception("on_lock_renew_failure raised")

    async def close(self, wait: bool = True) -> None:
        """Stop renewing everything (locks then elapse as usual); `wait` waits for the task to end."""
        self._schedule.closed = True
        self._schedule.regs.clear()
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            if not wait:
                return
            try:
                await task
            except asyncio.CancelledError:
                pass

    async def __aenter__(self) -> AsyncAutoLockRenewer:
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"AutoLockRenewer(registered={len(self._schedule.regs)})"


class SyncAutoLockRenewer:
    """Keeps message locks alive while they are processed, as ``azure.servicebus.AutoLockRenewer``.

    ``register(receiver, message)`` (or ``get_queue_receiver(..., auto_lock_renewer=renewer)``)
    starts renewing; settling the message, closing its receiver or the renewer, a failed renewal,
    or ``max_lock_renewal_duration`` seconds stop it. One daemon thread renews every registered
    lock (all due locks of a receiver in one script call per partition); ``on_lock_renew_failure``
    runs on that thread.
    """

    public_name = "sbredis.AutoLockRenewer"  # how error messages name it

    def __init__(
        self, max_lock_renewal_duration: float = 300, on_lock_renew_failure: FailureCallback | None = None
    ) -> None:
        self._schedule = Schedule(max_lock_renewal_duration, on_lock_renew_failure)
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    def register(
        self,
        receiver: Any,
        renewable: Any,
        max_lock_renewal_duration: float | None = None,
        on_lock_renew_failure: FailureCallback | None = None,
    ) -> None:
        """Renew `renewable`'s lock (a message `receiver` handed out) until it is settled.

        Raises:
            InvalidOperationError: the renewer is closed, or the message holds no lock.
            InvalidArgumentError: not a received message, or bad options.
        """
        if inspect.iscoroutinefunction(getattr(receiver, "renew_each", None)):
            raise InvalidArgumentError(
                "sbredis.AutoLockRenewer renews the locks of sync receivers; "
                "use sbredis.aio.AutoLockRenewer with an sbredis.aio receiver"
            )
        with self._lock:
            wake = self._schedule.add(receiver, renewable, max_lock_renewal_duration, on_lock_renew_failure)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="sbredis-lock-renewer", daemon=True)
                self._thread.start()
        if wake:
            self._wake.set()

    def stop_renewing(self, renewable: Any) -> None:
        """Stop renewing `renewable`'s lock without settling it (sbredis's own): the lock then
        elapses as usual and the message is delivered again. For a caller that could not settle a
        message (a settlement that failed on the connection), whose lock would otherwise be
        renewed until max_lock_renewal_duration. Unknown or already stopped: nothing happens."""
        self._schedule.stop(renewable)

    def _run(self) -> None:
        schedule = self._schedule
        while not schedule.closed:
            with self._lock:
                due, wait = schedule.due()
            for receiver, regs in due.items():
                try:
                    outcomes = receiver.renew_each([r.message for r in regs])
                except Exception as e:  # a bug, not a Redis error (those come back as outcomes)
                    log.exception("auto lock renewal failed unexpectedly")
                    outcomes = [e] * len(regs)
                for reg, outcome in zip(regs, outcomes, strict=True):
                    if isinstance(outcome, BaseException) and not reg.message.settled:
                        self._failed(reg, outcome)
            if not due:
                self._wake.wait(wait)
                self._wake.clear()

    def _failed(self, reg: Registration, error: BaseException) -> None:
        with self._lock:
            callback, wrapped = self._schedule.failed(reg, error)
        log.warning("auto lock renewal of %s stopped: %s", describe(reg.message), error)
        if callback is not None:
            try:
                callback(reg.message, wrapped)
            except Exception:
                log.exception("on_lock_renew_failure raised")

    def close(self, wait: bool = True) -> None:
        """Stop renewing everything (locks then elapse as usual); `wait` joins the thread."""
        with self._lock:
            self._schedule.closed = True
            self._schedule.regs.clear()
            thread, self._thread = self._thread, None
        self._wake.set()
        if wait and thread is not None and thread is not threading.current_thread():
            thread.join()

    def __enter__(self) -> SyncAutoLockRenewer:
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"AutoLockRenewer(registered={len(self._schedule.regs)})"


class AsyncItems(Generic[T]):
    """A list still to be fetched that can be awaited (``await client.list_queue_sessions(q)``)
    or iterated (``async for sid in client.list_queue_sessions(q)``), as the Azure SDK's async
    pageable lists are."""

    def __init__(self, fetch: Awaitable[list[T]]) -> None:
        self._fetch = fetch

    def __await__(self) -> Generator[Any, None, list[T]]:
        return self._fetch.__await__()

    async def __aiter__(self) -> AsyncIterator[T]:
        for item in await self._fetch:
            yield item


def async_items(result: Awaitable[list[T]]) -> AsyncItems[T]:
    """`result` (a coroutine's list) both awaitable and async-iterable."""
    return AsyncItems(result)


def sync_items(result: list[T]) -> list[T]:
    """async_items' twin: the list itself."""
    return result
