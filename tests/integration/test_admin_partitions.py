"""Administration, entity status, names, partitioned entities and faults, on a real Redis."""

from __future__ import annotations

import collections
import time
from datetime import timedelta
from typing import Any

import pytest
import redis

from sbredis import ServiceBusClient, ServiceBusMessage, ServiceBusReceiveMode
from sbredis.exceptions import (
    InvalidArgumentError,
    InvalidOperationError,
    MessagingEntityAlreadyExistsError,
    MessagingEntityDisabledError,
    MessagingEntityNotFoundError,
    ServiceBusConnectionError,
    ServiceBusQuotaExceededError,
)
from sbredis.management import EntityStatus, QueueProperties
from tests.redis_server import RedisServer

pytestmark = [pytest.mark.integration, pytest.mark.conformance]


def test_create_get_list_update_delete(admin: Any, client: Any, queue_name: str) -> None:
    created = admin.create_queue(
        queue_name,
        max_delivery_count=5,
        lock_duration=timedelta(seconds=20),
        default_message_time_to_live=timedelta(days=14),
        dead_lettering_on_message_expiration=True,
        requires_duplicate_detection=True,
        duplicate_detection_history_time_window=timedelta(minutes=10),
        max_message_size_in_kilobytes=512,
    )
    assert isinstance(created, QueueProperties)
    got = admin.get_queue(queue_name)
    assert got == created and got.partition_count == 1 and got.max_delivery_count == 5
    assert queue_name in [q.name for q in admin.list_queues()]
    with pytest.raises(MessagingEntityAlreadyExistsError):
        admin.create_queue(queue_name)
    got.max_delivery_count = 7
    admin.update_queue(got, lock_duration=timedelta(seconds=40))
    again = admin.get_queue(queue_name)
    assert again.max_delivery_count == 7 and again.lock_duration == timedelta(seconds=40)
    # the new lock duration is the one scripts enforce
    with client.get_queue_sender(queue_name) as s:
        s.send_messages(ServiceBusMessage("x"))
    with client.get_queue_receiver(queue_name) as r:
        [m] = r.receive_messages(1, max_wait_time=1)
        assert timedelta(seconds=39) < m.locked_until_utc - m.enqueued_time_utc < timedelta(seconds=45)
    admin.delete_queue(queue_name)
    with pytest.raises(MessagingEntityNotFoundError):
        admin.get_queue(queue_name)
    with pytest.raises(MessagingEntityNotFoundError):
        admin.delete_queue(queue_name)
    with pytest.raises(MessagingEntityNotFoundError), client.get_queue_sender(queue_name) as s:
        s.send_messages(ServiceBusMessage("x"))


def test_delete_removes_every_key(admin: Any, client: Any, raw_redis: Any, queue_name: str) -> None:
    admin.create_queue(queue_name, enable_partitioning=True, partition_count=4)
    with client.get_queue_sender(queue_name) as s:
        s.send_messages([ServiceBusMessage(str(i), partition_key=str(i), time_to_live=60) for i in range(8)])
    with client.get_queue_receiver(queue_name) as r:
        r.dead_letter_message(r.receive_messages(1, max_wait_time=1)[0])
    raw = raw_redis
    assert raw.keys(f"{{sb:{queue_name}:*")
    admin.delete_queue(queue_name)
    assert raw.keys(f"{{sb:{queue_name}:*") == []
    assert raw.hget("sb:entities", queue_name) is None


def test_partitioning_cannot_change(admin: Any, make_queue: Any) -> None:
    q = make_queue(enable_partitioning=True)
    props = admin.get_queue(q)
    assert props.partition_count == 16
    props.enable_partitioning = False
    with pytest.raises(InvalidOperationError):
        admin.update_queue(props)
    with pytest.raises(InvalidOperationError):
        admin.update_queue(admin.get_queue(q), partition_count=4)


def test_bad_properties_refused_before_anything_is_written(admin: Any, queue_name: str) -> None:
    for kwargs in (
        {"lock_duration": timedelta(minutes=6)},
        {"lock_duration": timedelta(0)},
        {"default_message_time_to_live": timedelta(seconds=-1)},
        {"max_delivery_count": 0},
        {"max_message_size_in_kilobytes": 102401},
        {"partition_count": 4},
        {"max_delivery_count": "10"},
        {"no_such_option": 1},
    ):
        with pytest.raises(InvalidArgumentError if "partition_count" not in kwargs else InvalidOperationError):
            admin.create_queue(queue_name, **kwargs)
    with pytest.raises(MessagingEntityNotFoundError):
        admin.get_queue(queue_name)


