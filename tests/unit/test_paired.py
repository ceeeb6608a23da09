"""Paired namespaces, sans-IO: options, the failover timer, pings, the rotation, property moves."""

from __future__ import annotations

import ast
import asyncio
import inspect
import logging
import random
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from sbredis import SendAvailabilityPairedNamespaceOptions, ServiceBusMessage
from sbredis._core.entity import TIMESPAN_MAX, build_queue
from sbredis._core.fanout import TopicMeta, TopicSubs
from sbredis._core.ops import EntityMeta
from sbredis.exceptions import (
    InvalidArgumentError,
    InvalidOperationError,
    MessageSizeExceededError,
    MessagingEntityDisabledError,
    MessagingEntityNotFoundError,
    OperationTimeoutError,
    ServiceBusAuthenticationError,
    ServiceBusConnectionError,
    ServiceBusError,
    ServiceBusQuotaExceededError,
    ServiceBusServerBusyError,
)
from sbredis.paired import _core as paired
from sbredis.paired._background import AsyncBackground, Background

SECONDARY = "redis://127.0.0.1:6390/0"


def options(**kwargs: object) -> SendAvailabilityPairedNamespaceOptions:
    return SendAvailabilityPairedNamespaceOptions(secondary=SECONDARY, **kwargs)  # type: ignore[arg-type]


# ------------------------------------------------------------------ options
def test_options_defaults_are_the_references() -> None:
    o = options()
    assert o.backlog_queue_count == 10
    assert o.failover_interval == timedelta(minutes=1)
    assert o.ping_primary_interval == timedelta(minutes=1)
    assert o.enable_syphon is False


def test_options_take_seconds_and_zero_failover_interval() -> None:
    o = options(failover_interval=0, ping_primary_interval=0.25, syphon_poll_interval=2)
    assert o.failover_interval == timedelta(0)
    assert o.ping_primary_interval == timedelta(milliseconds=250)
    assert o.syphon_poll_interval == timedelta(seconds=2)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"backlog_queue_count": 0},
        {"backlog_queue_count": True},
        {"backlog_queue_count": 1.5},
        {"failover_interval": -1},
        {"ping_primary_interval": 0},
        {"ping_primary_interval": "1m"},
        {"enable_syphon": 1},
    ],
)
def test_bad_options_raise_before_anything_runs(kwargs: dict[str, object]) -> None:
    with pytest.raises(InvalidArgumentError):
        options(**kwargs)


def test_secondary_must_be_a_url() -> None:
    with pytest.raises(InvalidArgumentError):
        SendAvailabilityPairedNamespaceOptions(secondary="localhost")


@pytest.mark.parametrize("api", ["sync", "async"], indirect=True)
def test_pairing_options_are_refused_with_a_typed_error_by_either_client(sb_api: Any) -> None:
    primary = "redis://127.0.0.1:6391/0"  # nothing is sent: the options are refused first
    with pytest.raises(InvalidArgumentError, match="SendAvailabilityPairedNamespaceOptions"):
        sb_api.ServiceBusClient(primary, paired_namespace={"secondary": SECONDARY})
    with pytest.raises(InvalidArgumentError, match="must not be the primary"):
        sb_api.ServiceBusClient(SECONDARY, paired_namespace=options())
    with sb_api.ServiceBusClient(primary) as unpaired, pytest.raises(InvalidOperationError, match="paired_namespace"):
        unpaired.start_syphon()
    with sb_api.ServiceBusClient(primary, paired_namespace=options()) as c:
        assert repr(c.paired_namespace) == f"PairedNamespace(secondary={SECONDARY})"


# ------------------------------------------------------------------ errors
@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (ServiceBusConnectionError("down"), True),
        (OperationTimeoutError("slow"), True),
        (ServiceBusServerBusyError("loading"), True),
        (ServiceBusQuotaExceededError("Redis is out of memory.", error=Exception), True),
        (ServiceBusQuotaExceededError("The entity is full."), False),
        (MessageSizeExceededError("big"), False),
        (InvalidArgumentError("bad"), False),
        (MessagingEntityNotFoundError("gone"), False),
        (MessagingEntityDisabledError("off"), False),
        (ServiceBusAuthenticationError("no"), False),
        (ServiceBusError("faulted"), False),
    ],
)
def test_which_send_errors_fail_over(error: ServiceBusError, expected: bool) -> None:
    assert paired.fails_over(error) is expected


