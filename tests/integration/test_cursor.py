"""The main queue's cursor (sbredis/lua/includes/messages.lua's cursor_of): a sent message gets no ready
entry; receive reads the log past the cursor. What a user sees must not change: every message
once, in sequence order, counts right, schedules at their time, and partitions written by an
older sbredis (every message indexed in ready, no cursor) keep working."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from sbredis import ServiceBusMessage
from sbredis._core import codec, ops
from sbredis._core.keys import PARTITION_KEY_NAMES, partition_keys
from tests.conftest import eventually

pytestmark = [pytest.mark.integration]


def pkeys(q: str) -> dict[str, str]:
    return dict(zip(PARTITION_KEY_NAMES, partition_keys(q, 0), strict=True))


def bodies(msgs: list[Any]) -> list[str]:
    return [str(m) for m in msgs]


def test_a_send_writes_no_ready_entry_and_receive_reads_past_the_cursor(
    client: Any, admin: Any, make_queue: Any, raw_redis: Any
) -> None:
    q = make_queue()
    k = pkeys(q)
    with client.get_queue_sender(q) as s:
        s.send_messages([ServiceBusMessage(f"m{i}") for i in range(5)])
    assert raw_redis.zcard(k["ready"]) == 0
    assert admin.get_queue_runtime_properties(q).active_message_count == 5
    with client.get_queue_receiver(q) as r:
        first = r.receive_messages(2, max_wait_time=1)
        assert bodies(first) == ["m0", "m1"]
        assert int(raw_redis.hget(k["st"], "cur")) == 2
        r.abandon_message(first[0])  # below the cursor now: it goes back through ready, first
        assert raw_redis.zrange(k["ready"], 0, -1) == [b"1"]
        rest = r.receive_messages(10, max_wait_time=1)
        assert bodies(rest) == ["m0", "m2", "m3", "m4"]
        assert rest[0].delivery_count == 1 and all(m.delivery_count == 0 for m in rest[1:])
        r.complete_messages(first[1:] + rest)
    assert admin.get_queue_runtime_properties(q).total_message_count == 0


def test_a_partition_from_before_cursors_keeps_every_message(client: Any, make_queue: Any, raw_redis: Any) -> None:
    """An older sbredis indexed every message in ready and kept no cursor: its messages stay
    deliverable once each, before and after new sends."""
    q = make_queue()
    k = pkeys(q)
    with client.get_queue_sender(q) as s:
        s.send_messages([ServiceBusMessage(f"old{i}") for i in range(3)])
    raw_redis.hdel(k["st"], "cur")  # the partition as an older version left it
    raw_redis.zadd(k["ready"], {b"1": 1, b"2": 2, b"3": 3})
    with client.get_queue_receiver(q) as r:
        got = r.receive_messages(1, max_wait_time=1)
        with client.get_queue_sender(q) as s:
            s.send_messages([ServiceBusMessage("new0"), ServiceBusMessage("new1")])
        got += r.receive_messages(10, max_wait_time=1)
        assert bodies(got) == ["old0", "old1", "old2", "new0", "new1"]
        assert r.receive_messages(10, max_wait_time=0.2) == []
        r.complete_messages(got)


def test_a_schedule_past_the_cursor_comes_once_when_due(client: Any, make_queue: Any, raw_redis: Any) -> None:
    q = make_queue()
    with client.get_queue_sender(q) as s:
        [seq] = s.schedule_messages(ServiceBusMessage("later"), datetime.now(UTC) + timedelta(milliseconds=400))
        s.send_messages(ServiceBusMessage("now"))
    with client.get_queue_receiver(q) as r:
        got = r.receive_messages(10, max_wait_time=0.1)
        assert bodies(got) == ["now"]  # the cursor passed the pending schedule
        later = eventually(lambda: r.receive_messages(10, max_wait_time=0.1), timeout=5)
        assert bodies(later) == ["later"] and later[0].sequence_number == seq
        assert r.receive_messages(10, max_wait_time=0.3) == []
        r.complete_messages(got + later)


def test_a_due_schedule_the_sweep_has_not_reached_is_handed_out_once(client: Any, make_queue: Any) -> None:
    """A receive whose sweep stops short (limit 0) reads a due schedule past the cursor; the sweep
    that reaches it later must not put it in ready again."""
    q = make_queue()
    with client.get_queue_sender(q) as s:
        s.schedule_messages(ServiceBusMessage("due"), datetime.now(UTC) + timedelta(milliseconds=150))
    time.sleep(0.2)
    t = client._transport
    reply = t.run(ops.call("receive", q, 0, "m", "L", 10, ops.new_nonce(), 0), q)
    assert len(reply) == 3 + 5 and codec.body_of(reply[5]) == b"due"
    with client.get_queue_receiver(q) as r:
        assert r.receive_messages(10, max_wait_time=0.3) == []  # it is locked, not in ready twice


def test_a_message_whose_enqueue_time_is_ahead_but_not_scheduled_is_not_skipped(
    client: Any, make_queue: Any, raw_redis: Any
) -> None:
    """Only a pending schedule is passed over: a message stored under a server clock that later
    stepped back (its enqueue time ahead of now, not in the schedule set) is handed out."""
    q = make_queue()
    k = pkeys(q)
    with client.get_queue_sender(q) as s:
        s.send_messages(ServiceBusMessage("first"))
    ahead = int(time.time() * 1000) + 3_600_000
    seq = raw_redis.hincrby(k["st"], "seq", 1)
    blob = ServiceBusMessage("ahead").encoded()
    raw_redis.xadd(k["log"], {"b": blob, "e": ahead, "x": 0}, id=f"{seq}-0")
    raw_redis.hincrby(k["st"], "size", len(blob))
    with client.get_queue_receiver(q) as r:
        got = r.receive_messages(10, max_wait_time=1)
        assert bodies(got) == ["first", "ahead"]
        r.complete_messages(got)


def test_a_receive_over_partitions_fills_up_when_a_probe_counted_an_expired_message(
    client: Any, make_queue: Any
) -> None:
    """A probe counts messages past the cursor without reading them, so an expired one counts
    until a take removes it. A receive that came back short for that reason asks again, so it
    returns every message it was asked for (the demo once got 7 of 8)."""
    q = make_queue(enable_partitioning=True, partition_count=4)
    keys_by_partition: dict[int, str] = {}
    i = 0
    while len(keys_by_partition) < 4:
        keys_by_partition.setdefault(ops.partition_of(f"k{i}", 4), f"k{i}")
        i += 1
    empty, expired, live = 0, 1, 2  # the receive starts at `empty`, then probes in this order
    with client.get_queue_sender(q) as s:
        s.send_messages(
            ServiceBusMessage("gone", partition_key=keys_by_partition[expired], time_to_live=timedelta(milliseconds=50))
        )
        s.send_messages([ServiceBusMessage(f"m{j}", partition_key=keys_by_partition[live]) for j in range(5)])
    time.sleep(0.1)
    with client.get_queue_receiver(q) as r:
        r._cursor = empty
        got = r.receive_messages(5, max_wait_time=1)
        assert sorted(bodies(got)) == [f"m{j}" for j in range(5)]
        r.complete_messages(got)


def test_completing_one_batch_leaves_the_locks_of_another(client: Any, make_queue: Any, raw_redis: Any) -> None:
    """complete frees the whole lock table at once only when the batch holds every lock of it."""
    q = make_queue()
    k = pkeys(q)
    with client.get_queue_sender(q) as s:
        s.send_messages([ServiceBusMessage(f"m{i}") for i in range(6)])
    with client.get_queue_receiver(q) as r1, client.get_queue_receiver(q) as r2:
        a = r1.receive_messages(3, max_wait_time=1)
        b = r2.receive_messages(3, max_wait_time=1)
        assert bodies(a) == ["m0", "m1", "m2"] and bodies(b) == ["m3", "m4", "m5"]
        r1.complete_messages(a)
        assert raw_redis.hlen(k["lk"]) == 3 and raw_redis.zcard(k["locked"]) == 3
        r2.renew_message_lock(b[0])  # b's locks still hold
        r2.complete_messages(b)
        assert not raw_redis.exists(k["lk"], k["locked"])
        assert r1.receive_messages(1, wait=False) == []


def records(raw_redis: Any, q: str) -> dict[str, Any]:
    """A partition's message records with server times made relative to each enqueue time."""
    k = pkeys(q)
    entries = raw_redis.xrange(k["log"])
    enq = {i.split(b"-")[0]: int(f[b"e"]) for i, f in entries}
    st = raw_redis.hgetall(k["st"])
    return {
        "log": [(i, sorted(f), int(f[b"x"]) and int(f[b"x"]) - int(f[b"e"])) for i, f in entries],
        "exp": [(m, int(s) - enq[m]) for m, s in raw_redis.zrange(k["exp"], 0, -1, withscores=True)],
        "ready": raw_redis.zcard(k["ready"]),
        "st": {f: st.get(f) for f in (b"seq", b"cur")},
        "size": int(st[b"size"]) - sum(len(f[b"b"]) for _, f in entries),
    }


