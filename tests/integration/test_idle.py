"""Auto-delete on idle on a real Redis, with the test lower bound $SBREDIS_MIN_AUTO_DELETE_ON_IDLE.

Windows are a second or two; each test checks that an entity used within its window survives a
sweep and that it is gone once a whole window passed without use (polling, never a fixed wait for
the deletion itself)."""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from sbredis import ServiceBusMessage
from sbredis._core.entity import MIN_IDLE_ENV
from sbredis.exceptions import InvalidArgumentError, MessagingEntityNotFoundError
from tests.conftest import eventually

pytestmark = [pytest.mark.integration, pytest.mark.conformance]
WINDOW = timedelta(seconds=1.5)


@pytest.fixture(autouse=True)
def short_minimum(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MIN_IDLE_ENV, "0.5")


def name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def gone(check: Any) -> bool:
    try:
        check()
    except MessagingEntityNotFoundError:
        return True
    return False


def test_minimum_is_five_minutes_unless_lowered(admin: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(MIN_IDLE_ENV)
    with pytest.raises(InvalidArgumentError, match="0:05:00"):
        admin.create_queue(name("q"), auto_delete_on_idle=timedelta(minutes=4))
    q = name("q")
    admin.create_queue(q, auto_delete_on_idle=timedelta(minutes=5))
    assert admin.get_queue(q).auto_delete_on_idle == timedelta(minutes=5)
    admin.delete_queue(q)


def test_idle_queue_is_deleted_and_a_used_one_is_not(admin: Any, client: Any) -> None:
    idle, busy, forever = name("idle"), name("busy"), name("forever")
    admin.create_queue(idle, auto_delete_on_idle=WINDOW, enable_partitioning=True, partition_count=3)
    admin.create_queue(busy, auto_delete_on_idle=WINDOW, enable_partitioning=True, partition_count=3)
    admin.create_queue(forever)
    start = time.monotonic()
    with client.get_queue_sender(busy) as s:
        while time.monotonic() - start < 2.5:  # use `busy` well inside every window
            s.send_messages(ServiceBusMessage("x"))
            assert busy not in admin.delete_idle_entities()
            time.sleep(0.3)
    assert eventually(lambda: idle in admin.delete_idle_entities() or gone(lambda: admin.get_queue(idle)), 5)
    assert gone(lambda: admin.get_queue(idle))
    assert admin.get_queue(busy).name == busy
    assert admin.get_queue(forever).name == forever
    # once unused, `busy` goes too, and a receive (a use) on the way would have kept it
    with client.get_queue_receiver(busy) as r:
        r.receive_messages(1, wait=False)
    assert busy not in admin.delete_idle_entities()
    assert eventually(lambda: busy in admin.delete_idle_entities(), 5)
    with pytest.raises(MessagingEntityNotFoundError):
        admin.get_queue_runtime_properties(busy)


def test_peek_and_update_count_as_use(admin: Any, client: Any) -> None:
    q = name("q")
    admin.create_queue(q, auto_delete_on_idle=WINDOW)
    for action in ("peek", "update"):
        time.sleep(1.0)
        if action == "peek":
            with client.get_queue_receiver(q) as r:
                r.peek_messages(1)
        else:
            admin.update_queue(admin.get_queue(q))
        time.sleep(0.7)  # > window since creation, < window since the use
        assert q not in admin.delete_idle_entities()
    assert eventually(lambda: q in admin.delete_idle_entities(), 5)


def test_pending_scheduled_message_keeps_a_queue(admin: Any, client: Any) -> None:
    q = name("q")
    admin.create_queue(q, auto_delete_on_idle=WINDOW)
    with client.get_queue_sender(q) as s:
        s.schedule_messages(ServiceBusMessage("later"), datetime.now(UTC) + timedelta(seconds=2.5))
    time.sleep(2.0)  # the send is > a window ago, but the message is still to come
    assert q not in admin.delete_idle_entities()
    assert eventually(lambda: q in admin.delete_idle_entities(), 6)


def test_topic_lives_while_a_subscription_is_used_and_idle_subscription_goes(admin: Any, client: Any) -> None:
    topic = name("t")
    admin.create_topic(topic, auto_delete_on_idle=WINDOW, enable_partitioning=True, partition_count=2)
    admin.create_subscription(topic, "used")
    admin.create_subscription(topic, "unused", auto_delete_on_idle=WINDOW)
    with client.get_topic_sender(topic) as s:
        s.send_messages(ServiceBusMessage("x"))  # arriving messages do not make a subscription used
    start = time.monotonic()
    with client.get_subscription_receiver(topic, "used") as r:
        while time.monotonic() - start < 2.5:
            r.receive_messages(1, wait=False)
            deleted = admin.delete_idle_entities()
            assert topic not in deleted
            time.sleep(0.3)

    def unused_gone() -> bool:
        admin.delete_idle_entities()
        return gone(lambda: admin.get_subscription(topic, "unused"))

    assert eventually(unused_gone, 5, 0.2)
    assert [s.name for s in admin.list_subscriptions(topic)] == ["used"]
    assert eventually(lambda: topic in admin.delete_idle_entities(), 5)
    assert gone(lambda: admin.get_topic(topic))
    assert gone(lambda: admin.get_subscription(topic, "used"))


def test_maintenance_runs_from_runtime_property_calls(admin: Any) -> None:
    q, other = name("q"), name("other")
    admin.create_queue(q, auto_delete_on_idle=timedelta(seconds=0.5))
    admin.create_queue(other)
    time.sleep(0.8)
    admin._maintained_at = 0.0  # as a fresh client: maintenance is due
    admin.get_queue_runtime_properties(other)
    assert gone(lambda: admin.get_queue(q))
