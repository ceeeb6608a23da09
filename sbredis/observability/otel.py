"""OpenTelemetry spans for sbredis operations (the ``otel`` extra: ``pip install sbredis[otel]``).

``enable()`` installs a sink on the instrumentation seam (sbredis/_core/instrument.py); spans
follow the OpenTelemetry messaging semantic conventions with ``messaging.system="sbredis"``:

* ``send <queue>`` / ``schedule <queue>`` (PRODUCER), around each send call. A message without
  trace context gets one in its application properties (``traceparent``, ``tracestate``,
  ``Diagnostic-Id`` as the Azure SDK writes it): the send span's own for a single message, or a
  ``create <queue>`` span of its own for each message of a batch, which the send span links to.
  An existing ``traceparent`` is never overwritten. Nothing is added while no tracer records.
* ``receive <queue>`` (CLIENT), for receive calls that returned messages or failed (empty polls
  make no span), linked to the creation context of every message received.
* ``complete|abandon|defer|dead_letter <queue>`` (CLIENT, ``messaging.operation.type=settle``,
  ``messaging.servicebus.disposition_status``); the current span is their parent (in the worker:
  the process span).
* ``process <queue>`` (CONSUMER), in the worker (sbredis.worker): the handler and its
  settlement; its parent is the message's creation context (linked as well), and it is the
  current span while the handler runs (also on the worker's threads).

Subscriptions report ``messaging.destination.name=<topic>`` and
``messaging.destination.subscription.name=<subscription>``. The spans carry no message bodies and
no property values other than the message id.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from opentelemetry import context, trace
from opentelemetry.trace import Link, Span, SpanKind, StatusCode

from .. import __version__
from .._core import instrument
from .._core.keys import SUBSCRIPTIONS
from ..exceptions import InvalidOperationError

SYSTEM = "sbredis"
TRACEPARENT, TRACESTATE, DIAGNOSTIC_ID = "traceparent", "tracestate", "Diagnostic-Id"
KINDS = {
    "send": SpanKind.PRODUCER,
    "create": SpanKind.PRODUCER,
    "receive": SpanKind.CLIENT,
    "settle": SpanKind.CLIENT,
    "process": SpanKind.CONSUMER,
    "": SpanKind.CLIENT,
}


def destination(entity: str) -> dict[str, str]:
    """``messaging.destination.name`` (and ``.subscription.name``) of an entity path."""
    topic, sep, sub = entity.partition(SUBSCRIPTIONS)
    if sep:
        return {"messaging.destination.name": topic, "messaging.destination.subscription.name": sub}
    return {"messaging.destination.name": entity}


def creation_context(message: Any) -> trace.SpanContext | None:
    """The span context a message carries in its application properties (W3C ``traceparent``, or
    ``Diagnostic-Id``); None when it has none or it does not parse."""
    props = message.sent_application_properties
    if not props:
        return None
    parent = props.get(TRACEPARENT) or props.get(DIAGNOSTIC_ID)
    if not isinstance(parent, str) or len(parent) < 55:
        return None
    version, trace_id, span_id, flags = parent[:2], parent[3:35], parent[36:52], parent[53:55]
    if version == "ff" or parent[2] != "-" or parent[35] != "-" or parent[52] != "-":
        return None
    try:
        state = props.get(TRACESTATE)
        ctx = trace.SpanContext(
            int(trace_id, 16),
            int(span_id, 16),
            is_remote=True,
            trace_flags=trace.TraceFlags(int(flags, 16)),
            trace_state=trace.TraceState.from_header([state]) if isinstance(state, str) and state else None,
        )
    except ValueError:
        return None
    return ctx if ctx.is_valid else None


def _has_context(message: Any) -> bool:
    props = message.sent_application_properties
    return bool(props) and (TRACEPARENT in props or DIAGNOSTIC_ID in props)


def _inject(message: Any, span: Span) -> None:
    """Put `span`'s context in the message's application properties (unless it has one)."""
    if not span.get_span_context().is_valid or _has_context(message):
        return
    ctx = span.get_span_context()
    carrier = {TRACEPARENT: f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-{int(ctx.trace_flags):02x}"}
    state = ctx.trace_state.to_header() if ctx.trace_state else ""
    if state:
        carrier[TRACESTATE] = state
    props = dict(message.sent_application_properties or {})
    props[DIAGNOSTIC_ID] = carrier[TRACEPARENT]
    props.update(carrier)
    try:
        message.application_properties = props
    except InvalidOperationError:  # a received message being sent again keeps what it has
        pass


def _links(messages: Iterable[Any]) -> list[Link]:
    return [Link(c) for c in map(creation_context, messages) if c is not None]


def error_type(error: BaseException) -> str:
    """``error.type``: the exception's class name (module-qualified outside sbredis)."""
    cls = type(error)
    if cls.__module__.startswith("sbredis") or cls.__module__ == "builtins":
        return cls.__qualname__
    return f"{cls.__module__}.{cls.__qualname__}"


