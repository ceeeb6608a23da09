"""Topics, subscriptions and rules on a real Redis: administration, fan-out (atomic, filtered,
with actions), subscription receivers with every queue feature, TTL and duplicate detection."""

from __future__ import annotations

import threading
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from sbredis import ServiceBusMessage, ServiceBusReceiveMode, ServiceBusSubQueue
from sbredis._core.rules import (
    CorrelationRuleFilter,
    FalseRuleFilter,
    RuleSyntaxError,
    SqlRuleAction,
    SqlRuleFilter,
    TrueRuleFilter,
)
from sbredis.exceptions import (
    InvalidArgumentError,
    InvalidOperationError,
    MessageNotFoundError,
    MessagingEntityAlreadyExistsError,
    MessagingEntityDisabledError,
    MessagingEntityNotFoundError,
    ServiceBusQuotaExceededError,
)
from sbredis.management import SubscriptionProperties, TopicProperties
from tests.conftest import eventually

pytestmark = [pytest.mark.integration, pytest.mark.conformance]


@pytest.fixture()
def topic(admin: Any) -> str:
    name = "t-" + uuid.uuid4().hex[:10]
    admin.create_topic(name, enable_partitioning=True, partition_count=4)
    return name


def drain(client: Any, topic: str, sub: str, wait: float = 0, **kw: Any) -> list[Any]:
    """Receive-and-delete until a receive gets nothing. A send stores every subscription's copy before it
    returns, so nothing is waited for unless `wait` (seconds) says so."""
    with client.get_subscription_receiver(topic, sub, receive_mode=ServiceBusReceiveMode.RECEIVE_AND_DELETE, **kw) as r:
        out: list[Any] = []
        while True:
            got = r.receive_messages(100, max_wait_time=wait or None, wait=wait > 0)
            if not got:
                return out
            out += got


def subscribe(admin: Any, topic: str, name: str, rule_filter: Any = None, action: Any = None, **kw: Any) -> None:
    """A subscription whose only rule is `rule_filter` (with `action`), or $Default when None."""
    admin.create_subscription(topic, name, **kw)
    if rule_filter is not None or action is not None:
        admin.delete_rule(topic, name, "$Default")
        admin.create_rule(topic, name, "r", filter=rule_filter or TrueRuleFilter(), action=action)


# ----------------------------------------------------------------------------- administration
def test_topic_subscription_rule_lifecycle(admin: Any, topic: str) -> None:
    t = admin.get_topic(topic)
    assert isinstance(t, TopicProperties) and t.partition_count == 4 and t.enable_partitioning
    with pytest.raises(MessagingEntityAlreadyExistsError):
        admin.create_topic(topic)
    with pytest.raises(MessagingEntityAlreadyExistsError):
        admin.create_queue(topic)  # queues and topics share one namespace
    with pytest.raises(MessagingEntityNotFoundError):
        admin.get_queue(topic)
    assert topic in [x.name for x in admin.list_topics()]
    assert topic not in [x.name for x in admin.list_queues()]

    s = admin.create_subscription(topic, "s1", max_delivery_count=3, lock_duration=timedelta(seconds=10))
    assert isinstance(s, SubscriptionProperties) and s.max_delivery_count == 3
    with pytest.raises(MessagingEntityAlreadyExistsError):
        admin.create_subscription(topic, "s1")
    admin.create_subscription(topic, "s2")
    assert [x.name for x in admin.list_subscriptions(topic)] == ["s1", "s2"]
    [default] = list(admin.list_rules(topic, "s1"))
    assert default.name == "$Default" and isinstance(default.filter, TrueRuleFilter)

    rule = admin.create_rule(topic, "s1", "big", filter=SqlRuleFilter("n > @min", parameters={"@min": 5}))
    assert rule.created_at_utc is not None
    got = admin.get_rule(topic, "s1", "big")
    assert isinstance(got.filter, SqlRuleFilter) and got.filter.parameters == {"@min": 5}
    got.filter = CorrelationRuleFilter(label="x")
    admin.update_rule(topic, "s1", got)
    assert isinstance(admin.get_rule(topic, "s1", "big").filter, CorrelationRuleFilter)
    with pytest.raises(MessagingEntityAlreadyExistsError):
        admin.create_rule(topic, "s1", "big")
    admin.delete_rule(topic, "s1", "big")
    with pytest.raises(MessagingEntityNotFoundError):
        admin.get_rule(topic, "s1", "big")

    s.max_delivery_count = 7
    admin.update_subscription(topic, s)
    assert admin.get_subscription(topic, "s1").max_delivery_count == 7
    t.default_message_time_to_live = timedelta(hours=1)
    admin.update_topic(t)
    assert admin.get_topic(topic).default_message_time_to_live == timedelta(hours=1)
    with pytest.raises(InvalidOperationError):
        admin.update_topic(t, partition_count=8)

    rt = admin.get_topic_runtime_properties(topic)
    assert rt.subscription_count == 2 and rt.size_in_bytes == 0
    admin.delete_subscription(topic, "s2")
    assert [x.name for x in admin.list_subscriptions(topic)] == ["s1"]
    admin.delete_topic(topic)
    with pytest.raises(MessagingEntityNotFoundError):
        admin.get_topic(topic)
    with pytest.raises(MessagingEntityNotFoundError):
        admin.get_subscription(topic, "s1")
    with pytest.raises(MessagingEntityNotFoundError):
        admin.create_subscription(topic, "s3")


