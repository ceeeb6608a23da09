"""The sans-IO part of resubmit_dead_letters: target paths, option checks, batch sorting, and the
send plan straight into a subscription's partitions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from sbredis import ServiceBusMessage
from sbredis._core import keys, resubmit, send_plan
from sbredis._core.meta import EntityMeta
from sbredis._enums import ServiceBusSubQueue
from sbredis.exceptions import InvalidArgumentError, InvalidOperationError


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("orders", ("orders", None)),
        ("events/Subscriptions/audit", ("events", "audit")),
        ("events/subscriptions/audit", ("events", "audit")),
        ("events:audit", ("events", "audit")),
    ],
)
def test_split_path(path: str, expected: tuple[str, str | None]) -> None:
    assert resubmit.split_path(path) == expected


@pytest.mark.parametrize("path", ["", "events:", ":audit", "events/Subscriptions/", None, 3])
def test_split_path_refuses(path: Any) -> None:
    with pytest.raises(InvalidArgumentError):
        resubmit.split_path(path)


def test_target_of() -> None:
    assert resubmit.target_of("orders", None).path == "orders"
    assert resubmit.target_of("orders", "events:audit").path == "events/Subscriptions/audit"
    assert resubmit.target_of("events:a", "events").path == "events"
    with pytest.raises(InvalidArgumentError, match="name a target"):
        resubmit.target_of("events:a", None)


def test_check_options() -> None:
    sq, wanted = resubmit.check_options("deadletter", None, None, 100)
    assert (sq, wanted) == (ServiceBusSubQueue.DEAD_LETTER, None)
    sq, wanted = resubmit.check_options(ServiceBusSubQueue.TRANSFER_DEAD_LETTER, (3, 1, 3), 5, 1)
    assert (sq, wanted) == (ServiceBusSubQueue.TRANSFER_DEAD_LETTER, {1, 3})
    for args in [
        ("dlq", None, None, 100),
        ("deadletter", [], None, 100),
        ("deadletter", [True], None, 100),
        ("deadletter", [-1], None, 100),
        ("deadletter", None, 0, 100),
        ("deadletter", None, 1.5, 100),
        ("deadletter", None, None, 0),
        ("deadletter", None, None, resubmit.MAX_BATCH + 1),
    ]:
        with pytest.raises(InvalidArgumentError):
            resubmit.check_options(*args)


@dataclass
class Msg:
    sequence_number: int


def test_sort_batch_moves_the_wanted_once() -> None:
    seen: set[int] = set()
    move, back = resubmit.sort_batch([Msg(1), Msg(2), Msg(3)], seen, {1, 3})
    assert ([m.sequence_number for m in move], [m.sequence_number for m in back]) == ([1, 3], [2])
    move, back = resubmit.sort_batch([Msg(3), Msg(4)], seen, None)  # 3 came back: not moved twice
    assert ([m.sequence_number for m in move], [m.sequence_number for m in back]) == ([4], [3])
    assert seen == {1, 2, 3, 4}


def test_plan_send_into_a_subscription_only_when_asked() -> None:
    path = keys.subscription_path("events", "audit")
    sub = EntityMeta(path, 2, False, 1024, "subscription")
    queue = EntityMeta("orders", 2, False, 1024)
    with pytest.raises(InvalidOperationError, match="is a subscription"):
        send_plan.plan_send([ServiceBusMessage("x")], sub, 0)  # what get_queue_sender(path) would do
    with pytest.raises(InvalidOperationError, match="is a queue"):
        send_plan.plan_send([ServiceBusMessage("x")], queue, 0, into_subscription=True)
    calls, where = send_plan.plan_send([ServiceBusMessage("x")], sub, 1, into_subscription=True)
    assert where == [1] and calls[0].keys == keys.subscription_keys("events", "audit", 1)[:1]
    assert calls[0].script.name == "send"
