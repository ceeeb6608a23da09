"""Prometheus client metrics for sbredis operations (the ``prometheus`` extra).

``enable()`` registers these in a prometheus_client registry (default: the global one) and
installs a sink on the instrumentation seam (sbredis/_core/instrument.py). Serve them with
``prometheus_client.start_http_server(port)`` or ``sbredis metrics`` (sbredis/observability/exporter.py,
which adds per-entity gauges). Labels are low-cardinality: entity (a queue, topic or
``<topic>/Subscriptions/<subscription>`` path), operation, disposition and outcome (``ok``,
``lock_lost`` for a lost message or session lock, or the sbredis exception's class name;
``error`` for other exceptions, such as a worker handler's). Never a message id.

* ``sbredis_client_operation_duration_seconds{operation,entity,outcome}`` histogram: send, schedule,
  receive (calls that returned messages or failed; empty polls are not observed), complete, abandon,
  defer, dead_letter, renew_message_lock, process (the worker's handler plus settlement).
* ``sbredis_client_sent_messages_total{entity,outcome}``: messages per send/schedule call.
* ``sbredis_client_received_messages_total{entity}``: messages handed out by receive calls.
* ``sbredis_client_settled_messages_total{entity,disposition,outcome}``: complete, abandon, defer,
  dead_letter; ``outcome="lock_lost"`` counts the messages whose locks were lost, the rest of
  such a call count as ``ok``.
* ``sbredis_client_lock_lost_total{entity,operation}``: messages found with a lost lock, by the
  settlement or renewal (``renew_message_lock``, also the AutoLockRenewer's) that found it.
"""

from __future__ import annotations

from typing import Any

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Histogram

from .._core import instrument
from ..exceptions import MessageLockLostError, ServiceBusError, SessionLockLostError

LOCK_LOST = (MessageLockLostError, SessionLockLostError)

BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


def outcome_of(error: BaseException | None) -> str:
    """A low-cardinality outcome label for an operation's error."""
    if error is None:
        return "ok"
    if isinstance(error, LOCK_LOST):
        return "lock_lost"
    if isinstance(error, ServiceBusError):
        return type(error).__name__
    return "error"


class PrometheusSink(instrument.Sink):
    """Client counters and the operation-duration histogram, registered in `registry`."""

    def __init__(self, registry: CollectorRegistry = REGISTRY) -> None:
        self.registry = registry
        self._children: dict[tuple[int, tuple[str, ...]], Any] = {}
        self.duration = Histogram(
            "sbredis_client_operation_duration_seconds",
            "Duration of sbredis client operations",
            ["operation", "entity", "outcome"],
            buckets=BUCKETS,
            registry=registry,
        )
        self.sent = Counter(
            "sbredis_client_sent_messages", "Messages sent (and scheduled)", ["entity", "outcome"], registry=registry
        )
        self.received = Counter(
            "sbredis_client_received_messages", "Messages handed out by receive calls", ["entity"], registry=registry
        )
        self.settled = Counter(
            "sbredis_client_settled_messages",
            "Messages settled, by disposition",
            ["entity", "disposition", "outcome"],
            registry=registry,
        )
        self.locks_lost = Counter(
            "sbredis_client_lock_lost", "Messages whose lock was found lost", ["entity", "operation"], registry=registry
        )

    def _child(self, metric: Any, *labels: str) -> Any:
        """metric.labels(*labels), remembered (prometheus_client's lookup costs microseconds)."""
        key = (id(metric), labels)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*labels)
        return child

    def end(self, op: instrument.Operation) -> None:
        if op.type == "receive" and not op.messages and op.error is None:
            return  # an empty poll: its duration is the wait, not the work
        outcome = outcome_of(op.error)
        self._child(self.duration, op.name, op.entity, outcome).observe(op.duration)
        if op.type == "send":
            self._child(self.sent, op.entity, outcome).inc(op.count)
        elif op.type == "receive":
            self._child(self.received, op.entity).inc(op.count)
        elif op.type == "settle":
            lost = len(op.error.messages) if isinstance(op.error, LOCK_LOST) else 0
            if lost:
                self._child(self.settled, op.entity, op.name, "lock_lost").inc(lost)
                if op.count > lost:
                    self._child(self.settled, op.entity, op.name, "ok").inc(op.count - lost)
            else:
                self._child(self.settled, op.entity, op.name, outcome).inc(op.count)

    def lock_lost(self, entity: str, operation: str, count: int) -> None:
        self._child(self.locks_lost, entity, operation).inc(count)

    def unregister(self) -> None:
        for metric in (self.duration, self.sent, self.received, self.settled, self.locks_lost):
            self.registry.unregister(metric)


_sink: PrometheusSink | None = None


def enable(registry: CollectorRegistry | None = None) -> PrometheusSink:
    """Count sbredis operations in `registry` (default: prometheus_client's global REGISTRY);
    returns the sink. Enabling again returns the sink already installed for that registry, or
    moves the metrics to the new one."""
    global _sink
    target = REGISTRY if registry is None else registry
    if _sink is not None and _sink.registry is target:
        return _sink
    disable()
    _sink = PrometheusSink(target)
    instrument.install(_sink)
    return _sink


def installed_for() -> CollectorRegistry | None:
    """The registry the client metrics are counted in (None while disabled)."""
    return None if _sink is None else _sink.registry


def disable() -> None:
    """Stop counting and remove the client metrics from their registry."""
    global _sink
    if _sink is not None:
        instrument.uninstall(_sink)
        _sink.unregister()
        _sink = None
