"""Promises of README.md and docs/semantics.md that no other test held to, through the public API on a
real redis-server, through both APIs (``api``: sync, and sbredis.aio behind tests/sync_over_async.py)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import redis

from sbredis import ServiceBusMessage, ServiceBusReceiveMode, ServiceBusSubQueue
from sbredis.exceptions import ServiceBusError
from tests.conftest import eventually
from tests.redis_server import RedisServer

pytestmark = [pytest.mark.integration, pytest.mark.parametrize("api", ["sync", "async"], indirect=True)]


def test_dead_lettered_messages_get_the_subqueues_own_sequence_numbers(client: Any, make_queue: Any) -> None:
    """README: "Dead-lettered messages get the dead-letter subqueue's own sequence numbers"."""
    q = make_queue()
    client.get_queue_sender(q).send_messages([ServiceBusMessage(f"m{i}") for i in range(5)])
    with client.get_queue_receiver(q) as r:
        got = r.receive_messages(5, max_wait_time=2)
        assert [str(m) for m in got] == [f"m{i}" for i in range(5)]
        main = {str(m): m.sequence_number for m in got}
        for m in (got[4], got[2]):  # dead-lettered in this order
            r.dead_letter_message(m, reason="test")
        r.complete_messages([got[0], got[1], got[3]])
    with client.get_queue_receiver(q, sub_queue=ServiceBusSubQueue.DEAD_LETTER) as dlq:
        dead = dlq.peek_messages(10)
    assert [str(m) for m in dead] == ["m4", "m2"]
    # the subqueue numbers what arrives from its own start, as the queue numbered m0.., m4
    assert [m.sequence_number for m in dead] == [main["m0"], main["m1"]]
    assert [m.sequence_number for m in dead] != [main["m4"], main["m2"]]


def test_a_new_default_ttl_leaves_stored_messages_expiry_alone(admin: Any, client: Any, make_queue: Any) -> None:
    """docs/semantics.md: a change of default_message_time_to_live applies to messages sent after it."""
    q = make_queue(default_message_time_to_live=timedelta(minutes=10))
    sender = client.get_queue_sender(q)
    sender.send_messages(ServiceBusMessage("before"))
    with client.get_queue_receiver(q) as r:
        [before] = r.peek_messages(1)
    props = admin.get_queue(q)
    props.default_message_time_to_live = timedelta(seconds=1)
    admin.update_queue(props)
    sender.send_messages(ServiceBusMessage("after"))
    with client.get_queue_receiver(q) as r:
        stored = {str(m): m for m in r.peek_messages(10, sequence_number=0)}
    assert stored["before"].expires_at_utc == before.expires_at_utc
    assert stored["before"].expires_at_utc == before.enqueued_time_utc + timedelta(minutes=10)
    assert stored["after"].expires_at_utc == stored["after"].enqueued_time_utc + timedelta(seconds=1)
    expired = stored["after"].expires_at_utc + timedelta(milliseconds=50)
    eventually(lambda: datetime.now(UTC) > expired, timeout=5)  # the server's clock is this machine's
    with client.get_queue_receiver(q, receive_mode=ServiceBusReceiveMode.RECEIVE_AND_DELETE) as r:
        got = [str(m) for m in r.receive_messages(10, max_wait_time=0.5)]
    assert got == ["before"]


def test_timeout_keywords_are_accepted_where_the_sdk_takes_them(client: Any, make_queue: Any) -> None:
    """docs/migration.md: `timeout=` on methods is accepted so ported code runs (azure-servicebus takes
    it on send/schedule/cancel, peek, receive_deferred, renew_message_lock and the session's
    get_state/set_state/renew_lock; not on receive_messages or the settlements)."""
    q = make_queue()
    sender = client.get_queue_sender(q)
    sender.send_messages(ServiceBusMessage("a"), timeout=5)
    [seq] = sender.schedule_messages(ServiceBusMessage("later"), datetime.now(UTC) + timedelta(hours=1), timeout=5)
    sender.cancel_scheduled_messages(seq, timeout=5)
    with client.get_queue_receiver(q) as r:
        assert [str(m) for m in r.peek_messages(5, timeout=5)] == ["a"]
        [m] = r.receive_messages(1, max_wait_time=2)
        before = m.locked_until_utc
        r.renew_message_lock(m, timeout=5)
        assert m.locked_until_utc >= before
        r.defer_message(m)
        [again] = r.receive_deferred_messages([m.sequence_number], timeout=5)
        r.complete_message(again)


def test_session_timeout_keywords(admin: Any, client: Any, queue_name: str) -> None:
    admin.create_queue(queue_name, requires_session=True)
    client.get_queue_sender(queue_name).send_messages(ServiceBusMessage("s", session_id="s1"), timeout=5)
    with client.get_queue_receiver(queue_name, session_id="s1") as r:
        r.session.set_state("state", timeout=5)
        assert r.session.get_state(timeout=5) == b"state"
        assert r.session.renew_lock(timeout=5) is not None


@pytest.fixture()
def own_server() -> Iterator[RedisServer]:
    """A server of the test's own: INFO commandstats counts only this test's commands."""
    srv = RedisServer().start()
    yield srv
    srv.stop()


def script_calls(url: str) -> int:
    """Script calls that ran: a script's first EVALSHA fails NOSCRIPT and is loaded and sent again."""
    stats = redis.Redis.from_url(url).info("commandstats").get("cmdstat_evalsha", {})
    return int(stats.get("calls", 0)) - int(stats.get("failed_calls", 0))