def test_a_full_or_missing_backlog_queue_leaves_the_rotation_a_too_large_message_does_not() -> None:
    assert paired.leaves_rotation(ServiceBusQuotaExceededError("full"))
    assert paired.leaves_rotation(MessagingEntityNotFoundError("gone"))
    assert paired.leaves_rotation(ServiceBusConnectionError("down"))
    assert not paired.leaves_rotation(MessageSizeExceededError("big"))


def test_undeliverable_syphon_errors() -> None:
    assert paired.undeliverable(MessagingEntityNotFoundError("gone"))
    assert paired.undeliverable(MessageSizeExceededError("big"))
    assert not paired.undeliverable(ServiceBusConnectionError("down"))
    assert not paired.undeliverable(MessagingEntityDisabledError("off"))


# ------------------------------------------------------------------ the failover timer
def test_failover_waits_for_the_interval_with_no_successful_send() -> None:
    st = paired.PairedState(options(failover_interval=10))
    assert not st.diverting("q", 0.0)
    assert st.primary_failed("q", 100.0) is False  # the timer starts
    assert not st.diverting("q", 105.0)
    assert st.primary_failed("q", 109.0) is False
    assert st.primary_failed("q", 110.0) is True  # 10 s without a success
    assert st.diverting("q", 110.5)
    assert st.unavailable == ["q"]
    assert st.metrics.failovers == 1


def test_a_successful_send_resets_the_timer() -> None:
    st = paired.PairedState(options(failover_interval=10))
    st.primary_failed("q", 100.0)
    st.primary_succeeded("q")
    assert st.primary_failed("q", 111.0) is False  # a new timer
    assert st.primary_failed("q", 121.0) is True


def test_the_timer_running_out_diverts_sends_without_trying_the_primary() -> None:
    st = paired.PairedState(options(failover_interval=10))
    st.primary_failed("q", 100.0)
    assert st.diverting("q", 110.0)
    assert st.metrics.failovers == 1


def test_zero_interval_fails_over_at_the_first_failure_and_entities_are_independent() -> None:
    st = paired.PairedState(options(failover_interval=0))
    assert st.primary_failed("a", 1.0) is True
    assert not st.diverting("b", 1.0)


def test_pings_every_interval_while_unavailable_and_a_success_fails_back() -> None:
    st = paired.PairedState(options(failover_interval=0, ping_primary_interval=5))
    assert st.next_ping_in(0.0) is None
    st.primary_failed("q", 10.0)
    assert st.pings_due(12.0) == []
    assert st.next_ping_in(12.0) == pytest.approx(3.0)
    assert st.pings_due(15.0) == ["q"]
    assert st.pings_due(16.0) == []
    assert st.pings_due(20.0) == ["q"]
    st.ping_succeeded("q")
    assert not st.diverting("q", 21.0)
    assert st.next_ping_in(21.0) is None
    assert st.metrics.failbacks == 1


# ------------------------------------------------------------------ the rotation
def test_a_sender_keeps_its_pick_while_it_stays_in_the_rotation() -> None:
    st = paired.PairedState(options(backlog_queue_count=5), rng=random.Random(7))
    first = st.pick(None)
    assert all(st.pick(first) == first for _ in range(20))
    assert st.drop(first)
    assert first not in st.rotation
    again = st.pick(first)
    assert again != first and again in st.rotation
    assert st.metrics.backlog_send_failures == 1


def test_picks_are_spread_over_the_queues() -> None:
    st = paired.PairedState(options(backlog_queue_count=4), rng=random.Random(1))
    assert {st.pick(None) for _ in range(100)} == {0, 1, 2, 3}


def test_the_last_queue_leaving_refills_the_rotation() -> None:
    st = paired.PairedState(options(backlog_queue_count=2))
    assert st.drop(0) is True
    assert st.drop(1) is False
    assert st.rotation == [0, 1]