def test_rule_syntax_error_names_the_position_and_stores_nothing(admin: Any, topic: str) -> None:
    admin.create_subscription(topic, "s")
    with pytest.raises(RuleSyntaxError, match="position 8"):
        admin.create_rule(topic, "s", "bad", filter=SqlRuleFilter("color = = 'red'"))
    assert [r.name for r in admin.list_rules(topic, "s")] == ["$Default"]


def test_bad_names_and_options(admin: Any, client: Any, topic: str) -> None:
    with pytest.raises(InvalidArgumentError):
        admin.create_subscription(topic, "a/b")
    with pytest.raises(InvalidArgumentError):
        admin.create_subscription(topic, "x" * 51)
    with pytest.raises(InvalidArgumentError):
        admin.create_topic("a/Subscriptions/b")
    with pytest.raises(InvalidArgumentError):
        admin.create_subscription(topic, "s", no_such_option=1)
    with pytest.raises(InvalidArgumentError):
        client.get_subscription_receiver(topic, "s", bogus=1)
    admin.create_queue("q-" + topic)
    with client.get_topic_sender("q-" + topic) as s, pytest.raises(InvalidOperationError):
        s.send_messages(ServiceBusMessage("x"))
    with client.get_queue_sender(topic) as s, pytest.raises(InvalidOperationError):
        s.send_messages(ServiceBusMessage("x"))
    admin.delete_queue("q-" + topic)


# ---------------------------------------------------------------------------------- fan-out
def test_every_subscription_gets_a_copy_with_its_own_settlement(admin: Any, client: Any, topic: str) -> None:
    for name in ("a", "b", "c"):
        admin.create_subscription(topic, name)
    with client.get_topic_sender(topic) as s:
        s.send_messages([ServiceBusMessage(f"m{i}", partition_key=f"k{i}") for i in range(20)])
    with client.get_subscription_receiver(topic, "a", max_wait_time=1) as r:
        got = []
        while len(got) < 20:
            batch = r.receive_messages(20, max_wait_time=1)
            assert batch
            got += batch
        assert sorted(str(m) for m in got) == sorted(f"m{i}" for i in range(20))
        assert all(m.entity_name == f"{topic}/Subscriptions/a" for m in got)
        r.complete_messages(got[:10])
        r.abandon_message(got[10])
        r.defer_message(got[11])
        r.dead_letter_message(got[12], reason="bad", error_description="why")
        deferred = r.receive_deferred_messages([got[11].sequence_number])
        assert [str(m) for m in deferred] == [str(got[11])]
        r.complete_message(deferred[0])
        peeked = r.peek_messages(50, sequence_number=0)
        assert len(peeked) == 8  # 20 - 10 completed - 1 deferred then completed - 1 dead-lettered
    with client.get_subscription_receiver(topic, "a", sub_queue=ServiceBusSubQueue.DEAD_LETTER) as dlq:
        [dead] = dlq.receive_messages(5, max_wait_time=1)
        assert dead.dead_letter_reason == "bad" and dead.dead_letter_error_description == "why"
        dlq.complete_message(dead)
    assert len(drain(client, topic, "b")) == 20
    assert len(drain(client, topic, "c")) == 20
    props = admin.get_subscription_runtime_properties(topic, "b")
    assert props.active_message_count == 0 and props.dead_letter_message_count == 0


