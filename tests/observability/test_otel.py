"""OpenTelemetry spans through the real SDK (InMemorySpanExporter) on a real redis-server:
send -> receive -> settle, batches, trace context in application properties, the worker's process
span, subscriptions, errors, and nothing at all while tracing is off."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from sbredis import ServiceBusMessage
from sbredis._core import instrument
from sbredis.aio import ServiceBusClient as AsyncClient
from sbredis.exceptions import MessagingEntityNotFoundError
from sbredis.observability import otel
from sbredis.worker import Worker
from tests.conftest import eventually

pytestmark = pytest.mark.integration


class Traced:
    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer("test")

    def spans(self, name: str | None = None) -> list[ReadableSpan]:
        return [s for s in self.exporter.get_finished_spans() if name is None or s.name == name]

    def one(self, name: str) -> ReadableSpan:
        found = self.spans(name)
        assert len(found) == 1, f"{len(found)} spans named {name!r}: {[s.name for s in self.spans()]}"
        return found[0]


@pytest.fixture()
def traced() -> Iterator[Traced]:
    t = Traced()
    otel.enable(t.provider)
    yield t
    otel.disable()
    assert not instrument.enabled


def traceparent(span: ReadableSpan) -> str:
    ctx = span.get_span_context()
    assert ctx is not None
    return f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-{int(ctx.trace_flags):02x}"


def links_of(span: ReadableSpan) -> set[int]:
    return {link.context.span_id for link in span.links}


def test_send_receive_complete(traced: Traced, client: Any, make_queue: Callable[..., str]) -> None:
    q = make_queue()
    with traced.tracer.start_as_current_span("app") as app, client.get_queue_sender(q) as sender:
        sender.send_messages(ServiceBusMessage("hello", message_id="m-1"))
    with client.get_queue_receiver(q, max_wait_time=2) as receiver:
        (m,) = receiver.receive_messages(5)
        receiver.complete_message(m)

    send = traced.one(f"send {q}")
    assert send.kind is SpanKind.PRODUCER
    assert send.parent is not None and send.parent.span_id == app.get_span_context().span_id
    assert dict(send.attributes or {}) == {
        "messaging.system": "sbredis",
        "messaging.operation.name": "send",
        "messaging.operation.type": "send",
        "messaging.destination.name": q,
        "messaging.message.id": "m-1",
        "messaging.destination.partition.id": str(m.partition_id),
    }
    # the send span's context travelled in the message
    props = m.sent_application_properties or {}
    assert props["traceparent"] == traceparent(send) == props["Diagnostic-Id"]

    receive = traced.one(f"receive {q}")
    assert receive.kind is SpanKind.CLIENT
    attrs = dict(receive.attributes or {})
    assert attrs["messaging.operation.type"] == "receive" and attrs["messaging.batch.message_count"] == 1
    assert attrs["messaging.message.id"] == "m-1"
    assert links_of(receive) == {send.get_span_context().span_id}

    complete = traced.one(f"complete {q}")
    attrs = dict(complete.attributes or {})
    assert complete.kind is SpanKind.CLIENT
    assert attrs["messaging.operation.type"] == "settle"
    assert attrs["messaging.servicebus.disposition_status"] == "complete"
    assert attrs["messaging.message.id"] == "m-1"
    assert complete.parent is None and not complete.links  # no span was current; receive spans carry the links
    assert complete.end_time is not None and receive.end_time is not None and send.start_time is not None
    assert send.start_time <= receive.start_time <= complete.start_time  # type: ignore[operator]


def test_batches_get_a_creation_context_per_message(
    traced: Traced, client: Any, make_queue: Callable[..., str]
) -> None:
    q = make_queue()
    with client.get_queue_sender(q) as sender:
        batch = sender.create_message_batch()
        for i in range(3):
            batch.add_message(ServiceBusMessage(f"b{i}"))
        sender.send_messages(batch)
        sender.send_messages([ServiceBusMessage("l0"), ServiceBusMessage("l1")])
    with client.get_queue_receiver(q, max_wait_time=2) as receiver:
        got = []
        while len(got) < 5:
            got += receiver.receive_messages(10, max_wait_time=2)
        receiver.dead_letter_messages(got[:2], reason="test")
        receiver.abandon_messages(got[2:])

    creates = traced.spans(f"create {q}")
    assert len(creates) == 5 and all(s.kind is SpanKind.PRODUCER for s in creates)
    by_parent = {traceparent(s): s for s in creates}
    assert {(m.sent_application_properties or {})["traceparent"] for m in got} == set(by_parent)
    sends = traced.spans(f"send {q}")
    assert sorted(dict(s.attributes or {})["messaging.batch.message_count"] for s in sends) == [2, 3]
    assert set().union(*(links_of(s) for s in sends)) == {s.get_span_context().span_id for s in creates}
    receives = traced.spans(f"receive {q}")
    assert sum(dict(s.attributes or {})["messaging.batch.message_count"] for s in receives) == 5
    dead = traced.one(f"dead_letter {q}")
    abandon = traced.one(f"abandon {q}")
    assert dict(dead.attributes or {})["messaging.servicebus.disposition_status"] == "dead_letter"
    assert dict(dead.attributes or {})["messaging.batch.message_count"] == 2
    assert dict(abandon.attributes or {})["messaging.servicebus.disposition_status"] == "abandon"
    assert dict(abandon.attributes or {})["messaging.batch.message_count"] == 3


def test_an_existing_traceparent_is_kept(traced: Traced, client: Any, make_queue: Callable[..., str]) -> None:
    q = make_queue()
    theirs = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    with client.get_queue_sender(q) as sender:
        sender.send_messages(ServiceBusMessage("x", application_properties={"traceparent": theirs, "k": 1}))
    with client.get_queue_receiver(q, max_wait_time=2) as receiver:
        (m,) = receiver.receive_messages(1)
        receiver.complete_message(m)
    assert m.sent_application_properties == {"traceparent": theirs, "k": 1}
    receive = traced.one(f"receive {q}")
    assert [f"{link.context.trace_id:032x}" for link in receive.links] == ["0af7651916cd43dd8448eb211c80319c"]


def test_schedule_and_a_failing_send(traced: Traced, client: Any, make_queue: Callable[..., str]) -> None:
    q = make_queue()
    with client.get_queue_sender(q) as sender:
        sender.schedule_messages(ServiceBusMessage("later"), datetime.now(UTC) + timedelta(hours=1))
    schedule = traced.one(f"schedule {q}")
    assert dict(schedule.attributes or {})["messaging.operation.type"] == "send"
    with client.get_queue_sender("no-such-queue") as sender, pytest.raises(MessagingEntityNotFoundError):
        sender.send_messages(ServiceBusMessage("x"))
    failed = traced.one("send no-such-queue")
    assert failed.status.status_code is StatusCode.ERROR
    assert dict(failed.attributes or {})["error.type"] == "MessagingEntityNotFoundError"


def test_subscription_spans_name_topic_and_subscription(traced: Traced, client: Any, admin: Any) -> None:
    admin.create_topic("otel-t")
    try:
        admin.create_subscription("otel-t", "audit")
        with client.get_topic_sender("otel-t") as sender:
            sender.send_messages(ServiceBusMessage("x"))
        with client.get_subscription_receiver("otel-t", "audit", max_wait_time=2) as receiver:
            (m,) = receiver.receive_messages(1)
            receiver.complete_message(m)
    finally:
        admin.delete_topic("otel-t")
    send = traced.one("send otel-t")
    receive = traced.one("receive otel-t")
    attrs = dict(receive.attributes or {})
    assert attrs["messaging.destination.name"] == "otel-t"
    assert attrs["messaging.destination.subscription.name"] == "audit"
    assert links_of(receive) == {send.get_span_context().span_id}


def test_async_client_spans(traced: Traced, url: str, make_queue: Callable[..., str]) -> None:
    q = make_queue()

    async def scenario() -> None:
        async with AsyncClient.from_connection_string(url) as client:
            sender = client.get_queue_sender(q)
            with traced.tracer.start_as_current_span("app"):
                await asyncio.gather(*(sender.send_messages(ServiceBusMessage(str(i))) for i in range(4)))
            receiver = client.get_queue_receiver(q, max_wait_time=2)
            got = []
            while len(got) < 4:
                got += await receiver.receive_messages(4)
            await asyncio.gather(*(receiver.complete_message(m) for m in got))

    asyncio.run(scenario())
    sends = traced.spans(f"send {q}")
    assert len(sends) == 4  # one per call, though the calls were coalesced into one script call
    app = traced.one("app")
    assert all(s.parent is not None and s.parent.span_id == app.get_span_context().span_id for s in sends)
    assert len(traced.spans(f"complete {q}")) == 4


@pytest.mark.parametrize("threaded", [False, True], ids=["async-handler", "thread-handler"])
def test_worker_process_span_continues_the_send_trace(
    traced: Traced, url: str, client: Any, make_queue: Callable[..., str], threaded: bool
) -> None:
    q = make_queue()
    inner: list[Any] = []

    def work(message: Any) -> None:
        with traced.tracer.start_as_current_span("handler work") as span:
            inner.append(span.get_span_context())
        if message.body_bytes == b"fail":
            raise ValueError("no")

    async def awork(message: Any) -> None:
        work(message)

    with client.get_queue_sender(q) as sender:
        sender.send_messages(ServiceBusMessage("ok"))
        sender.send_messages(ServiceBusMessage("fail"))
    worker = Worker(url, work if threaded else awork, entity=q, poll_interval=0.2, dead_letter_on=ValueError)
    thread = threading.Thread(target=worker.run, kwargs={"handle_signals": False}, daemon=True)
    thread.start()
    try:
        eventually(lambda: len(traced.spans(f"process {q}")) == 2, timeout=10)
    finally:
        worker.stop()
        thread.join(10)

    sends = {s.get_span_context().span_id: s for s in traced.spans(f"send {q}")}
    for process in traced.spans(f"process {q}"):
        assert process.kind is SpanKind.CONSUMER
        assert process.parent is not None and process.parent.span_id in sends
        send = sends[process.parent.span_id]
        assert process.context.trace_id == send.context.trace_id
        assert links_of(process) == {send.context.span_id}
        assert dict(process.attributes or {})["messaging.operation.type"] == "process"
        children = [s for s in traced.spans() if s.parent is not None and s.parent.span_id == process.context.span_id]
        names = sorted(s.name for s in children)
        assert "handler work" in names, names
        assert f"complete {q}" in names or f"dead_letter {q}" in names, names
        if process.status.status_code is StatusCode.ERROR:
            assert dict(process.attributes or {})["error.type"] == "ValueError"
            assert f"dead_letter {q}" in names
    assert len(inner) == 2
    statuses = sorted(p.status.status_code.name for p in traced.spans(f"process {q}"))
    assert statuses == ["ERROR", "UNSET"]


def test_nothing_is_added_while_no_tracer_records(client: Any, make_queue: Callable[..., str]) -> None:
    q = make_queue()
    otel.enable(trace.NoOpTracerProvider())
    try:
        with client.get_queue_sender(q) as sender:
            batch = sender.create_message_batch()
            batch.add_message(ServiceBusMessage("a"))
            sender.send_messages(batch)
            sender.send_messages(ServiceBusMessage("b"))
    finally:
        otel.disable()
    with client.get_queue_receiver(q, max_wait_time=2) as receiver:
        got = receiver.receive_messages(2) + receiver.receive_messages(2, max_wait_time=1)
        receiver.complete_messages(got)
    assert len(got) == 2 and all(m.sent_application_properties is None for m in got)


def test_disabled_means_no_spans(client: Any, make_queue: Callable[..., str]) -> None:
    t = Traced()
    otel.enable(t.provider)
    otel.disable()
    q = make_queue()
    with client.get_queue_sender(q) as sender:
        sender.send_messages(ServiceBusMessage("x"))
    assert t.spans() == [] and not instrument.enabled


def test_worker_on_a_subscription_names_topic_and_subscription(
    traced: Traced, url: str, client: Any, admin: Any
) -> None:
    admin.create_topic("otel-wt")
    try:
        admin.create_subscription("otel-wt", "jobs")
        with client.get_topic_sender("otel-wt") as sender:
            sender.send_messages(ServiceBusMessage("x"))

        async def handle(message: Any) -> None:
            return None

        worker = Worker(url, handle, entity="otel-wt", subscription="jobs", poll_interval=0.2)
        thread = threading.Thread(target=worker.run, kwargs={"handle_signals": False}, daemon=True)
        thread.start()
        try:
            eventually(lambda: traced.spans("process otel-wt"), timeout=10)
        finally:
            worker.stop()
            thread.join(10)
    finally:
        admin.delete_topic("otel-wt")
    (process,) = traced.spans("process otel-wt")
    attrs = dict(process.attributes or {})
    assert attrs["messaging.destination.name"] == "otel-wt"
    assert attrs["messaging.destination.subscription.name"] == "jobs"
    assert process.parent is not None and process.parent.span_id == traced.one("send otel-wt").context.span_id
