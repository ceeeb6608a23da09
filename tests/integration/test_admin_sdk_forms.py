"""The administration client's azure-servicebus forms: models readable as dicts and updated from
dicts, forwarding to ``sb://<namespace>/<entity>``, accessed_at_utc, and azure-core's error types,
against a real redis-server."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from azure.core.exceptions import HttpResponseError, ResourceExistsError, ResourceNotFoundError

from sbredis.exceptions import InvalidArgumentError, MessagingEntityNotFoundError

pytestmark = pytest.mark.integration


def test_models_read_as_dicts_and_update_from_dicts(admin: Any, queue_name: str) -> None:
    created = admin.create_queue(queue_name)
    runtime = admin.get_queue_runtime_properties(queue_name)
    assert dict(runtime)["total_message_count"] == 0
    # never used yet: its creation time, as Service Bus reports
    assert runtime.accessed_at_utc == runtime.created_at_utc is not None
    as_dict = dict(created)
    assert as_dict["name"] == queue_name and as_dict["lock_duration"] == created.lock_duration
    assert "max_delivery_count" in created and created.get("nope", 7) == 7
    as_dict["lock_duration"] = timedelta(minutes=2)
    as_dict["max_delivery_count"] = 14
    admin.update_queue(as_dict)
    got = admin.get_queue(queue_name)
    assert (got.lock_duration, got.max_delivery_count) == (timedelta(minutes=2), 14)
    with pytest.raises(InvalidArgumentError):
        admin.update_queue({**as_dict, "not_a_field": 1})
    with pytest.raises(TypeError):
        admin.update_queue(None)
    with pytest.raises(TypeError):  # every field or none, as the SDK's
        admin.update_queue({"name": queue_name})


def test_topic_and_subscription_dicts(admin: Any, queue_name: str) -> None:
    topic = admin.create_topic(queue_name)
    sub = admin.create_subscription(queue_name, "s")
    t = dict(topic)
    t["default_message_time_to_live"] = timedelta(minutes=11)
    admin.update_topic(t)
    s = dict(sub)
    s["max_delivery_count"] = 3
    admin.update_subscription(queue_name, s)
    assert admin.get_topic(queue_name).default_message_time_to_live == timedelta(minutes=11)
    assert admin.get_subscription(queue_name, "s").max_delivery_count == 3
    assert admin.get_topic_runtime_properties(queue_name).accessed_at_utc is not None
    assert admin.get_subscription_runtime_properties(queue_name, "s").accessed_at_utc is not None
    rule = dict(admin.get_rule(queue_name, "s", "$Default"))
    admin.update_rule(queue_name, "s", rule)


def test_forwarding_to_a_service_bus_address(admin: Any, queue_name: str) -> None:
    admin.create_queue(queue_name + "-to")
    created = admin.create_queue(queue_name, forward_to=f"sb://example.servicebus.windows.net/{queue_name}-to")
    got = admin.get_queue(queue_name)
    # returned as the SDK returns it: this connection's namespace, then the entity
    assert got.forward_to == created.forward_to
    assert got.forward_to.startswith("sb://") and got.forward_to.endswith(f"/{queue_name}-to")
    assert got.forward_dead_lettered_messages_to is None
    assert [q.forward_to for q in admin.list_queues() if q.name == queue_name] == [got.forward_to]
    admin.update_queue(got)  # the address goes back in as it came out
    admin.update_queue(dict(got), forward_dead_lettered_messages_to=queue_name)  # itself, as Service Bus allows
    got = admin.get_queue(queue_name)
    assert got.forward_to.endswith(f"/{queue_name}-to") and got.forward_dead_lettered_messages_to.endswith(
        f"/{queue_name}"
    )
    with pytest.raises(MessagingEntityNotFoundError):
        admin.create_queue(queue_name + "-2", forward_to="sb://host:1/missing")
    with pytest.raises(MessagingEntityNotFoundError):  # an update checks the destination as a create does
        admin.update_queue(got, forward_to="missing-" + queue_name)
    assert admin.get_queue(queue_name).forward_to.endswith(f"/{queue_name}-to")  # nothing written
    admin.update_queue(got, forward_to=None, forward_dead_lettered_messages_to=None)
    assert admin.get_queue(queue_name).forward_to is None


def test_subscription_forwarding_addresses(admin: Any, queue_name: str) -> None:
    admin.create_queue(queue_name + "-to")
    admin.create_topic(queue_name)
    created = admin.create_subscription(queue_name, "s", forward_to=queue_name + "-to")
    assert created.forward_to.startswith("sb://") and created.forward_to.endswith(f"/{queue_name}-to")
    sub = admin.get_subscription(queue_name, "s")
    assert sub.forward_to == created.forward_to
    assert [s.forward_to for s in admin.list_subscriptions(queue_name)] == [created.forward_to]
    admin.update_subscription(queue_name, dict(sub), forward_dead_lettered_messages_to=queue_name)  # its topic
    assert admin.get_subscription(queue_name, "s").forward_dead_lettered_messages_to.endswith(f"/{queue_name}")
    with pytest.raises(MessagingEntityNotFoundError):
        admin.update_subscription(queue_name, sub, forward_to="missing-" + queue_name)


def test_authorization_rules_are_kept(admin: Any, queue_name: str) -> None:
    from sbredis.management import AccessRights, AuthorizationRule

    rule = AuthorizationRule(key_name="listen", rights=[AccessRights.LISTEN], primary_key="k1", secondary_key="k2")
    admin.create_queue(queue_name, authorization_rules=[rule])
    got = admin.get_queue(queue_name)
    assert got.authorization_rules == [rule] and got.authorization_rules[0].rights == [AccessRights.LISTEN]
    got.authorization_rules = [rule, AuthorizationRule(key_name="all", rights=list(AccessRights))]
    admin.update_queue(got)
    assert [r.key_name for r in admin.get_queue(queue_name).authorization_rules] == ["listen", "all"]
    admin.create_topic(queue_name + "-t", authorization_rules=[rule])
    topic = admin.get_topic(queue_name + "-t")
    assert topic.authorization_rules == [rule]
    topic.authorization_rules = []
    admin.update_topic(topic)
    assert admin.get_topic(queue_name + "-t").authorization_rules == []
    with pytest.raises(InvalidArgumentError):
        admin.update_queue(got, authorization_rules=["listen"])


def test_errors_are_also_azure_cores(admin: Any, queue_name: str) -> None:
    admin.create_queue(queue_name)
    with pytest.raises(ResourceExistsError):
        admin.create_queue(queue_name)
    with pytest.raises(ResourceNotFoundError):
        admin.get_queue(queue_name + "-missing")
    with pytest.raises(HttpResponseError):  # a setting the service would refuse
        admin.create_queue(queue_name + "-2", lock_duration=timedelta(days=25))
    with pytest.raises(HttpResponseError) as caught:
        admin.create_queue("")
    assert isinstance(caught.value, InvalidArgumentError) and caught.value.message.startswith("invalid queue name")


def test_topic_filter_counts(admin: Any, queue_name: str) -> None:
    from sbredis.management import CorrelationRuleFilter, SqlRuleFilter

    admin.create_topic(queue_name)
    admin.create_subscription(queue_name, "a")  # its $Default rule: a true filter, an SQL filter
    admin.create_subscription(queue_name, "b")
    admin.create_rule(queue_name, "b", "sql", filter=SqlRuleFilter("n > 1"))
    admin.create_rule(queue_name, "b", "corr", filter=CorrelationRuleFilter(label="s"))
    counts = admin.get_topic_runtime_properties(queue_name)
    assert (counts.sql_filter_count, counts.correlation_filter_count) == (3, 1)
