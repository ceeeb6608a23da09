"""Wide topics (issue 23, bounded work in every script): a topic holds at most 2,000 subscriptions
(Service Bus's quota), refused past it with ServiceBusQuotaExceededError before anything is
written, from the client and the CLI alike; and one publish to all 2,000 stores every copy with no
script call over 50 ms in the server's SLOWLOG (docs/topics.md, "Fan-out cost").

The topic is full-sized in CI too (creating 2,000 subscriptions takes a few seconds); the publish
check runs SBREDIS_FANOUT_ROUNDS publishes (default 3), each measured alone.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from sbredis import ServiceBusClient, ServiceBusMessage, ServiceBusReceiveMode
from sbredis._core.topic_entity import MAX_SUBSCRIPTIONS_PER_TOPIC
from sbredis.exceptions import MessagingEntityNotFoundError, ServiceBusQuotaExceededError
from sbredis.management import ServiceBusAdministrationClient
from tests.cli.conftest import run_cli
from tests.redis_server import RedisServer
from tests.reliability.conftest import SLOW_SCRIPT_US

pytestmark = [pytest.mark.integration, pytest.mark.reliability, pytest.mark.standalone]

SLOW_US = SLOW_SCRIPT_US  # a script call slower than this is a failure (50 ms; more under xdist)
ROUNDS = int(os.environ.get("SBREDIS_FANOUT_ROUNDS", "3"))


@pytest.fixture(scope="module")
def server() -> Iterator[RedisServer]:
    srv = RedisServer().start()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def raw(server: RedisServer) -> Iterator[redis.Redis]:
    r = redis.Redis.from_url(server.url)
    r.config_set("slowlog-max-len", 1024)
    yield r
    r.close()


@pytest.fixture(scope="module")
def admin(server: RedisServer) -> Iterator[ServiceBusAdministrationClient]:
    with ServiceBusAdministrationClient.from_connection_string(server.url) as a:
        yield a


@pytest.fixture(scope="module")
def client(server: RedisServer) -> Iterator[ServiceBusClient]:
    with ServiceBusClient.from_connection_string(server.url) as c:
        yield c


@pytest.fixture(scope="module")
def full_topic(admin: ServiceBusAdministrationClient) -> str:
    """A topic with the maximum number of subscriptions."""
    topic = "t-" + uuid.uuid4().hex[:10]
    admin.create_topic(topic)
    for i in range(MAX_SUBSCRIPTIONS_PER_TOPIC):
        admin.create_subscription(topic, f"s{i:04d}")
    return topic


def slow_scripts(raw: redis.Redis) -> list[tuple[int, bytes]]:
    return [
        (e["duration"], e["command"][:60])
        for e in raw.slowlog_get(1024)
        if e["command"].split(b" ", 1)[0].upper() in (b"EVALSHA", b"EVAL")
    ]


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


def test_one_publish_to_2000_subscriptions_stays_under_the_script_bound(
    client: ServiceBusClient, raw: redis.Redis, full_topic: str
) -> None:
    with client.get_topic_sender(full_topic) as sender:
        sender.send_messages(ServiceBusMessage("warm"))  # the sender learns the subscription set
        raw.config_set("slowlog-log-slower-than", SLOW_US)
        raw.slowlog_reset()
        slow: list[tuple[int, bytes]] = []
        for i in range(ROUNDS):
            sender.send_messages(ServiceBusMessage(f"m{i}"))
            slow += slow_scripts(raw)
            raw.slowlog_reset()
        raw.config_set("slowlog-log-slower-than", 10_000)
    assert slow == [], f"publish calls over {SLOW_US} us: {slow}"
    for name in ("s0000", "s1000", "s1999"):
        with client.get_subscription_receiver(
            full_topic, name, receive_mode=ServiceBusReceiveMode.RECEIVE_AND_DELETE, max_wait_time=1
        ) as r:
            got: list[Any] = []
            while batch := r.receive_messages(max_message_count=10, max_wait_time=0.5):
                got += batch
        assert [str(m) for m in got] == ["warm"] + [f"m{i}" for i in range(ROUNDS)]