@pytest.mark.parametrize("ttl", [None, timedelta(minutes=1)])
def test_the_usual_send_writes_what_a_send_with_every_argument_writes(
    client: Any, admin: Any, make_queue: Any, raw_redis: Any, ttl: timedelta | None
) -> None:
    """send.lua's shortest path (its plain path: blobs alone on an entity without sessions) and
    store's full loop (here: each message's TTL given as the entity's default) keep the same
    records."""
    plain = make_queue(**({"default_message_time_to_live": ttl} if ttl else {}))
    full = plain + "-full"
    admin.create_queue(full, **({"default_message_time_to_live": ttl} if ttl else {}))
    try:
        with client.get_queue_sender(plain) as s:
            s.send_messages([ServiceBusMessage(f"m{i}") for i in range(3)])
            s.send_messages(ServiceBusMessage("one"))
        with client.get_queue_sender(full) as s:
            long = timedelta(days=36500)  # "never" for an entity without a default
            s.send_messages([ServiceBusMessage(f"m{i}", time_to_live=ttl or long) for i in range(3)])
            s.send_messages(ServiceBusMessage("one", time_to_live=ttl or long))
        assert records(raw_redis, plain) == records(raw_redis, full)
        assert len(records(raw_redis, plain)["log"]) == 4
    finally:
        admin.delete_queue(full)