class OpenTelemetrySink(instrument.Sink):
    """Spans for the seam's operations (see the module docstring)."""

    def __init__(self, tracer_provider: trace.TracerProvider | None = None) -> None:
        self.tracer = trace.get_tracer("sbredis", __version__, tracer_provider=tracer_provider)

    def _attributes(self, op: instrument.Operation) -> dict[str, Any]:
        attrs: dict[str, Any] = {"messaging.system": SYSTEM, "messaging.operation.name": op.name}
        if op.type:
            attrs["messaging.operation.type"] = op.type
        attrs.update(destination(op.entity))
        if op.type == "settle":
            attrs["messaging.servicebus.disposition_status"] = op.name
        return attrs

    def _finish(self, span: Span, op: instrument.Operation) -> None:
        """The attributes known at the end, the error, and the end itself."""
        if op.count == 1:
            m = op.messages[0]
            if m.message_id is not None:
                span.set_attribute("messaging.message.id", m.id_text or "")
            deliveries = getattr(m, "delivery_count", None)
            if op.type in ("receive", "process") and isinstance(deliveries, int) and deliveries > 0:
                span.set_attribute("messaging.servicebus.message.delivery_count", deliveries)
        if op.count != 1 or op.type == "receive":  # receive_messages is a batch API
            span.set_attribute("messaging.batch.message_count", op.count)
        partitions = op.partition_ids
        if len(partitions) == 1:
            span.set_attribute("messaging.destination.partition.id", str(next(iter(partitions))))
        if op.error is not None:
            span.set_attribute("error.type", error_type(op.error))
            span.set_status(StatusCode.ERROR, type(op.error).__name__)
        span.end()

    def begin(self, op: instrument.Operation) -> None:
        if op.type == "send":
            self._begin_send(op)
        elif op.type == "process":
            parent = creation_context(op.messages[0]) if op.messages else None
            ctx = trace.set_span_in_context(trace.NonRecordingSpan(parent)) if parent else None
            span = self.tracer.start_span(
                f"process {destination(op.entity)['messaging.destination.name']}",
                context=ctx,
                kind=SpanKind.CONSUMER,
                attributes=self._attributes(op),
                links=[Link(parent)] if parent else None,
            )
            op.state[self] = (span, context.attach(trace.set_span_in_context(span)))

    def _begin_send(self, op: instrument.Operation) -> None:
        name = destination(op.entity)["messaging.destination.name"]
        links = None
        if op.count > 1:  # each message gets its own creation context, linked from the send span
            links = [Link(c) for c in (self._create(m, op.entity) for m in op.messages) if c is not None]
        span = self.tracer.start_span(
            f"{op.name} {name}", kind=SpanKind.PRODUCER, attributes=self._attributes(op), links=links
        )
        if op.count == 1:
            _inject(op.messages[0], span)
        op.state[self] = (span, None)

    def end(self, op: instrument.Operation) -> None:
        started = op.state.pop(self, None)
        if started is not None:
            span, token = started
            if token is not None:
                context.detach(token)
            self._finish(span, op)
            return
        if op.type in ("send", "process"):
            return  # began before this sink was installed
        if op.type == "receive" and not op.messages and op.error is None:
            return  # an empty poll
        name = destination(op.entity)["messaging.destination.name"]
        span = self.tracer.start_span(
            f"{op.name} {name}",
            kind=KINDS.get(op.type, SpanKind.CLIENT),
            attributes=self._attributes(op),
            links=_links(op.messages) if op.type == "receive" else None,
            start_time=op.start_ns,
        )
        self._finish(span, op)

    def created(self, message: Any, entity: str) -> None:
        self._create(message, entity)

    def _create(self, message: Any, entity: str) -> trace.SpanContext | None:
        """A ``create`` span for a message without trace context; returns its creation context."""
        if _has_context(message):
            return creation_context(message)
        name = destination(entity)["messaging.destination.name"] if entity else ""
        attrs: dict[str, Any] = {"messaging.system": SYSTEM, "messaging.operation.name": "create"}
        attrs["messaging.operation.type"] = "create"
        if entity:
            attrs.update(destination(entity))
        if message.message_id is not None:
            attrs["messaging.message.id"] = message.id_text or ""
        span = self.tracer.start_span(f"create {name}".strip(), kind=SpanKind.PRODUCER, attributes=attrs)
        _inject(message, span)
        span.end()
        return span.get_span_context()


_sink: OpenTelemetrySink | None = None


def enable(tracer_provider: trace.TracerProvider | None = None) -> OpenTelemetrySink:
    """Trace sbredis operations with `tracer_provider` (default: the global one); returns the sink.
    Calling it again replaces the sink (another provider)."""
    global _sink
    disable()
    _sink = OpenTelemetrySink(tracer_provider)
    instrument.install(_sink)
    return _sink


def disable() -> None:
    """Stop tracing sbredis operations."""
    global _sink
    if _sink is not None:
        instrument.uninstall(_sink)
        _sink = None