def test_sql_correlation_false_filters_and_actions_end_to_end(admin: Any, client: Any, topic: str) -> None:
    subscribe(admin, topic, "red", SqlRuleFilter("color = 'red' AND qty > 2"))
    subscribe(admin, topic, "corr", CorrelationRuleFilter(label="order", properties={"region": "eu"}))
    subscribe(admin, topic, "none", FalseRuleFilter())
    subscribe(admin, topic, "like", SqlRuleFilter("sys.MessageId LIKE 'id!_%' ESCAPE '!'"))
    subscribe(admin, topic, "act", SqlRuleFilter("EXISTS(color)"), SqlRuleAction("SET qty = qty * 10; REMOVE color"))
    admin.create_subscription(topic, "norules")
    admin.delete_rule(topic, "norules", "$Default")  # no rules: receives nothing
    msgs = [
        ServiceBusMessage("1", message_id="id_1", application_properties={"color": "red", "qty": 3}),
        ServiceBusMessage("2", message_id="idx2", application_properties={"color": "red", "qty": 1}),
        ServiceBusMessage("3", message_id="id_3", subject="order", application_properties={"region": "eu"}),
        ServiceBusMessage("4", message_id="id4", subject="order", application_properties={"region": "us"}),
        ServiceBusMessage("5", message_id="idy5", application_properties={"color": "blue", "qty": 7}),
    ]
    with client.get_topic_sender(topic) as s:
        s.send_messages(msgs)
    assert [str(m) for m in drain(client, topic, "red")] == ["1"]
    assert [str(m) for m in drain(client, topic, "corr")] == ["3"]
    assert drain(client, topic, "none") == []
    assert drain(client, topic, "norules") == []
    assert sorted(str(m) for m in drain(client, topic, "like")) == ["1", "3"]
    acted = sorted(drain(client, topic, "act"), key=str)
    assert [str(m) for m in acted] == ["1", "2", "5"]
    assert [m.sent_application_properties for m in acted] == [{"qty": 30}, {"qty": 10}, {"qty": 70}]
    assert [m.message_id for m in acted] == ["id_1", "idx2", "idy5"]


FILTER_CASES = [
    # (filter, parameters, the messages that match)
    ("color = 'red'", None, {"m1"}),
    ("color <> 'red'", None, {"m2", "m4", "m5", "m6"}),  # m3 has no color: unknown, no match
    ("NOT (color = 'red')", None, {"m2", "m4", "m5", "m6"}),
    ("color IS NULL", None, {"m3"}),
    ("note IS NULL", None, {"m1", "m2", "m3", "m4", "m5", "m6"}),  # null value or missing
    ("EXISTS(note)", None, {"m1"}),  # present, even with a null value
    ("note = 1 OR 1 = 1", None, {"m1", "m2", "m3", "m4", "m5", "m6"}),
    ("note = 1 AND 1 = 1", None, set()),
    ("qty > 4 OR color = 'blue'", None, {"m1", "m2"}),
    ("qty IN (0, 5)", None, {"m1", "m4"}),
    ("qty NOT IN (5, NULL)", None, set()),  # a NULL item makes every no-match unknown
    ("color LIKE 'r%'", None, {"m1"}),  # case-sensitive: not 'RED'
    ("color LIKE 'a!_b!%c' ESCAPE '!'", None, {"m4"}),
    ("color LIKE 'a_b%'", None, {"m4", "m6"}),
    ("color LIKE 'a!_b%' ESCAPE '!'", None, {"m4"}),
    ("sys.Label = 'x' OR sys.CorrelationId = 'c5'", None, {"m5"}),
    ("qty * 2 + 1 = 11", None, {"m1"}),
    ("qty / 5 = 2", None, {"m2"}),  # integer division truncates: 12 / 5 = 2
    ("color = @c", {"@c": "blue"}, {"m2"}),
]