@pytest.mark.parametrize("name", ["", "a{b}", "has space", "x" * 261, "-lead", "trail-", "a:b", "eval('x')"])
def test_invalid_names(admin: Any, client: Any, name: str) -> None:
    with pytest.raises(InvalidArgumentError):
        admin.create_queue(name)
    with pytest.raises(InvalidArgumentError):
        client.get_queue_sender(name)
    with pytest.raises(InvalidArgumentError):
        client.get_queue_receiver(name)


def test_status_is_enforced(admin: Any, client: Any, make_queue: Any) -> None:
    q = make_queue()
    with client.get_queue_sender(q) as s:
        s.send_messages(ServiceBusMessage("before"))
    props = admin.get_queue(q)
    for status, can_send, can_receive in (
        (EntityStatus.SEND_DISABLED, False, True),
        (EntityStatus.RECEIVE_DISABLED, True, False),
        (EntityStatus.DISABLED, False, False),
        (EntityStatus.ACTIVE, True, True),
    ):
        props.status = status
        admin.update_queue(props)
        with client.get_queue_sender(q) as s:
            if can_send:
                s.send_messages(ServiceBusMessage(status.value))
            else:
                with pytest.raises(MessagingEntityDisabledError):
                    s.send_messages(ServiceBusMessage("refused"))
        with client.get_queue_receiver(q) as r:
            if can_receive:
                for m in r.receive_messages(10, max_wait_time=0.2):
                    r.abandon_message(m)
            else:
                with pytest.raises(MessagingEntityDisabledError):
                    r.receive_messages(1, wait=False)
    with client.get_queue_receiver(q) as r:
        assert sorted(str(m) for m in r.receive_messages(10, max_wait_time=0.5)) == [
            "Active",
            "ReceiveDisabled",
            "before",
        ]


def test_quota_exceeded_when_entity_full(admin: Any, client: Any, make_queue: Any) -> None:
    q = make_queue(max_size_in_megabytes=1)
    with client.get_queue_sender(q) as s:
        chunk = [ServiceBusMessage(b"x" * 60_000) for _ in range(4)]
        for _ in range(4):
            s.send_messages(chunk)
        with pytest.raises(ServiceBusQuotaExceededError):
            s.send_messages(chunk)
    assert admin.get_queue_runtime_properties(q).active_message_count == 16


def test_partition_choice_and_mismatched_keys(admin: Any, client: Any, make_queue: Any) -> None:
    q = make_queue(enable_partitioning=True, partition_count=8)
    with pytest.raises(InvalidOperationError):
        ServiceBusMessage("x", session_id="a", partition_key="b")
    with client.get_queue_sender(q) as s:
        for i in range(20):
            s.send_messages(ServiceBusMessage(f"k{i}", partition_key="customer-42"))
        for i in range(32):
            s.send_messages(ServiceBusMessage(f"rr{i}"))
    props = admin.get_queue_runtime_properties(q)
    counts = [p.active_message_count for p in props.partitions]
    assert props.active_message_count == 52 and sum(counts) == 52
    assert all(c > 0 for c in counts), counts  # round robin reaches every partition
    with client.get_queue_receiver(q) as r:
        keyed = [m for m in r.peek_messages(200, sequence_number=1) if str(m).startswith("k")]
    assert len({m.partition_id for m in keyed}) == 1
    assert [str(m) for m in keyed] == [f"k{i}" for i in range(20)]  # send order kept within a key


def test_receive_across_partitions_locks_no_more_than_asked(admin: Any, client: Any, make_queue: Any) -> None:
    q = make_queue(enable_partitioning=True, partition_count=16, lock_duration=timedelta(seconds=30))
    with client.get_queue_sender(q) as s:
        s.send_messages([ServiceBusMessage(f"p{i}", partition_key=f"key-{i}") for i in range(40)])
    seen: collections.Counter[str] = collections.Counter()
    with client.get_queue_receiver(q) as r:
        for want in (1, 3, 7, 16):
            got = r.receive_messages(want, max_wait_time=1)
            assert 1 <= len(got) <= want
            seen.update(str(m) for m in got)
            locked = sum(p.locked_message_count for p in admin.get_queue_runtime_properties(q).partitions)
            assert locked == sum(seen.values())  # nothing locked beyond what was handed out
        rest = []
        while True:
            got = r.receive_messages(50, max_wait_time=0.2)
            if not got:
                break
            rest += got
        seen.update(str(m) for m in rest)
    assert sorted(seen) == sorted(f"p{i}" for i in range(40)) and max(seen.values()) == 1


