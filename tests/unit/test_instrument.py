"""The instrumentation seam (sbredis/_core/instrument.py): off by default, sinks see operations
begin and end with their error, a failing sink never breaks an operation."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest

from sbredis._core import instrument
from sbredis.exceptions import ServiceBusConnectionError


class Recorder(instrument.Sink):
    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []

    def begin(self, op: instrument.Operation) -> None:
        self.events.append(("begin", op.name, op.type, op.entity, op.count))

    def end(self, op: instrument.Operation) -> None:
        self.events.append(("end", op.name, type(op.error).__name__ if op.error else None, op.duration >= 0))

    def lock_lost(self, entity: str, operation: str, count: int) -> None:
        self.events.append(("lock_lost", entity, operation, count))


class Broken(instrument.Sink):
    def begin(self, op: instrument.Operation) -> None:
        raise RuntimeError("sink bug")

    def end(self, op: instrument.Operation) -> None:
        raise RuntimeError("sink bug")


@pytest.fixture()
def recorder() -> Iterator[Recorder]:
    r = instrument.install(Recorder())
    assert isinstance(r, Recorder)
    yield r
    instrument.uninstall(r)
    assert not instrument.enabled


def test_off_by_default_hands_out_the_shared_noop() -> None:
    assert not instrument.enabled and instrument.installed() == ()
    op = instrument.operation("send", "q", [1, 2])
    assert op is instrument.NOOP
    with op as o:
        o.done([1])
        o.fail(ValueError())


def test_a_sink_sees_begin_end_and_the_error(recorder: Recorder) -> None:
    with instrument.operation("send", "q", ["m"]) as op:
        op.done([5 << 40 | 1])
    assert isinstance(op, instrument.Operation) and op.partition_ids == {5}
    with pytest.raises(ServiceBusConnectionError), instrument.operation("complete", "q", ["a", "b"]):
        raise ServiceBusConnectionError("down")
    with instrument.operation("process", "q", ["m"]) as op:
        op.fail(KeyError("handler"))
    instrument.lock_lost("q", "renew", 2)
    assert recorder.events == [
        ("begin", "send", "send", "q", 1),
        ("end", "send", None, True),
        ("begin", "complete", "settle", "q", 2),
        ("end", "complete", "ServiceBusConnectionError", True),
        ("begin", "process", "process", "q", 1),
        ("end", "process", "KeyError", True),
        ("lock_lost", "q", "renew_message_lock", 2),
    ]


def test_receive_results_become_the_messages(recorder: Recorder) -> None:
    with instrument.operation("receive", "q") as op:
        op.done(["m1", "m2"])
    assert isinstance(op, instrument.Operation) and op.messages == ["m1", "m2"] and op.count == 2


def test_a_followed_operation_ends_with_its_future(recorder: Recorder) -> None:
    class Future:
        def __init__(self) -> None:
            self.callbacks: list[Any] = []

        def add_done_callback(self, fn: Any) -> None:
            self.callbacks.append(fn)

        def cancelled(self) -> bool:
            return False

        def exception(self) -> BaseException | None:
            return ServiceBusConnectionError("later")

    fut = Future()
    with instrument.operation("send", "q", ["m"]) as op:
        op.follow(fut)
    assert [e[0] for e in recorder.events] == ["begin"]
    fut.callbacks[0](fut)
    fut.callbacks[0](fut)  # ends once
    assert recorder.events[1:] == [("end", "send", "ServiceBusConnectionError", True)]


def test_a_failing_sink_is_logged_once_and_never_breaks_the_operation(
    recorder: Recorder, caplog: pytest.LogCaptureFixture
) -> None:
    broken = instrument.install(Broken())
    caplog.set_level(logging.DEBUG, logger="sbredis.observability")
    try:
        for _ in range(3):
            with instrument.operation("send", "q", ["m"]) as op:
                op.done([1])
    finally:
        instrument.uninstall(broken)
    assert [e[0] for e in recorder.events] == ["begin", "end"] * 3  # the other sink still saw everything
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "Broken.begin failed" in warnings[0].getMessage()


def test_installing_twice_is_one_sink(recorder: Recorder) -> None:
    instrument.install(recorder)
    assert instrument.installed().count(recorder) == 1