def test_sql_filter_table_through_fan_out(admin: Any, client: Any, topic: str) -> None:
    """Each case is a subscription with one SQL filter; one publish of six messages answers all."""
    for i, (sql, params, _) in enumerate(FILTER_CASES):
        subscribe(admin, topic, f"c{i}", SqlRuleFilter(sql, parameters=params))
    props: dict[str, dict[str, Any]] = {
        "m1": {"color": "red", "qty": 5, "note": None},
        "m2": {"color": "blue", "qty": 12},
        "m3": {},
        "m4": {"color": "a_b%c", "qty": 0},
        "m5": {"color": "RED"},
        "m6": {"color": "axbyc"},
    }
    with client.get_topic_sender(topic) as s:
        s.send_messages(
            [
                ServiceBusMessage(
                    k, application_properties=v or None, subject="x" if k == "m5" else None, correlation_id=f"c{k[1]}"
                )
                for k, v in props.items()
            ]
        )
    for i, (sql, _, expected) in enumerate(FILTER_CASES):
        assert {str(m) for m in drain(client, topic, f"c{i}")} == expected, sql


def test_one_copy_per_action_rule_and_one_for_plain_rules(admin: Any, client: Any, topic: str) -> None:
    admin.create_subscription(topic, "s")  # $Default (no action) ...
    admin.create_rule(topic, "s", "also", filter=SqlRuleFilter("1=1"))  # ... and another plain rule: one copy
    admin.create_rule(topic, "s", "tag1", action=SqlRuleAction("SET tag = 'one'"))
    admin.create_rule(topic, "s", "tag2", filter=SqlRuleFilter("n = 2"), action=SqlRuleAction("SET tag = 'two'"))
    with client.get_topic_sender(topic) as s:
        s.send_messages([ServiceBusMessage("a", application_properties={"n": 1})])
        s.send_messages([ServiceBusMessage("b", application_properties={"n": 2})])
    got = drain(client, topic, "s")
    tags = sorted((str(m), (m.sent_application_properties or {}).get("tag", "")) for m in got)
    assert tags == [("a", ""), ("a", "one"), ("b", ""), ("b", "one"), ("b", "two")]


@pytest.mark.parametrize("dead_letter", [True, False])
def test_filter_evaluation_error_dead_letters_when_configured(
    admin: Any, client: Any, topic: str, dead_letter: bool
) -> None:
    # comparing a string with a number is an evaluation error (docs/rules.md)
    subscribe(admin, topic, "s", SqlRuleFilter("n > 5"), dead_lettering_on_filter_evaluation_exceptions=dead_letter)
    admin.create_subscription(topic, "other")
    with client.get_topic_sender(topic) as s:
        s.send_messages(
            [
                ServiceBusMessage("bad", application_properties={"n": "text"}),
                ServiceBusMessage("good", application_properties={"n": 9}),
            ]
        )
    assert [str(m) for m in drain(client, topic, "s")] == ["good"]
    dead = drain(client, topic, "s", sub_queue=ServiceBusSubQueue.DEAD_LETTER)
    if dead_letter:
        assert [str(m) for m in dead] == ["bad"]
        assert dead[0].dead_letter_reason == "FilterException"
        assert "compare" in (dead[0].dead_letter_error_description or "")
    else:
        assert dead == []
    assert len(drain(client, topic, "other")) == 2  # other subscriptions are not affected


def test_fan_out_is_all_or_none_when_one_subscription_is_full(admin: Any, client: Any) -> None:
    topic = "t-" + uuid.uuid4().hex[:10]
    admin.create_topic(topic, max_size_in_megabytes=1)
    admin.create_subscription(topic, "roomy")
    subscribe(admin, topic, "big", SqlRuleFilter("big = 1"))
    body = b"x" * 200_000
    with client.get_topic_sender(topic) as s:
        for _ in range(5):  # fills 'big' (and 'roomy') to 1 MB
            s.send_messages(ServiceBusMessage(body, application_properties={"big": 1}))
        with client.get_subscription_receiver(
            topic, "roomy", receive_mode=ServiceBusReceiveMode.RECEIVE_AND_DELETE
        ) as r:
            assert len(r.receive_messages(10, max_wait_time=1)) == 5  # roomy is empty again
        with pytest.raises(ServiceBusQuotaExceededError):
            s.send_messages([ServiceBusMessage("small"), ServiceBusMessage(body, application_properties={"big": 1})])
        assert drain(client, topic, "roomy") == []  # nothing of the failed publish went anywhere
        s.send_messages(ServiceBusMessage("small"))  # 'big' does not match: room enough
    assert [str(m) for m in drain(client, topic, "roomy")] == ["small"]
    assert len(drain(client, topic, "big")) == 5


