"""Wide topics (issue 23, bounded work in every script): a topic holds at most 2,000 subscriptions
(Service Bus's quota), refused past it with ServiceBusQuotaExceededError before anything is
written, from the client and the CLI alike; and one publish to all 2,000 stores every copy, split
across script calls none of which is slower than SLOW_SCRIPT_US (SLOWLOG: 50 ms, more under
xdist). What such a publish costs is measured by bench/bench_fanout_wide.py (docs/topics.md,
"Fan-out cost").
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
import redis

from sbredis import ServiceBusClient, ServiceBusMessage, ServiceBusReceiveMode
from sbredis._core.topic_entity import MAX_SUBSCRIPTIONS_PER_TOPIC
from sbredis.exceptions import MessagingEntityNotFoundError, ServiceBusQuotaExceededError
from sbredis.management import ServiceBusAdministrationClient
from tests.cli.conftest import run_cli
from tests.redis_server import RedisServer
from tests.reliability import solo
from tests.reliability.conftest import SLOW_SCRIPT_US, scaled

# this module's own redis-server and clients (tests/reliability/solo.py)
admin, client, raw, server = solo.admin, solo.client, solo.raw, solo.server

pytestmark = [pytest.mark.integration, pytest.mark.reliability, pytest.mark.standalone]


@pytest.fixture(scope="module")
def full_topic(admin: ServiceBusAdministrationClient) -> str:
    """A topic with the maximum number of subscriptions."""
    topic = "t-" + uuid.uuid4().hex[:10]
    admin.create_topic(topic)
    for i in range(MAX_SUBSCRIPTIONS_PER_TOPIC):
        admin.create_subscription(topic, f"s{i:04d}")
    return topic


def test_the_2001st_subscription_is_refused_before_anything_is_written(
    admin: ServiceBusAdministrationClient, server: RedisServer, full_topic: str
) -> None:
    assert MAX_SUBSCRIPTIONS_PER_TOPIC == 2_000
    with pytest.raises(ServiceBusQuotaExceededError, match="2000"):
        admin.create_subscription(full_topic, "one-more")
    with pytest.raises(MessagingEntityNotFoundError):
        admin.get_subscription(full_topic, "one-more")
    assert admin.get_topic_runtime_properties(full_topic).subscription_count == 2_000

    r = run_cli("entities", "create", "subscription", full_topic, "one-more", url=server.url)
    assert r.code != 0, r
    assert "ServiceBusQuotaExceededError" in r.err, r
    with pytest.raises(MessagingEntityNotFoundError):
        admin.get_subscription(full_topic, "one-more")

    admin.delete_subscription(full_topic, "s1999")  # room again
    admin.create_subscription(full_topic, "s1999")
    assert admin.get_topic_runtime_properties(full_topic).subscription_count == 2_000


def test_one_publish_to_2000_subscriptions_stores_every_copy_in_calls_under_the_bound(
    client: ServiceBusClient, full_topic: str, raw: redis.Redis
) -> None:
    """A call's work is a few ms of server CPU, but on a loaded machine any call may lose the CPU
    for a time slice or more (SLOWLOG measures wall time): a round with a slow call is tried again,
    up to 3 rounds. One atomic call to 2,000 subscriptions takes 70-90 ms of CPU alone, so it
    fails every round."""
    n = scaled(10, 50)  # messages of the batch publish
    raw.config_set("slowlog-log-slower-than", SLOW_SCRIPT_US)
    for _ in range(3):
        raw.slowlog_reset()
        with client.get_topic_sender(full_topic) as sender:
            sender.send_messages(ServiceBusMessage("one"))
            sender.send_messages([ServiceBusMessage(f"m{i}") for i in range(n)])
        slow = [e for e in raw.slowlog_get(1024) if e["command"].split(b" ", 1)[0].upper() in (b"EVALSHA", b"EVAL")]
        if not slow:
            break
    raw.config_set("slowlog-log-slower-than", 10_000)
    assert not slow, [(e["duration"], e["command"][:60]) for e in slow]
    for name in ("s0000", "s1000", "s1999"):
        with client.get_subscription_receiver(
            full_topic, name, receive_mode=ServiceBusReceiveMode.RECEIVE_AND_DELETE, max_wait_time=1
        ) as r:
            got: list[Any] = []
            while batch := r.receive_messages(max_message_count=100, max_wait_time=0.5):
                got += batch
        assert [str(m) for m in got][-(n + 1) :] == ["one"] + [f"m{i}" for i in range(n)]


def test_every_way_of_reading_a_subscription_gives_its_copies(
    admin: ServiceBusAdministrationClient, client: ServiceBusClient, raw: redis.Redis
) -> None:
    """publish reads a subscription with only the $Default rule with one HMGET (its cfg's nf says
    no other field is there); one written before nf existed, one with more rules, one whose
    $Default has an action and one retired by auto-delete-on-idle are read whole."""
    from sbredis._core.keys import subscription_keys
    from sbredis.management import SqlRuleAction, SqlRuleFilter

    topic = "t-" + uuid.uuid4().hex[:10]
    admin.create_topic(topic)
    for name in ("plain", "old", "more", "acted", "retired"):
        admin.create_subscription(topic, name)
    raw.hdel(subscription_keys(topic, "old", 0)[0], "nf")
    admin.create_rule(topic, "more", "only-x", filter=SqlRuleFilter("sys.label = 'x'"))
    admin.delete_rule(topic, "more", "$Default")
    admin.delete_rule(topic, "acted", "$Default")
    admin.create_rule(topic, "acted", "$Default", action=SqlRuleAction("SET user.tag = 'seen'"))
    cfg = subscription_keys(topic, "retired", 0)[0]
    raw.hset(cfg, mapping={"pre": "Active", "status": "Disabled"})  # what idle.lua's retire writes
    with client.get_topic_sender(topic) as sender:
        sender.send_messages([ServiceBusMessage("x", subject="x"), ServiceBusMessage("y", subject="y")])
    raw.hset(cfg, "status", "Active")
    raw.hdel(cfg, "pre")
    got: dict[str, list[Any]] = {}
    for name in ("plain", "old", "more", "acted", "retired"):
        with client.get_subscription_receiver(
            topic, name, receive_mode=ServiceBusReceiveMode.RECEIVE_AND_DELETE, max_wait_time=1
        ) as r:
            got[name] = r.receive_messages(max_message_count=10, max_wait_time=1)
    assert {n: [str(m) for m in ms] for n, ms in got.items()} == {
        "plain": ["x", "y"],
        "old": ["x", "y"],
        "more": ["x"],
        "acted": ["x", "y"],
        "retired": ["x", "y"],
    }
    assert [m.application_properties.get(b"tag") for m in got["acted"]] == [b"seen", b"seen"]
    admin.delete_topic(topic)
