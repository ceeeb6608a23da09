"""Scripts whose work the data used to set, now capped per call (docs/keyspace.md, "Per-call
caps"): each test builds the worst case, checks that the client still gets the complete answer (it
calls again where a capped call stopped) and that the server's SLOWLOG shows no script call over
50 ms.

CI sizes; SBREDIS_BATTERY_SCALE=full multiplies them.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import redis

from sbredis import NEXT_AVAILABLE_SESSION, ServiceBusClient, ServiceBusMessage, ServiceBusReceiveMode
from sbredis._core.keys import PARTITION_KEY_NAMES, partition_keys, subscription_keys
from sbredis.exceptions import MessageNotFoundError, OperationTimeoutError, ServiceBusQuotaExceededError
from tests.redis_server import RedisServer
from tests.reliability import solo
from tests.reliability.conftest import SLOW_SCRIPT_US, scaled

# this module's own redis-server and clients (tests/reliability/solo.py)
admin, client, raw, server = solo.admin, solo.client, solo.raw, solo.server

pytestmark = [pytest.mark.integration, pytest.mark.reliability, pytest.mark.standalone]

SLOW_US = SLOW_SCRIPT_US  # a script call slower than this is a failure (50 ms; more under xdist)
BATCH = 2_000


@pytest.fixture()
def slowlog(raw: redis.Redis) -> Iterator[None]:
    """Script calls from the test body on (after its setup) must each take less than SLOW_US."""
    yield None
    slow = [
        (e["duration"], e["command"][:60])
        for e in raw.slowlog_get(1024)
        if e["command"].split(b" ", 1)[0].upper() in (b"EVALSHA", b"EVAL")
    ]
    assert not slow, f"script calls over {SLOW_US} us: {slow}"


def measure(raw: redis.Redis) -> None:
    raw.config_set("slowlog-log-slower-than", SLOW_US)
    raw.slowlog_reset()


def session_queue(admin: Any) -> str:
    q = "q-" + uuid.uuid4().hex[:10]
    admin.create_queue(q, requires_session=True)
    return q


def send_sessions(client: ServiceBusClient, q: str, sids: list[str], body: str = "m") -> None:
    with client.get_queue_sender(q) as s:
        for i in range(0, len(sids), BATCH):
            s.send_messages([ServiceBusMessage(body, session_id=sid) for sid in sids[i : i + BATCH]])


def test_a_session_peek_finds_its_messages_behind_many_of_other_sessions(
    admin: Any, client: ServiceBusClient, raw: redis.Redis, slowlog: None
) -> None:
    """peek.lua filtered by session read the log on until it found `count` of that session's
    messages: with the session's messages far apart, one call read the whole log."""
    q = session_queue(admin)
    others = scaled(60_000, 300_000)
    send_sessions(client, q, ["b"])
    send_sessions(client, q, ["a"] * (others // 2))
    send_sessions(client, q, ["b"])
    send_sessions(client, q, ["a"] * (others - others // 2))
    send_sessions(client, q, ["b"])
    measure(raw)
    with client.get_queue_receiver(q, session_id="b") as r:
        peeked = r.peek_messages(10)
        assert [m.session_id for m in peeked] == ["b", "b", "b"]
        seqs = [m.sequence_number for m in peeked]
        assert seqs == sorted(seqs) and seqs[2] - seqs[0] == others + 2
        assert r.peek_messages(10) == []  # the next peek starts after the last one peeked
    admin.delete_queue(q)


def test_listing_many_sessions_is_complete_and_paged(
    admin: Any, client: ServiceBusClient, raw: redis.Redis, slowlog: None
) -> None:
    """session_list.lua jumped once per session with messages and read every lock holder and
    state in one call; it now pages (LIST_PAGE per call) and the client follows the cursor."""
    q = session_queue(admin)
    n = scaled(30_000, 150_000)
    with_messages = [f"s{i:06d}" for i in range(n)]
    send_sessions(client, q, with_messages)
    stated = [f"t{i:04d}" for i in range(scaled(1_100, 2_500))]  # over a page of state entries
    for sid in stated:
        with client.get_queue_receiver(q, session_id=sid) as r:
            r.session.set_state(b"x")  # type: ignore[union-attr]
    measure(raw)
    with client.get_queue_receiver(q, session_id="s000007") as held:  # a lock holder is listed once
        assert held.session is not None
        listed = client.list_queue_sessions(q)
    assert listed == sorted(with_messages + stated)
    admin.delete_queue(q)


def test_freeing_many_elapsed_session_locks_is_spread_over_calls(
    server: RedisServer, admin: Any, client: ServiceBusClient, raw: redis.Redis, slowlog: None
) -> None:
    """session_lock's sweep freed every elapsed session lock it found (up to 100), each with all
    its locked messages: 60 sessions of 200 locked messages were 12,000 releases in one call. It
    now stops once SESS_FREE_BUDGET messages were released; the next calls free the rest, and
    every message comes back with its delivery counted."""
    q = "q-" + uuid.uuid4().hex[:10]
    admin.create_queue(q, requires_session=True, lock_duration=timedelta(seconds=1))
    sessions, per = scaled(60, 200), 200
    sids = [f"s{i:03d}" for i in range(sessions)]
    send_sessions(client, q, [sid for sid in sids for _ in range(per)])
    with ServiceBusClient.from_connection_string(server.url) as holder:  # takes the locks, lets them elapse
        last = 0.0
        for sid in sids:
            r = holder.get_queue_receiver(q, session_id=sid)
            assert len(r.receive_messages(max_message_count=per, max_wait_time=1)) == per
            assert r.session is not None and r.session.locked_until_utc is not None
            last = max(last, r.session.locked_until_utc.timestamp())
        deadline = time.monotonic() + 10
        while raw.time()[0] <= last + 0.5:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        measure(raw)
        got: list[Any] = []
        for _ in range(sessions + 5):
            try:
                r = client.get_queue_receiver(
                    q,
                    session_id=NEXT_AVAILABLE_SESSION,
                    max_wait_time=0.5,
                    receive_mode=ServiceBusReceiveMode.RECEIVE_AND_DELETE,
                )
                with r:
                    while batch := r.receive_messages(max_message_count=100, max_wait_time=0.2):
                        got += batch
            except OperationTimeoutError:
                break
    assert len(got) == sessions * per
    assert {m.delivery_count for m in got} == {1}  # the elapsed lock counted a delivery
    admin.delete_queue(q)


def test_a_session_receiver_holds_at_most_2000_unsettled_messages(
    admin: Any, client: ServiceBusClient, raw: redis.Redis, slowlog: None
) -> None:
    """Renewing or releasing a session lock touches every message locked under it: a receiver
    holding 50,000 unsettled messages made one renew_lock take 0.5 s and its close 1.6 s of server
    time. Past 2,000 held, a receive is ServiceBusQuotaExceededError (nothing is locked); settling
    makes room again, and renewing and closing stay under SLOW_US."""
    q = session_queue(admin)
    send_sessions(client, q, ["A"] * 2_600)
    receiver = client.get_queue_receiver(q, session_id="A")
    held: list[Any] = []
    measure(raw)
    while len(held) < 2_000:
        got = receiver.receive_messages(max_message_count=500, max_wait_time=1)
        assert got
        held += got
    assert len(held) == 2_000
    with pytest.raises(ServiceBusQuotaExceededError):
        receiver.receive_messages(max_message_count=1, wait=False)
    deferred = held.pop()
    receiver.defer_message(deferred)
    held += receiver.receive_messages(max_message_count=500, max_wait_time=1)
    assert len(held) == 2_000
    with pytest.raises(ServiceBusQuotaExceededError):
        receiver.receive_deferred_messages([deferred.sequence_number])
    receiver.complete_messages(held[:100])
    assert len(receiver.receive_deferred_messages([deferred.sequence_number])) == 1
    assert len(receiver.receive_messages(max_message_count=500, max_wait_time=1)) == 99
    receiver.session.renew_lock()
    receiver.close()
    with client.get_queue_receiver(q, session_id="A", receive_mode=ServiceBusReceiveMode.RECEIVE_AND_DELETE) as r:
        left = 0
        while batch := r.receive_messages(max_message_count=500, max_wait_time=0.5):
            left += len(batch)
    assert left == 2_600 - 100 - 1  # the one received by sequence number is deferred again
    admin.delete_queue(q)


@pytest.mark.parametrize("sessions", [False, True])
def test_receiving_and_peeking_many_large_messages_is_spread_over_calls(
    admin: Any, client: ServiceBusClient, raw: redis.Redis, slowlog: None, sessions: bool
) -> None:
    """A receive or peek of 1,000 messages of 60 KB read 60 MB in one script call (5,000 of 50 KB
    took 3.3 s). A call now reads at most READ_BYTES (8 MiB) of messages: a receive calls again
    within its wait while a reply says more is left, a peek follows the reply's resume, and
    everything arrives once, in order (the slowlog fixture holds each call under SLOW_US)."""
    q = "q-" + uuid.uuid4().hex[:10]
    admin.create_queue(q, requires_session=sessions)
    count, body = 1_000, "x" * 60_000
    sid = "A" if sessions else None
    with client.get_queue_sender(q) as s:
        for i in range(0, count, 4):
            s.send_messages([ServiceBusMessage(body, session_id=sid, message_id=str(i + j)) for j in range(4)])
    measure(raw)
    kw: dict[str, Any] = {"session_id": sid} if sessions else {}
    with client.get_queue_receiver(q, **kw) as r:
        peeked = r.peek_messages(count)
        assert [m.message_id for m in peeked] == [str(i) for i in range(count)]
        got: list[Any] = []
        while len(got) < count:
            batch = r.receive_messages(max_message_count=count, max_wait_time=1)
            assert batch
            r.complete_messages(batch)
            got += batch
    assert [m.message_id for m in got] == [str(i) for i in range(count)]
    admin.delete_queue(q)


def test_forwarding_many_large_messages_is_spread_over_calls(
    admin: Any, client: ServiceBusClient, raw: redis.Redis, slowlog: None
) -> None:
    """forward_out moved up to 500 messages into its outbox and returned up to 500 outbox entries
    in one call (30 MB of 60 KB messages); each now stops at READ_BYTES and the forwarder goes on
    while a reply is full, so every message arrives."""
    dest = "q-" + uuid.uuid4().hex[:10]
    src = "q-" + uuid.uuid4().hex[:10]
    admin.create_queue(dest)
    admin.create_queue(src, forward_to=dest)
    count, body = 600, "x" * 60_000
    measure(raw)
    with client.get_queue_sender(src) as s:
        for i in range(0, count, 4):
            s.send_messages([ServiceBusMessage(body, message_id=str(i + j)) for j in range(4)])
    got: list[Any] = []
    with client.get_queue_receiver(dest, receive_mode=ServiceBusReceiveMode.RECEIVE_AND_DELETE) as r:
        deadline = time.monotonic() + 30
        while len(got) < count and time.monotonic() < deadline:
            got += r.receive_messages(max_message_count=count, max_wait_time=1)
    assert sorted(int(m.message_id) for m in got) == list(range(count))
    admin.delete_queue(src)
    admin.delete_queue(dest)


def test_receiving_many_large_deferred_messages_is_spread_over_calls(
    admin: Any, client: ServiceBusClient, raw: redis.Redis, slowlog: None
) -> None:
    """receive_deferred_messages took every number in one call: 1,000 deferred messages of 60 KB
    were 60 MB read at once. A call now stops once it read READ_BYTES (every number was checked
    first) and the receiver asks again for the rest."""
    q = "q-" + uuid.uuid4().hex[:10]
    admin.create_queue(q)
    count, body = 1_000, "x" * 60_000
    with client.get_queue_sender(q) as s:
        for i in range(0, count, 4):
            s.send_messages([ServiceBusMessage(body, message_id=str(i + j)) for j in range(4)])
    seqs: list[int] = []
    with client.get_queue_receiver(q) as r:
        while len(seqs) < count:
            batch = r.receive_messages(max_message_count=count, max_wait_time=1)
            r.defer_messages(batch)
            seqs += [m.sequence_number for m in batch]
        measure(raw)
        with pytest.raises(MessageNotFoundError):
            r.receive_deferred_messages([*seqs[1:], max(seqs) + 1])  # one not deferred: none taken
        got = r.receive_deferred_messages(seqs)
        assert [m.message_id for m in got] == [str(i) for i in range(count)]
        r.complete_messages(got)
    assert admin.get_queue_runtime_properties(q).total_message_count == 0
    admin.delete_queue(q)


@pytest.mark.parametrize("old_maps", [False, True], ids=["sizes kept", "maps without sizes"])
def test_cancelling_scheduled_topic_messages_with_many_copies(
    admin: Any, client: ServiceBusClient, raw: redis.Redis, slowlog: None, old_maps: bool
) -> None:
    """Cancelling 200 scheduled messages of 60 KB on a topic with 20 subscriptions read each of
    the 4,000 copies back for its size (133 ms in one call); publish now keeps the copies' sizes
    in the message's copy map. A map written before that (no sizes) is still cancelled whole."""
    topic = "t-" + uuid.uuid4().hex[:10]
    admin.create_topic(topic)
    subs = [f"s{i}" for i in range(20)]
    for sub in subs:
        admin.create_subscription(topic, sub)
    later = datetime.now(UTC) + timedelta(hours=1)
    with client.get_topic_sender(topic) as s:
        seqs: list[int] = []
        for _ in range(100):
            seqs += s.schedule_messages([ServiceBusMessage("x" * 60_000) for _ in range(2)], later)
        if old_maps:
            raw.config_set("slowlog-log-slower-than", -1)
            lk = dict(zip(PARTITION_KEY_NAMES, partition_keys(topic, 0), strict=True))["lk"]
            for field, value in raw.hgetall(lk).items():
                m = json.loads(value)
                raw.hset(lk, field, json.dumps([v for i, v in enumerate(m) if i % 3 != 2]))
            raw.slowlog_reset()  # such maps' copies are read back, as before: not measured
        else:
            measure(raw)
        s.cancel_scheduled_messages(seqs)
        raw.config_set("slowlog-log-slower-than", SLOW_US)
    for sub in subs:
        assert admin.get_subscription_runtime_properties(topic, sub).total_message_count == 0
        keys = dict(zip(PARTITION_KEY_NAMES, subscription_keys(topic, sub, 0), strict=True))
        assert raw.zcard(keys["sched"]) == 0 and raw.xlen(keys["log"]) == 0
        assert raw.hget(keys["st"], "size") == b"0"  # each copy's size was taken off its partition
    admin.delete_topic(topic)


@pytest.mark.parametrize("how", ["queue", "session", "deferred"])
def test_receiving_thousands_of_small_messages_is_spread_over_calls_and_complete(
    admin: Any, client: ServiceBusClient, raw: redis.Redis, slowlog: None, how: str
) -> None:
    """One receive of 5,000 messages of 1 KB read them all in one call (70 ms; under the byte cap).
    A call now also stops after READ_US of reading and says so; receive_messages calls again
    within its wait, so max_message_count=N still returns N when N are available. A session
    receive (at most 2,000 held) and receive_deferred_messages (1,000 numbers a call) likewise."""
    q = "q-" + uuid.uuid4().hex[:10]
    admin.create_queue(q, requires_session=how == "session")
    count = {"queue": 5_000, "session": 2_000, "deferred": 1_000}[how]
    sid = "A" if how == "session" else None
    with client.get_queue_sender(q) as s:
        for i in range(0, count, 200):  # under the 256 KiB batch limit
            s.send_messages(
                [ServiceBusMessage(b"x" * 1_000, session_id=sid, message_id=str(i + j)) for j in range(200)]
            )
    kw: dict[str, Any] = {"session_id": sid} if sid else {}
    with client.get_queue_receiver(q, **kw) as r:
        if how == "deferred":
            seqs: list[int] = []
            while len(seqs) < count:
                batch = r.receive_messages(max_message_count=count, max_wait_time=5)
                r.defer_messages(batch)
                seqs += [m.sequence_number for m in batch]
            measure(raw)
            got = r.receive_deferred_messages(seqs)
        else:
            measure(raw)
            got = r.receive_messages(max_message_count=count, max_wait_time=30)
        assert [m.message_id for m in got] == [str(i) for i in range(count)]
        r.complete_messages(got)
    assert admin.get_queue_runtime_properties(q).total_message_count == 0
    admin.delete_queue(q)