def test_the_renewer_renews_every_due_lock_in_one_call_per_partition_when_a_third_is_left(
    own_server: RedisServer, sb_api: Any
) -> None:
    """README: "All due locks of a receiver renew in one script call per partition, when a third of the
    lock duration is left"."""
    lock = timedelta(seconds=3)
    with sb_api.ServiceBusAdministrationClient.from_connection_string(own_server.url) as admin:
        admin.create_queue("q", enable_partitioning=True, partition_count=2, lock_duration=lock)
    with sb_api.ServiceBusClient.from_connection_string(own_server.url) as client:
        client.get_queue_sender("q").send_messages([ServiceBusMessage(str(i), partition_key=str(i)) for i in range(8)])
        with sb_api.AutoLockRenewer() as renewer, client.get_queue_receiver("q") as r:
            got: list[Any] = []
            while len(got) < 8:
                got += r.receive_messages(8, max_wait_time=2)
            assert {m.partition_id for m in got} == {0, 1}
            first = {m.sequence_number: m.locked_until_utc for m in got}
            calls = script_calls(own_server.url)
            for m in got:
                renewer.register(r, m)
            eventually(lambda: all(m.locked_until_utc > first[m.sequence_number] for m in got), timeout=10)
            renew_calls = script_calls(own_server.url) - calls
            # the server set each new lock from its clock at the renewal: how far into the old lock it came
            into = [m.locked_until_utc - first[m.sequence_number] for m in got]
            r.complete_messages(got)  # every lock still held
    assert renew_calls == 2  # one per partition, all eight locks
    assert all(lock * 2 / 3 - timedelta(milliseconds=100) <= t < lock for t in into), into


def test_a_partly_failed_multi_partition_send_names_the_failed_partition(own_server: RedisServer, sb_api: Any) -> None:
    """docs/semantics.md: "when one partition fails, the others may have stored theirs (the error names
    the partition that failed)"."""
    with sb_api.ServiceBusAdministrationClient.from_connection_string(own_server.url) as admin:
        admin.create_queue("q", enable_partitioning=True, partition_count=2)
    with sb_api.ServiceBusClient.from_connection_string(own_server.url) as client:
        sender = client.get_queue_sender("q")
        sender.send_messages([ServiceBusMessage(k, partition_key=k) for k in "abcdefgh"])
        with client.get_queue_receiver("q", receive_mode=ServiceBusReceiveMode.RECEIVE_AND_DELETE) as r:
            where: dict[str, int] = {}
            while len(where) < 8:
                where.update({str(m): m.partition_id for m in r.receive_messages(8, max_wait_time=2)})
        assert set(where.values()) == {0, 1}
        # partition 1's message log becomes a plain string (the keyspace of docs/semantics.md): its
        # share of the next send fails, partition 0's is stored
        raw = redis.Redis.from_url(own_server.url)
        raw.set("{sb:q:1}:log", "not a stream")
        with pytest.raises(ServiceBusError) as info:
            sender.send_messages([ServiceBusMessage(k, partition_key=k) for k in "abcdefgh"])
        raw.delete("{sb:q:1}:log")  # partition 1 held nothing: as it was
        with client.get_queue_receiver("q") as r:
            stored = sorted(str(m) for m in r.peek_messages(10, sequence_number=0))
    assert stored == sorted(k for k, p in where.items() if p == 0)
    assert "partition 1" in info.value.message, info.value.message
    named = {k: v for k, v in info.value.details.items() if "partition" in k}
    assert named in ({"partition": 1}, {"partition_id": 1}), info.value.details