def test_concurrent_publishers_and_subscription_churn_keep_copies_consistent(
    admin: Any, client: Any, topic: str
) -> None:
    """Publishing while subscriptions come and go: every message reaches either every
    subscription present when its partition ran the script, or it was sent before it existed."""
    admin.create_subscription(topic, "a")
    admin.create_subscription(topic, "b")
    errors: list[BaseException] = []

    def publish(worker: int) -> None:
        try:
            with client.get_topic_sender(topic) as s:
                for i in range(30):
                    s.send_messages([ServiceBusMessage(f"{worker}-{i}-{j}") for j in range(3)])
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=publish, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for k in range(5):  # churn: the senders' cached subscription sets go stale
        admin.create_subscription(topic, f"tmp{k}")
        admin.delete_subscription(topic, f"tmp{k}")
    for t in threads:
        t.join()
    assert not errors
    a = sorted(str(m) for m in drain(client, topic, "a"))
    b = sorted(str(m) for m in drain(client, topic, "b"))
    assert len(a) == 4 * 30 * 3 and a == b


def test_new_subscription_is_seen_by_a_sender_with_a_stale_set(admin: Any, client: Any, topic: str) -> None:
    admin.create_subscription(topic, "a")
    with client.get_topic_sender(topic) as s:
        s.send_messages(ServiceBusMessage("before", partition_key="k"))
        admin.create_subscription(topic, "b")
        s.send_messages(ServiceBusMessage("after", partition_key="k"))
        admin.delete_subscription(topic, "a")
        s.send_messages(ServiceBusMessage("last", partition_key="k"))
    assert [str(m) for m in drain(client, topic, "b")] == ["after", "last"]


# ----------------------------------------------------------------------- TTL, dedup, status
def test_the_smaller_of_topic_and_subscription_ttl_applies(admin: Any, client: Any) -> None:
    topic = "t-" + uuid.uuid4().hex[:10]
    admin.create_topic(topic, default_message_time_to_live=timedelta(seconds=30))
    admin.create_subscription(topic, "short", default_message_time_to_live=timedelta(seconds=10))
    admin.create_subscription(topic, "long", default_message_time_to_live=timedelta(hours=1))
    with client.get_topic_sender(topic) as s:
        s.send_messages(ServiceBusMessage("default"))
        s.send_messages(ServiceBusMessage("own", time_to_live=timedelta(seconds=5)))
        s.send_messages(ServiceBusMessage("huge", time_to_live=timedelta(days=1)))
    ttl = {str(m): m.time_to_live for m in drain(client, topic, "short")}
    assert ttl == {"default": timedelta(seconds=10), "own": timedelta(seconds=5), "huge": timedelta(seconds=10)}
    ttl = {str(m): m.time_to_live for m in drain(client, topic, "long")}
    assert ttl == {"default": timedelta(seconds=30), "own": timedelta(seconds=5), "huge": timedelta(seconds=30)}


def test_expired_subscription_messages_dead_letter_per_subscription(admin: Any, client: Any, topic: str) -> None:
    admin.create_subscription(topic, "dl", dead_lettering_on_message_expiration=True)
    admin.create_subscription(topic, "drop")
    with client.get_topic_sender(topic) as s:
        s.send_messages(ServiceBusMessage("x", time_to_live=timedelta(milliseconds=200)))
    import time

    time.sleep(0.4)
    assert drain(client, topic, "dl") == [] and drain(client, topic, "drop") == []
    [dead] = drain(client, topic, "dl", sub_queue=ServiceBusSubQueue.DEAD_LETTER)
    assert dead.dead_letter_reason == "TTLExpiredException"
    assert drain(client, topic, "drop", sub_queue=ServiceBusSubQueue.DEAD_LETTER) == []