def test_sparse_partitioned_queue_finds_the_one_message(client: Any, make_queue: Any) -> None:
    q = make_queue(enable_partitioning=True)
    with client.get_queue_sender(q) as s:
        s.send_messages(ServiceBusMessage("needle", partition_key="somewhere"))
    with client.get_queue_receiver(q) as r:
        for _ in range(3):  # whichever partition the rotation starts at
            [m] = r.receive_messages(1, max_wait_time=1)
            assert str(m) == "needle"
            r.abandon_message(m)


def test_duplicate_detection_on_partitioned_queue_uses_message_id(admin: Any, client: Any, make_queue: Any) -> None:
    q = make_queue(enable_partitioning=True, requires_duplicate_detection=True)
    with client.get_queue_sender(q) as s:
        for _ in range(10):
            s.send_messages(ServiceBusMessage("dup", message_id="same-id"))
    assert admin.get_queue_runtime_properties(q).active_message_count == 1


def test_scripts_reload_after_script_flush(client: Any, raw_redis: Any, make_queue: Any) -> None:
    q = make_queue(enable_partitioning=True, partition_count=4)
    with client.get_queue_sender(q) as s:
        s.send_messages(ServiceBusMessage("a"))
        raw_redis.script_flush()
        s.send_messages([ServiceBusMessage(str(i), partition_key=str(i)) for i in range(4)])  # pipelined path
    raw_redis.script_flush()
    got: list[str] = []
    with client.get_queue_receiver(q, receive_mode=ServiceBusReceiveMode.RECEIVE_AND_DELETE) as r:
        deadline = time.monotonic() + 10
        while len(got) < 5 and time.monotonic() < deadline:  # a receive may ask one partition only
            got += [str(m) for m in r.receive_messages(10, max_wait_time=0.5)]
        assert sorted(got) == ["0", "1", "2", "3", "a"]
        assert r.receive_messages(10, max_wait_time=0.2) == []


def test_redis_down_is_a_retryable_connection_error() -> None:
    srv = RedisServer().start()
    try:
        from sbredis.management import ServiceBusAdministrationClient

        ServiceBusAdministrationClient.from_connection_string(srv.url).create_queue("q")
        c = ServiceBusClient.from_connection_string(srv.url, socket_timeout=2, retry_total=1, retry_backoff_factor=0.05)
        with c.get_queue_sender("q") as s:
            s.send_messages(ServiceBusMessage("stored"))
            srv.kill()
            with pytest.raises(ServiceBusConnectionError) as info:
                s.send_messages(ServiceBusMessage("lost"))
            assert info.value.retryable
            assert type(info.value).__module__ == "sbredis.exceptions"
            assert not isinstance(info.value, redis.RedisError)
    finally:
        srv.stop()


def test_restart_with_aof_keeps_messages_and_locks(tmp_path: Any) -> None:
    """appendfsync always: an acknowledged send and a held lock survive kill -9 and restart."""
    srv = RedisServer("--appendonly", "yes", "--appendfsync", "always").start()
    try:
        from sbredis.management import ServiceBusAdministrationClient

        ServiceBusAdministrationClient.from_connection_string(srv.url).create_queue(
            "q", lock_duration=timedelta(seconds=30)
        )
        c = ServiceBusClient.from_connection_string(srv.url)
        with c.get_queue_sender("q") as s:
            s.send_messages([ServiceBusMessage("locked"), ServiceBusMessage("waiting")])
        r = c.get_queue_receiver("q")
        [m] = r.receive_messages(1, max_wait_time=1)
        srv.restart()
        c2 = ServiceBusClient.from_connection_string(srv.url)
        with c2.get_queue_receiver("q") as r2:
            got = r2.receive_messages(5, max_wait_time=0.5)
            assert [str(x) for x in got] == ["waiting"]  # the locked one is still locked
        r.complete_message(m)  # the lock survived the restart (scripts reloaded on NOSCRIPT)
        c.close()
        c2.close()
    finally:
        srv.stop()


def test_keyspace_outside_sbredis_untouched(raw_redis: Any, client: Any, admin: Any, make_queue: Any) -> None:
    raw = raw_redis
    raw.set("user:key", "value")
    raw.hset("user:hash", "a", "1")
    q = make_queue(enable_partitioning=True, partition_count=2)
    with client.get_queue_sender(q) as s:
        s.send_messages([ServiceBusMessage("x"), ServiceBusMessage("redis.call('FLUSHALL')")])
    with client.get_queue_receiver(q) as r:
        got = r.receive_messages(5, max_wait_time=1)
        assert "redis.call('FLUSHALL')" in [str(m) for m in got]
        r.complete_messages(got)
    admin.delete_queue(q)
    assert raw.get("user:key") == b"value" and raw.hget("user:hash", "a") == b"1"