# ------------------------------------------------------------------ backlog queues
def test_backlog_properties_are_the_references_table() -> None:
    p = build_queue(paired.backlog_name(3), **paired.BACKLOG_PROPERTIES)
    assert p.name == "x-servicebus-transfer/3"
    assert p.max_size_in_megabytes == 5120
    assert p.max_delivery_count == 2**31 - 1
    assert p.default_message_time_to_live == TIMESPAN_MAX
    assert p.auto_delete_on_idle == TIMESPAN_MAX
    assert p.lock_duration == timedelta(minutes=1)
    assert p.dead_lettering_on_message_expiration is True
    assert p.enable_batched_operations is True
    assert paired.backlog_differences(p) == []
    other = build_queue("x-servicebus-transfer/0", max_delivery_count=5)
    assert [d.split("=")[0] for d in paired.backlog_differences(other)] == [
        "max_size_in_megabytes",
        "max_delivery_count",
        "dead_lettering_on_message_expiration",
    ]


def test_a_ping_is_an_empty_send_on_every_partition() -> None:
    calls = paired.ping_calls(EntityMeta("orders", 3, False, 262144))
    assert [(c.script.name, c.partition, c.args) for c in calls] == [("send", p, (0, 1)) for p in range(3)]
    topic = TopicMeta("events", 2, False, 262144, kind="topic", subs={0: TopicSubs()})
    calls = paired.ping_calls(topic)
    assert [(c.script.name, c.args[-1]) for c in calls] == [("publish", 0), ("publish", 0)]
    assert paired.PING_CONTENT_TYPE == "application/vnd.ms-servicebus-ping"  # the reference's name, kept public


# ------------------------------------------------------------------ property moves
def test_properties_move_into_the_backlog_copy_and_back() -> None:
    when = datetime(2031, 5, 6, 7, 8, 9, 123000, tzinfo=UTC)
    m = ServiceBusMessage(
        b"payload",
        session_id="s-1",
        time_to_live=timedelta(seconds=90),
        scheduled_enqueue_time_utc=when,
        message_id="m-1",
        content_type="application/json",
        correlation_id="c",
        subject="subj",
        to="t",
        reply_to="r",
        reply_to_session_id="rs",
        application_properties={"k": 1, "b": b"\x00"},
    )
    copy = paired.to_backlog(m, "orders")
    assert copy.session_id is None and copy.partition_key is None
    assert copy.time_to_live is None and copy.scheduled_enqueue_time_utc is None
    assert copy.ttl_ms == 0 and copy.sched_ms == 0  # nothing expires or waits in a backlog queue
    assert copy.message_id == "m-1"
    assert copy.sent_application_properties == {
        "k": 1,
        "b": b"\x00",
        "x-ms-path": "orders",
        "x-ms-sessionid": "s-1",
        "x-ms-timetolive": timedelta(seconds=90),
        "x-ms-scheduledenqueuetimeutc": when,
    }
    assert m.session_id == "s-1" and m.sent_application_properties == {
        "k": 1,
        "b": b"\x00",
    }  # the original is untouched

    destination, back = paired.from_backlog(_received(copy))
    assert destination == "orders"
    for name in (
        "body_bytes",
        "message_id",
        "session_id",
        "partition_key",
        "time_to_live",
        "scheduled_enqueue_time_utc",
        "content_type",
        "correlation_id",
        "subject",
        "to",
        "reply_to",
        "reply_to_session_id",
        "sent_application_properties",
    ):
        assert getattr(back, name) == getattr(m, name), name
    assert back.ttl_ms == 90_000 and back.sched_ms == m.sched_ms


def test_a_plain_message_round_trips_without_extra_properties() -> None:
    m = ServiceBusMessage("x", partition_key="pk")
    destination, back = paired.from_backlog(_received(paired.to_backlog(m, "t")))
    assert destination == "t"
    assert back.sent_application_properties is None
    assert back.partition_key == "pk" and back.session_id is None
    assert back.message_id == m.message_id


def test_a_message_without_a_destination_is_refused() -> None:
    with pytest.raises(InvalidOperationError):
        paired.from_backlog(_received(ServiceBusMessage("x")))


def _received(m: ServiceBusMessage) -> ServiceBusMessage:
    """What a receiver would hand out for `m` (decoded from its stored form)."""
    from sbredis import ServiceBusReceivedMessage

    return ServiceBusReceivedMessage(
        m.encoded(),
        entity_name="x-servicebus-transfer/0",
        partition_id=0,
        group="m",
        local_seq=1,
        delivery_count=0,
        enqueued_ms=0,
        expires_ms=0,
    )