def test_duplicate_detection_on_the_topic(admin: Any, client: Any) -> None:
    topic = "t-" + uuid.uuid4().hex[:10]
    admin.create_topic(topic, requires_duplicate_detection=True, enable_partitioning=True, partition_count=2)
    admin.create_subscription(topic, "a")
    admin.create_subscription(topic, "b")
    with client.get_topic_sender(topic) as s:
        m = ServiceBusMessage("once", message_id="same")
        s.send_messages(m)
        s.send_messages(m)
        s.send_messages([ServiceBusMessage("dup", message_id="same"), ServiceBusMessage("other", message_id="o")])
    assert sorted(str(m) for m in drain(client, topic, "a")) == ["once", "other"]
    assert sorted(str(m) for m in drain(client, topic, "b")) == ["once", "other"]


def test_status_of_topic_and_subscription(admin: Any, client: Any, topic: str) -> None:
    admin.create_subscription(topic, "on")
    admin.create_subscription(topic, "off", status="Disabled")
    admin.create_subscription(topic, "norecv", status="ReceiveDisabled")
    with client.get_topic_sender(topic) as s:
        s.send_messages(ServiceBusMessage("x"))
    assert len(drain(client, topic, "on")) == 1
    with pytest.raises(MessagingEntityDisabledError):
        drain(client, topic, "off")
    sub = admin.get_subscription(topic, "norecv")
    with pytest.raises(MessagingEntityDisabledError):
        drain(client, topic, "norecv")
    sub.status = "Active"
    admin.update_subscription(topic, sub)
    assert len(drain(client, topic, "norecv")) == 1  # stored while receiving was disabled
    off = admin.get_subscription(topic, "off")
    off.status = "Active"
    admin.update_subscription(topic, off)
    assert drain(client, topic, "off") == []  # a disabled subscription got no copy
    t = admin.get_topic(topic)
    t.status = "SendDisabled"
    admin.update_topic(t)
    with client.get_topic_sender(topic) as s, pytest.raises(MessagingEntityDisabledError):
        s.send_messages(ServiceBusMessage("y"))


def test_scheduled_topic_messages_and_cancel(admin: Any, client: Any, topic: str) -> None:
    admin.create_subscription(topic, "a")
    admin.create_subscription(topic, "b")
    # far enough ahead for the calls below (the runtime-property call also runs maintenance over
    # every entity of the shared server) on a loaded machine
    later = datetime.now(UTC) + timedelta(seconds=3)
    with client.get_topic_sender(topic) as s:
        keep, cancel = s.schedule_messages([ServiceBusMessage("keep"), ServiceBusMessage("cancel")], later)
        with client.get_subscription_receiver(topic, "a") as r:
            states = sorted(m.state.name for m in r.peek_messages(10, sequence_number=0))
            assert states == ["SCHEDULED", "SCHEDULED"]
        s.cancel_scheduled_messages(cancel)
        with pytest.raises(MessageNotFoundError):
            s.cancel_scheduled_messages(cancel)
    rt = admin.get_topic_runtime_properties(topic)
    assert rt.scheduled_message_count == 1
    assert drain(client, topic, "a") == []
    assert [str(m) for m in eventually(lambda: drain(client, topic, "a"), timeout=10)] == ["keep"]
    assert [str(m) for m in drain(client, topic, "b")] == ["keep"]
    with client.get_topic_sender(topic) as s, pytest.raises(MessageNotFoundError):
        s.cancel_scheduled_messages(keep)  # enqueued already


def test_async_topic_sender_and_subscription_receiver(url: str, admin: Any, topic: str) -> None:
    import asyncio

    from sbredis.aio import ServiceBusClient as AsyncClient
    from sbredis.aio.management import ServiceBusAdministrationClient as AsyncAdmin

    async def main() -> list[str]:
        async with AsyncAdmin.from_connection_string(url) as a:
            await a.create_subscription(topic, "s")
            await a.create_rule(topic, "s", "odd", filter=SqlRuleFilter("n % 2 = 1"))
            await a.delete_rule(topic, "s", "$Default")
        async with AsyncClient.from_connection_string(url) as c:
            async with c.get_topic_sender(topic) as s:
                await asyncio.gather(
                    *(s.send_messages(ServiceBusMessage(str(i), application_properties={"n": i})) for i in range(10))
                )
            async with c.get_subscription_receiver(topic, "s") as r:
                got = await r.receive_messages(20, max_wait_time=1)
                await r.complete_messages(got)
                return sorted(str(m) for m in got)

    assert asyncio.run(main()) == ["1", "3", "5", "7", "9"]
