"""The trace context sbredis reads from application properties (no server: message objects only)."""

from __future__ import annotations

import pytest
from opentelemetry.trace import TraceFlags

from sbredis import ServiceBusMessage
from sbredis.observability.otel import creation_context

TRACE, SPAN = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"


def message(**props: object) -> ServiceBusMessage:
    return ServiceBusMessage("x", application_properties=props)


def test_traceparent_and_tracestate_are_read() -> None:
    ctx = creation_context(message(traceparent=f"00-{TRACE}-{SPAN}-01", tracestate="vendor=1,other=2"))
    assert ctx is not None and ctx.is_remote
    assert (f"{ctx.trace_id:032x}", f"{ctx.span_id:016x}") == (TRACE, SPAN)
    assert ctx.trace_flags == TraceFlags.SAMPLED
    assert dict(ctx.trace_state) == {"vendor": "1", "other": "2"}


def test_diagnostic_id_is_read_when_there_is_no_traceparent() -> None:
    ctx = creation_context(message(**{"Diagnostic-Id": f"00-{TRACE}-{SPAN}-00"}))
    assert ctx is not None and f"{ctx.span_id:016x}" == SPAN and ctx.trace_flags == TraceFlags.DEFAULT


@pytest.mark.parametrize(
    "value",
    [
        "",
        "garbage",
        f"00-{TRACE}-{SPAN}",  # no flags
        f"ff-{TRACE}-{SPAN}-01",  # the invalid version
        f"00-{'0' * 32}-{SPAN}-01",  # all-zero trace id
        f"00-{TRACE}-{'0' * 16}-01",  # all-zero span id
        f"00-{TRACE[:-1]}x-{SPAN}-01",  # not hex
        f"00_{TRACE}_{SPAN}_01",
        12345,
    ],
)
def test_malformed_trace_context_is_ignored(value: object) -> None:
    assert creation_context(message(traceparent=value)) is None


def test_no_properties_no_context() -> None:
    assert creation_context(ServiceBusMessage("x")) is None
