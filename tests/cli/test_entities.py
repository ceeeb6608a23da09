"""`sbredis entities ...` as a subprocess: tables, JSON, exit codes, --yes on delete."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.cli.conftest import run_cli

pytestmark = pytest.mark.integration


def name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def test_create_show_list_update_delete_queue(sb: Any, admin: Any, redis_server: Any) -> None:
    q = name("cliq")
    r = sb(
        "entities",
        "create",
        "queue",
        q,
        "--partitions",
        "4",
        "--set",
        "max_delivery_count=3",
        "--set",
        "lock_duration=5",
        "--set",
        "dead_lettering_on_message_expiration=true",
    )
    assert r.code == 0, r
    assert f"created queue {q}" in r.out
    p = admin.get_queue(q)
    assert (p.partition_count, p.max_delivery_count, p.lock_duration.total_seconds()) == (4, 3, 5.0)
    assert p.dead_lettering_on_message_expiration is True

    shown = sb("entities", "show", q, "--json")
    assert shown.code == 0, shown
    data = shown.json()
    assert data["kind"] == "queue" and data["properties"]["max_delivery_count"] == 3
    parts = data["runtime"]["partitions"]
    assert [x["partition_id"] for x in parts] == [0, 1, 2, 3]
    assert {x["node"] for x in parts} == {f"127.0.0.1:{redis_server.port}"}

    table = sb("entities", "show", q)
    assert "PARTITION  NODE" in table.out and f"127.0.0.1:{redis_server.port}" in table.out

    listed = sb("entities", "list", "--json")
    row = next(x for x in listed.json() if x["name"] == q)
    assert (row["kind"], row["partitions"], row["active"]) == ("queue", 4, 0)
    assert q in sb("entities", "list").out

    r = sb("entities", "update", "queue", q, "--set", "max_delivery_count=7", "--json")
    assert r.code == 0 and r.json()["properties"]["max_delivery_count"] == 7
    assert admin.get_queue(q).max_delivery_count == 7

    refused = sb("entities", "delete", "queue", q)  # stdin is not a terminal and no --yes
    assert refused.code == 2 and "--yes" in refused.err
    assert admin.get_queue(q).name == q
    r = sb("entities", "delete", "queue", q, "--yes")
    assert r.code == 0, r
    missing = sb("entities", "show", q)
    assert missing.code == 3 and "was not found" in missing.err and "Traceback" not in missing.err


def test_topic_subscription_rule(sb: Any, admin: Any) -> None:
    t = name("clit")
    assert sb("entities", "create", "topic", t).code == 0
    assert sb("entities", "create", "subscription", t, "audit", "--set", "max_delivery_count=2").code == 0
    r = sb("entities", "create", "rule", t, "audit", "big", "--sql", "amount > 100", "--action", "SET big = TRUE")
    assert r.code == 0, r
    r = sb(
        "entities",
        "create",
        "rule",
        t,
        "audit",
        "eu",
        "--correlation",
        "subject=order",
        "--correlation",
        "properties.region=eu",
    )
    assert r.code == 0, r
    rule = admin.get_rule(t, "audit", "eu")
    assert rule.filter.label == "order" and rule.filter.properties == {"region": "eu"}
    shown = sb("entities", "show", f"{t}:audit", "--json").json()
    assert shown["kind"] == "subscription"
    assert sorted(x["name"] for x in shown["rules"]) == ["$Default", "big", "eu"]
    assert sb("entities", "show", f"{t}/Subscriptions/audit").code == 0
    topic = sb("entities", "show", t, "--json").json()
    assert topic["kind"] == "topic" and topic["subscriptions"] == ["audit"]
    r = sb("entities", "update", "rule", t, "audit", "big", "--sql", "amount > 1000")
    assert r.code == 0 and admin.get_rule(t, "audit", "big").filter.sql_expression == "amount > 1000"
    assert sb("entities", "delete", "rule", t, "audit", "big", "--yes").code == 0
    assert sb("entities", "delete", "subscription", t, "audit", "--yes").code == 0
    assert list(admin.list_subscriptions(t)) == []
    assert sb("entities", "delete", "topic", t, "--yes").code == 0


def test_usage_and_operation_errors(sb: Any) -> None:
    bad = sb("entities", "create", "queue", name("q"), "--set", "no_such=1")
    assert bad.code == 2 and "unknown QueueProperties property 'no_such'" in bad.err
    bad = sb("entities", "create", "queue", name("q"), "--set", "max_delivery_count=many")
    assert bad.code == 2 and "max_delivery_count" in bad.err
    invalid = sb("entities", "create", "queue", "bad name!")
    assert invalid.code == 1 and "invalid queue name" in invalid.err and "Traceback" not in invalid.err
    assert sb("entities", "frobnicate").code == 2
    assert sb("entities", "delete", "queue", name("gone"), "--yes").code == 3
    no_url = run_cli("entities", "list")
    assert no_url.code == 2 and "SBREDIS_URL" in no_url.err


def test_update_topic_and_subscription_and_refused_rule_options(sb: Any, admin: Any) -> None:
    t = name("clit")
    assert sb("entities", "create", "topic", t).code == 0
    assert sb("entities", "create", "subscription", t, "s").code == 0
    r = sb("entities", "update", "topic", t, "--set", "default_message_time_to_live=60")
    assert r.code == 0 and f"updated topic {t}" in r.out, r
    assert admin.get_topic(t).default_message_time_to_live.total_seconds() == 60
    r = sb("entities", "update", "subscription", t, "s", "--set", "max_delivery_count=4", "--set", "status=Disabled")
    assert r.code == 0 and f"updated subscription {t}/Subscriptions/s" in r.out, r
    sub = admin.get_subscription(t, "s")
    assert (sub.max_delivery_count, sub.status) == (4, "Disabled")

    refused = [
        (("update", "rule", t, "s", "$Default"), "give --sql, --correlation or --action"),
        (("create", "rule", t, "s", "r", "--sql", "1=1", "--correlation", "subject=x"), "not both"),
        (("create", "rule", t, "s", "r", "--correlation", "subject"), "--correlation takes FIELD=VALUE"),
        (("create", "rule", t, "s", "r", "--correlation", "colour=red"), "unknown correlation field 'colour'"),
        (("update", "subscription", t, "s", "--set", "max_delivery_count"), "--set takes NAME=VALUE"),
        (("update", "subscription", t, "s", "--set", "requires_session=maybe"), "requires_session: cannot use"),
    ]
    for args, says in refused:
        r = sb("entities", *args)
        assert r.code == 2 and says in r.err, (args, r)
    assert [x.name for x in admin.list_rules(t, "s")] == ["$Default"]  # nothing refused was made

    r = sb("entities", "create", "rule", t, "s", "by-id", "--correlation", "correlation_id=abc")
    assert r.code == 0 and admin.get_rule(t, "s", "by-id").filter.correlation_id == "abc"
    r = sb("entities", "delete", "topic", t, "--yes", "--json")
    assert r.code == 0 and r.json() == {"deleted": "topic", "name": t}


def test_list_of_an_empty_namespace() -> None:
    r = run_cli("entities", "list", url=f"memory://{name('empty')}")  # a new in-process namespace
    assert r.code == 0 and "no entities" in r.out, r