# ------------------------------------------------------------------ the loops: tasks and threads side by side
def _public(cls: type) -> dict[str, list[str]]:
    return {
        name: list(inspect.signature(member).parameters)
        for name, member in vars(cls).items()
        if callable(member) and (not name.startswith("_") or name == "__init__")
    }


def test_the_two_background_variants_keep_one_interface() -> None:
    assert _public(AsyncBackground) == _public(Background)
    assert set(_public(Background)) == {"__init__", "ensure", "running", "stop"}
    for name in ("ensure", "running", "stop"):
        is_async = inspect.iscoroutinefunction(getattr(AsyncBackground, name))
        assert is_async == (name == "stop"), name  # only stop waits (for the loops to end)
        assert not inspect.iscoroutinefunction(getattr(Background, name))


def test_thread_loops_run_until_their_step_returns_none_or_stop() -> None:
    bg = Background()
    steps: list[int] = []
    bg.ensure("once", lambda: steps.append(1))  # returns None: one step
    bg.ensure("forever", lambda: 0.01)
    deadline = time.monotonic() + 5
    while (bg.running("once") or not steps) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert steps == [1] and not bg.running("once") and bg.running("forever")
    bg.stop()
    assert not bg.running("forever")
    bg.ensure("forever", lambda: 0.01)  # stopped loops stay stopped
    assert not bg.running("forever")


def test_task_loops_run_until_their_step_returns_none_or_stop() -> None:
    async def main() -> None:
        bg = AsyncBackground()
        steps: list[int] = []

        async def once() -> None:
            steps.append(1)

        async def forever() -> float:
            return 0.01

        bg.ensure("once", once)
        bg.ensure("forever", forever)
        for _ in range(500):
            if steps and not bg.running("once"):
                break
            await asyncio.sleep(0.01)
        assert steps == [1] and bg.running("forever")
        await bg.stop()
        assert not bg.running("forever")
        bg.ensure("forever", forever)
        assert not bg.running("forever")

    asyncio.run(main())


def test_a_step_that_raises_is_logged_and_its_loop_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    def flaky(calls: list[int]) -> float | None:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("a bug in the step")
        return None  # the second step ends the loop

    thread_calls: list[int] = []
    task_calls: list[int] = []

    async def task_step() -> float | None:
        return flaky(task_calls)

    async def tasks(bg: AsyncBackground) -> None:
        bg.ensure("flaky", task_step)
        deadline = time.monotonic() + 5
        while bg.running("flaky"):
            assert time.monotonic() < deadline
            await asyncio.sleep(0.01)
        await bg.stop()

    with caplog.at_level(logging.ERROR, "sbredis"):
        # the loop waits 1 s after a failed step (a bug should not spin)
        threads = Background()
        threads.ensure("flaky", lambda: flaky(thread_calls))
        asyncio.run(tasks(AsyncBackground()))
        deadline = time.monotonic() + 5
        while threads.running("flaky"):
            assert time.monotonic() < deadline
            time.sleep(0.01)
        threads.stop()
    assert thread_calls == [1, 1] and task_calls == [1, 1]
    assert [r.getMessage() for r in caplog.records] == ["the paired namespace's flaky loop failed; it goes on"] * 2


def test_stopping_the_task_loops_cancels_a_step_stuck_past_the_stop_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    from sbredis.paired import _background

    monkeypatch.setattr(_background, "STOP_TIMEOUT", 0.05)

    async def main() -> bool:
        stuck = asyncio.Event()
        cancelled = asyncio.Event()

        async def step() -> float:
            stuck.set()
            try:
                await asyncio.Event().wait()  # a step that never ends (a hung call)
            except asyncio.CancelledError:
                cancelled.set()
                raise
            return 0.0

        bg = AsyncBackground()
        bg.ensure("stuck", step)
        await stuck.wait()
        await bg.stop()
        return cancelled.is_set() and not bg.running("stuck")

    assert asyncio.run(main())


def test_the_paired_package_uses_no_private_name_of_another_object() -> None:
    """Only self and cls (and super(), self as its base) are reached into: what a pairing needs of
    its client it is handed (Primary, route()) or gets from its own subclasses (_Secondary,
    _BacklogSender, _BacklogReceiver)."""
    package = Path(paired.__file__).parent
    found = []
    for path in sorted(package.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Attribute)
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
                and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
                and not (isinstance(node.value, ast.Call) and ast.unparse(node.value) == "super()")
            ):
                found.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
    assert found == []
