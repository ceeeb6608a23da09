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
    admin.create_queue(queue_name, forward_to=f"sb://example.servicebus.windows.net/{queue_name}-to")
    assert admin.get_queue(queue_name).forward_to == queue_name + "-to"
    with pytest.raises(MessagingEntityNotFoundError):
        admin.create_queue(queue_name + "-2", forward_to="sb://host:1/missing")


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
