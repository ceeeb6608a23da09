"""The topic administration calls test_topics.py does not reach: listing runtime properties, the
typed errors of the update calls (nothing changes) and empty listings. Conformance: every backend,
through the sync API and sbredis.aio."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from sbredis import ServiceBusMessage
from sbredis._core.rules import CorrelationRuleFilter, SqlRuleFilter, TrueRuleFilter
from sbredis.exceptions import InvalidArgumentError, InvalidOperationError, MessagingEntityNotFoundError

pytestmark = [pytest.mark.integration, pytest.mark.conformance]


@pytest.fixture()
def topic(admin: Any) -> str:
    name = "t-" + uuid.uuid4().hex[:10]
    admin.create_topic(name, enable_partitioning=True, partition_count=2)
    return name


def test_listing_runtime_properties_of_topics_and_subscriptions(admin: Any, client: Any, topic: str) -> None:
    admin.create_subscription(topic, "a")
    admin.create_subscription(topic, "b")
    with client.get_topic_sender(topic) as s:
        s.send_messages([ServiceBusMessage("one"), ServiceBusMessage("two")])

    [rt] = [t for t in admin.list_topics_runtime_properties() if t.name == topic]
    assert rt.subscription_count == 2 and rt.size_in_bytes > 0 and rt.accessed_at_utc is not None
    subs = {s.name: s for s in admin.list_subscriptions_runtime_properties(topic)}
    assert sorted(subs) == ["a", "b"]
    for s in subs.values():
        assert (s.active_message_count, s.dead_letter_message_count, s.total_message_count) == (2, 0, 2)
    with pytest.raises(MessagingEntityNotFoundError):
        list(admin.list_subscriptions_runtime_properties("t-missing-" + uuid.uuid4().hex[:6]))


def test_subscriptions_and_rules_of_an_empty_listing(admin: Any, topic: str) -> None:
    assert list(admin.list_subscriptions(topic)) == []
    assert list(admin.list_subscriptions_runtime_properties(topic)) == []
    admin.create_subscription(topic, "s")
    admin.delete_rule(topic, "s", "$Default")
    assert list(admin.list_rules(topic, "s")) == []


def test_update_calls_take_only_the_properties_they_returned(admin: Any, topic: str) -> None:
    admin.create_subscription(topic, "s")
    admin.create_rule(topic, "s", "r", filter=CorrelationRuleFilter(label="x"))
    with pytest.raises(InvalidArgumentError, match="from get_"):
        admin.update_topic(topic)
    with pytest.raises(InvalidArgumentError, match="from get_"):
        admin.update_subscription(topic, "s", max_delivery_count=3)
    with pytest.raises(InvalidArgumentError, match="from get_"):
        admin.update_rule(topic, "s", "r", filter=TrueRuleFilter())
    rule = admin.get_rule(topic, "s", "r")
    with pytest.raises(InvalidArgumentError, match="colour"):
        admin.update_rule(topic, "s", rule, colour="red")
    with pytest.raises(InvalidArgumentError, match="colour"):
        admin.create_rule(topic, "s", "r2", filter=SqlRuleFilter("1=1"), colour="red")
    # nothing changed
    assert admin.get_subscription(topic, "s").max_delivery_count != 3
    assert isinstance(admin.get_rule(topic, "s", "r").filter, CorrelationRuleFilter)
    assert sorted(r.name for r in admin.list_rules(topic, "s")) == ["$Default", "r"]


def test_update_rule_keyword_overrides_replace_filter_and_action(admin: Any, topic: str) -> None:
    admin.create_subscription(topic, "s")
    rule = admin.get_rule(topic, "s", "$Default")
    admin.update_rule(topic, "s", rule, filter=SqlRuleFilter("n > 1"))
    got = admin.get_rule(topic, "s", "$Default")
    assert isinstance(got.filter, SqlRuleFilter) and got.filter.sql_expression == "n > 1"
    with pytest.raises(MessagingEntityNotFoundError):
        admin.delete_rule(topic, "s", "no-such-rule")


def test_requires_session_of_a_subscription_cannot_change(admin: Any, topic: str) -> None:
    admin.create_subscription(topic, "s")
    props = admin.get_subscription(topic, "s")
    with pytest.raises(InvalidOperationError, match="requires_session"):
        admin.update_subscription(topic, props, requires_session=True)
    props.requires_session = True
    with pytest.raises(InvalidOperationError, match="requires_session"):
        admin.update_subscription(topic, props)
    assert admin.get_subscription(topic, "s").requires_session is False
