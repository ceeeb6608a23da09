"""The management models as the SDK's: constructors want every field, authorization rules survive
the registry's JSON form, and a queue may forward to itself."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from sbredis._core.entity import build_queue
from sbredis._core.topic_entity import build_subscription, build_topic, from_record, to_record
from sbredis.exceptions import InvalidArgumentError
from sbredis.management import (
    AccessRights,
    AuthorizationRule,
    QueueProperties,
    RuleProperties,
    SubscriptionProperties,
    TopicProperties,
)


@pytest.mark.parametrize("cls", [QueueProperties, TopicProperties, SubscriptionProperties, RuleProperties])
def test_constructors_want_every_field_as_the_sdk(cls: Any) -> None:
    with pytest.raises(TypeError, match="missing required keyword arguments") as ei:
        cls("randomname")
    assert "partition_count" not in str(ei.value)  # sbredis's own field keeps its default


def test_a_full_constructor_and_dict_round_trip() -> None:
    q = build_queue("q", lock_duration=timedelta(seconds=30))
    again = QueueProperties(**dict(q))
    assert again == q
    assert RuleProperties("r", filter=None, action=None, created_at_utc=None).name == "r"


def _rule(**kwargs: Any) -> AuthorizationRule:
    return AuthorizationRule(
        type="SharedAccessAuthorizationRule",
        key_name="k",
        claim_type="SharedAccessKey",
        claim_value="None",
        rights=[AccessRights.MANAGE, AccessRights.LISTEN, "Send"],
        primary_key="p",
        secondary_key="s",
        created_at_utc=datetime(2024, 1, 2, tzinfo=UTC),
        **kwargs,
    )


def test_authorization_rules_survive_the_registry_form() -> None:
    q = build_queue("q", authorization_rules=[_rule()])
    back = QueueProperties.from_json(q.to_json())
    assert back.authorization_rules == [_rule()]
    assert back.authorization_rules[0].rights == [AccessRights.MANAGE, AccessRights.LISTEN, AccessRights.SEND]
    assert back.authorization_rules[0]["key_name"] == "k"
    t = build_topic("t", authorization_rules=[_rule()])
    assert from_record(TopicProperties, to_record(t, "topic")).authorization_rules == [_rule()]


def test_authorization_rules_as_mappings_are_taken() -> None:
    q = build_queue("q", authorization_rules=[{"key_name": "k", "rights": ["Listen"]}])
    assert q.authorization_rules[0].key_name == "k"


@pytest.mark.parametrize(
    "rules",
    [
        "nope",
        [object()],
        [AuthorizationRule(rights=["Read"])],
        [AuthorizationRule(key_name=3)],  # type: ignore[arg-type]
        [AuthorizationRule(created_at_utc="yesterday")],  # type: ignore[arg-type]
        [{"key": "k"}],
        [AuthorizationRule()] * 13,
    ],
    ids=["not-a-list", "not-a-rule", "no-key-name", "int-key-name", "str-created-at", "dict-without-name", "13-rules"],
)
def test_bad_authorization_rules_are_argument_errors(rules: Any) -> None:
    with pytest.raises(InvalidArgumentError):
        build_queue("q", authorization_rules=rules)


def test_an_entity_may_forward_to_itself() -> None:
    q = build_queue("q", forward_to="sb://ns/q", forward_dead_lettered_messages_to="q")
    assert (q.forward_to, q.forward_dead_lettered_messages_to) == ("q", "q")
    s = build_subscription("t", "s", forward_to="t")
    assert s.forward_to == "t"


@pytest.mark.parametrize(
    ("url", "namespace"),
    [
        ("redis://user:secret@127.0.0.1:6380/0", "127.0.0.1:6380"),
        ("rediss+cluster://a:b@h1:7000,h2:7001/", "h1:7000"),
        ("redis://cache", "cache"),
        ("unix:///tmp/redis.sock", "localhost"),
        ("memory://x", "localhost"),
    ],
)
def test_the_namespace_of_forwarding_addresses(url: str, namespace: str) -> None:
    from sbredis._core.connection import namespace_of

    assert namespace_of(url) == namespace  # never the credentials
