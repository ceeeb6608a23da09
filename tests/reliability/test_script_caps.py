"""Scripts whose work the data used to set, now capped per call (docs/keyspace.md, "Per-call
caps"): each test builds the worst case, checks that the client still gets the complete answer (it
calls again where a capped call stopped) and that the server's SLOWLOG shows no script call over
50 ms.

CI sizes; SBREDIS_BATTERY_SCALE=full multiplies them.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
import redis

from sbredis import NEXT_AVAILABLE_SESSION, ServiceBusClient, ServiceBusMessage, ServiceBusReceiveMode
from sbredis.exceptions import OperationTimeoutError
from sbredis.management import ServiceBusAdministrationClient
from tests.redis_server import RedisServer
from tests.reliability.conftest import scaled

pytestmark = [pytest.mark.integration, pytest.mark.reliability, pytest.mark.standalone]

SLOW_US = 50_000  # a script call slower than this is a failure
BATCH = 2_000


@pytest.fixture(scope="module")
def server() -> Iterator[RedisServer]:
    srv = RedisServer().start()
    raw = redis.Redis.from_url(srv.url)
    raw.config_set("slowlog-max-len", 1024)
    raw.close()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def raw(server: RedisServer) -> Iterator[redis.Redis]:
    r = redis.Redis.from_url(server.url)
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
