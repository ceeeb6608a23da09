"""The sync API over ``sbredis.aio``, so the conformance suite can run its tests through the async client.

Every call on a wrapped object runs on one event loop in a background thread (the loop the aio
objects were created on); coroutines are awaited there, async context managers become context
managers, async iterators become iterators, and aio objects handed back are wrapped in turn. Wrapped
objects passed as arguments (``transaction=``, ``auto_lock_renewer=``) are unwrapped first. Messages,
properties and exceptions are shared by both APIs and pass through unchanged.

Several threads may use wrapped objects at once (the competing-receiver tests do): each call is one
coroutine on the shared loop, so they interleave as concurrent tasks would.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import Any

import sbredis.aio
import sbredis.aio.management


class EventLoopThread:
    """One event loop running in a daemon thread; `run` executes a call on it and waits."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="sync-over-async", daemon=True)
        self._thread.start()

    def run(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Call `fn` on the loop thread (awaiting what it returns if awaitable) and return the result."""
        if threading.current_thread() is self._thread:
            raise RuntimeError("a blocking call from the loop thread would deadlock (a callback calls the sync API?)")

        async def call() -> Any:
            result = fn(*args, **kwargs)
            if inspect.isawaitable(result):
                result = await result
            return result

        return asyncio.run_coroutine_threadsafe(call(), self.loop).result()

    def close(self) -> None:
        async def cancel_rest() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(cancel_rest(), self.loop).result(timeout=10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)
        self.loop.close()


def _wants_wrapping(obj: Any) -> bool:
    if isinstance(obj, SyncOverAsync):
        return False
    module = type(obj).__module__ or ""
    if module.startswith(("sbredis.aio", "sbredis.paired._aio")):  # the async client's pairing too
        return True
    return hasattr(obj, "__aiter__") or hasattr(obj, "__aenter__") or inspect.isawaitable(obj)


def _unwrap(obj: Any) -> Any:
    if isinstance(obj, SyncOverAsync):
        return object.__getattribute__(obj, "_target")
    if isinstance(obj, list):
        return [_unwrap(o) for o in obj]
    if isinstance(obj, tuple):
        return tuple(_unwrap(o) for o in obj)
    return obj


class SyncOverAsync:
    """A sync view of one aio object (client, sender, receiver, session, admin client, transaction...)."""

    def __init__(self, target: Any, runner: EventLoopThread) -> None:
        object.__setattr__(self, "_target", target)
        object.__setattr__(self, "_runner", runner)

    def _wrap(self, value: Any) -> Any:
        runner: EventLoopThread = object.__getattribute__(self, "_runner")
        if inspect.isawaitable(value):
            value = runner.run(lambda: value)
        if _wants_wrapping(value):
            return SyncOverAsync(value, runner)
        return value

    def __getattr__(self, name: str) -> Any:
        target = object.__getattribute__(self, "_target")
        runner: EventLoopThread = object.__getattribute__(self, "_runner")
        # properties run on the loop too: some read loop-bound state
        value = runner.run(getattr, target, name)
        if not callable(value) or _wants_wrapping(value):
            return self._wrap(value)

        def method(*args: Any, **kwargs: Any) -> Any:
            args = tuple(_unwrap(a) for a in args)
            kwargs = {k: _unwrap(v) for k, v in kwargs.items()}
            return self._wrap(runner.run(value, *args, **kwargs))

        method.__name__ = name
        return method

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(object.__getattribute__(self, "_target"), name, _unwrap(value))

    def __enter__(self) -> Any:
        target = object.__getattribute__(self, "_target")
        runner: EventLoopThread = object.__getattribute__(self, "_runner")
        entered = runner.run(target.__aenter__)
        return self if entered is target else self._wrap(entered)

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> Any:
        target = object.__getattribute__(self, "_target")
        runner: EventLoopThread = object.__getattribute__(self, "_runner")
        return runner.run(target.__aexit__, et, ev, tb)

    def __iter__(self) -> Iterator[Any]:
        target = object.__getattribute__(self, "_target")
        runner: EventLoopThread = object.__getattribute__(self, "_runner")
        if not hasattr(target, "__aiter__"):
            yield from runner.run(iter, target)
            return
        iterator = runner.run(target.__aiter__)
        while True:
            try:
                item = runner.run(iterator.__anext__)
            except StopAsyncIteration:
                return
            yield self._wrap(item)

    def __len__(self) -> int:
        return int(object.__getattribute__(self, "_runner").run(len, object.__getattribute__(self, "_target")))

    def __bool__(self) -> bool:
        return True

    def __repr__(self) -> str:
        return repr(object.__getattribute__(self, "_target"))


class _Factory:
    """A class of sbredis.aio seen through the sync API: constructors run on the loop, results wrapped."""

    def __init__(self, cls: Any, runner: EventLoopThread) -> None:
        self._cls = cls
        self._runner = runner

    def __call__(self, *args: Any, **kwargs: Any) -> SyncOverAsync:
        args = tuple(_unwrap(a) for a in args)
        kwargs = {k: _unwrap(v) for k, v in kwargs.items()}
        return SyncOverAsync(self._runner.run(self._cls, *args, **kwargs), self._runner)

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._cls, name)
        if not callable(attr):
            return attr

        def classmethod_(*args: Any, **kwargs: Any) -> Any:
            result = self._runner.run(attr, *args, **kwargs)
            return SyncOverAsync(result, self._runner) if _wants_wrapping(result) else result

        return classmethod_


class AsyncApi:
    """The names a conformance test builds clients from, for one API (see `SyncApi`)."""

    name = "async"

    def __init__(self) -> None:
        self.runner = EventLoopThread()
        self.ServiceBusClient = _Factory(sbredis.aio.ServiceBusClient, self.runner)
        self.ServiceBusAdministrationClient = _Factory(
            sbredis.aio.management.ServiceBusAdministrationClient, self.runner
        )
        self.AutoLockRenewer = _Factory(sbredis.aio.AutoLockRenewer, self.runner)

    def close(self) -> None:
        self.runner.close()


class SyncApi:
    """The sync API's classes, under the names `AsyncApi` provides."""

    name = "sync"

    def __init__(self) -> None:
        import sbredis
        import sbredis.management

        self.ServiceBusClient = sbredis.ServiceBusClient
        self.ServiceBusAdministrationClient = sbredis.management.ServiceBusAdministrationClient
        self.AutoLockRenewer = sbredis.AutoLockRenewer

    def close(self) -> None:
        pass
