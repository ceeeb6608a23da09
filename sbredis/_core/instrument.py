"""The instrumentation seam: the one place senders, receivers and the worker report what they do.

Call sites wrap an operation in ``with instrument.operation(name, entity, messages) as op:``
and report its result with ``op.done(result)``. While no sink is installed ``operation`` returns a
shared no-op object after one module-level check, so the hot path pays one function call and
builds nothing. Sinks (``sbredis.observability.otel`` for spans, ``.prometheus`` for metrics) are
installed with :func:`install`; they see every operation begin and end on the caller's thread.

Operation names are the Azure Service Bus ones (``messaging.operation.name``): send, schedule,
receive, complete, abandon, defer, dead_letter, renew_message_lock, process. Their types
(``messaging.operation.type``) are in :data:`OPERATION_TYPES`. A sink that raises is logged once
and otherwise ignored: instrumentation never changes what an operation does.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from typing import Any

log = logging.getLogger("sbredis.observability")

OPERATION_TYPES = {
    "send": "send",
    "schedule": "send",
    "receive": "receive",
    "complete": "settle",
    "abandon": "settle",
    "defer": "settle",
    "dead_letter": "settle",
    "renew_message_lock": "",  # no messaging.operation.type applies
    "process": "process",
}

enabled = False  # a sink is installed (read on every operation: keep it a plain module global)
_sinks: tuple[Sink, ...] = ()
_warned: set[type] = set()


class Sink:
    """Receives operations; override what you need (the defaults do nothing)."""

    def begin(self, op: Operation) -> None:
        """The operation starts (before anything is sent to Redis)."""

    def end(self, op: Operation) -> None:
        """The operation ended: ``op.error`` is None or the exception it ended with."""

    def created(self, message: Any, entity: str) -> None:
        """A message was added to a ServiceBusMessageBatch for `entity` (its creation context)."""

    def lock_lost(self, entity: str, operation: str, count: int) -> None:
        """`count` messages' locks were found lost by a settlement or renewal (`operation`)."""


class Op:
    """The no-op operation handed out while nothing is installed."""

    __slots__ = ()

    def __enter__(self) -> Op:
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: Any) -> None:
        return None

    def done(self, result: Any) -> None:
        """The operation's result: sequence numbers (send) or the messages received."""

    def fail(self, error: BaseException | None) -> None:
        """An error the caller handled itself (a handler's exception in the worker)."""

    def follow(self, outcome: Any) -> None:
        """End the operation when `outcome` (a future) is done, not when the block exits."""


NOOP = Op()


class Operation(Op):
    """One instrumented operation: its name, entity, messages, duration and error."""

    __slots__ = (
        "_ended",
        "_followed",
        "duration",
        "entity",
        "error",
        "messages",
        "name",
        "result",
        "start",
        "start_ns",
        "state",
        "type",
    )

    def __init__(self, name: str, entity: str, messages: list[Any]) -> None:
        self.name = name
        self.type = OPERATION_TYPES.get(name, "")
        self.entity = entity
        self.messages = messages
        self.result: Any = None
        self.error: BaseException | None = None
        self.duration = 0.0
        self.state: dict[Any, Any] = {}  # per-sink data (a span, a context token)
        self._followed = self._ended = False
        self.start_ns = time.time_ns()
        self.start = time.perf_counter()

    @property
    def count(self) -> int:
        return len(self.messages)

    def __enter__(self) -> Operation:
        _each("begin", self)
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: Any) -> None:
        if ev is not None and self.error is None:
            self.error = ev
        if not self._followed or ev is not None:
            self._end()

    def done(self, result: Any) -> None:
        self.result = result
        if self.type == "receive" and isinstance(result, list):
            self.messages = result

    def fail(self, error: BaseException | None) -> None:
        self.error = error

    def follow(self, outcome: Any) -> None:
        self._followed = True

        def finished(fut: Any) -> None:
            if not fut.cancelled() and fut.exception() is not None:
                self.error = fut.exception()
            self._end()

        outcome.add_done_callback(finished)

    def _end(self) -> None:
        if self._ended:
            return
        self._ended = True
        self.duration = time.perf_counter() - self.start
        _each("end", self)

    @property
    def partition_ids(self) -> set[int]:
        """The partitions the operation's messages are in (send: from the sequence numbers)."""
        if self.type == "send":
            return {int(s) >> 40 for s in self.result or () if s}
        return {m.partition_id for m in self.messages if hasattr(m, "partition_id")}


def operation(name: str, entity: str, messages: Iterable[Any] = ()) -> Op:
    """The operation to wrap around `name` on `entity` (the shared no-op while nothing is installed)."""
    if not enabled:
        return NOOP
    return Operation(name, entity, list(messages))


def created(message: Any, entity: str) -> None:
    if enabled:
        _each("created", message, entity)


def lock_lost(entity: str, operation: str, count: int) -> None:
    if enabled:
        _each("lock_lost", entity, "renew_message_lock" if operation == "renew" else operation, count)


def install(sink: Sink) -> Sink:
    """Start reporting to `sink` (installing the same sink twice is a no-op); returns it."""
    global enabled, _sinks
    if sink not in _sinks:
        _sinks = (*_sinks, sink)
    enabled = True
    return sink


def uninstall(sink: Sink) -> None:
    """Stop reporting to `sink`; with no sink left the seam is off again."""
    global enabled, _sinks
    _sinks = tuple(s for s in _sinks if s is not sink)
    enabled = bool(_sinks)


def installed() -> tuple[Sink, ...]:
    return _sinks


def _each(hook: str, *args: Any) -> None:
    for sink in _sinks:
        try:
            getattr(sink, hook)(*args)
        except Exception:
            first = type(sink) not in _warned
            _warned.add(type(sink))
            log.log(
                logging.WARNING if first else logging.DEBUG, "%s.%s failed", type(sink).__name__, hook, exc_info=True
            )
