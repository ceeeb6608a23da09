"""The script-call budget survey (issue 23, "the same review for every other script"): every script
of sbredis/lua/ is driven through the public API at the documented limits (batch and count caps,
2,000 subscriptions a topic, 100 operations a transaction, 4 forwarding hops, 2,000 messages held
by a session, sessions and state at the entity's maximum message size...), and no script call may
take longer than SLOW_SCRIPT_US (SLOWLOG: 50 ms; more under xdist).

Each case names the scripts it drives and fails unless each of them was called (the client's
script calls are counted on the way out: a case that stopped reaching its script fails), and
test_every_script_has_a_case fails when a script is added to sbredis/lua/ without a case.
Sizes: CI by default, ``SBREDIS_BATTERY_SCALE=full`` the limits where CI runs less.

A call that loses the CPU for a time slice on a loaded machine can take longer than its work
(SLOWLOG measures wall time): a case whose round had a slow call runs again, up to 3 rounds
(as tests/reliability/test_fanout_wide.py), and fails when every round had one.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import redis

import sbredis
from sbredis import NEXT_AVAILABLE_SESSION, ServiceBusClient, ServiceBusMessage, ServiceBusReceiveMode
from sbredis._core.topic_entity import MAX_SUBSCRIPTIONS_PER_TOPIC
from sbredis._core.transaction import MAX_OPERATIONS
from sbredis._core.validation import MAX_RECEIVE_COUNT, MAX_SEQUENCE_NUMBERS
from sbredis._sync._transport import Transport
from sbredis.management import ServiceBusAdministrationClient
from tests.redis_server import RedisServer
from tests.reliability import solo
from tests.reliability.conftest import SLOW_SCRIPT_US, scaled

# this module's own redis-server and clients (tests/reliability/solo.py)
admin, client, raw, server = solo.admin, solo.client, solo.raw, solo.server

pytestmark = [pytest.mark.integration, pytest.mark.reliability, pytest.mark.standalone]

LUA = Path(sbredis.__file__).parent / "lua"
ROUNDS = 3

Case = Callable[[ServiceBusAdministrationClient, ServiceBusClient, redis.Redis, RedisServer], None]
CASES: dict[Callable[..., None], tuple[str, ...]] = {}


def case(*scripts: str) -> Callable[[Case], Case]:
    """Register a case and the scripts it must reach."""

    def register(fn: Case) -> Case:
        CASES[fn] = scripts
        return fn

    return register


@pytest.fixture()
def called(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """The names of the scripts the (sync) clients call, counted as the calls go out."""
    seen: Counter[str] = Counter()
    run, run_many = Transport.run, Transport.run_many

    def counting_run(self: Transport, c: Any, *a: Any, **kw: Any) -> Any:
        seen[c.script.name] += 1
        return run(self, c, *a, **kw)

    def counting_run_many(self: Transport, calls: list[Any], *a: Any, **kw: Any) -> Any:
        seen.update(c.script.name for c in calls)
        return run_many(self, calls, *a, **kw)

    monkeypatch.setattr(Transport, "run", counting_run)
    monkeypatch.setattr(Transport, "run_many", counting_run_many)
    return seen


def slow_calls(raw: redis.Redis) -> list[tuple[int, bytes]]:
    return [
        (e["duration"], e["command"][:80])
        for e in raw.slowlog_get(1024)
        if e["command"].split(b" ", 1)[0].upper() in (b"EVALSHA", b"EVAL")
    ]


def name() -> str:
    return "b-" + uuid.uuid4().hex[:10]


def fill(client: ServiceBusClient, q: str, n: int, body: bytes = b"x" * 40, per: int = 0, **kw: Any) -> None:
    """n messages, `per` a send, else in the largest batches a send takes (5,000 messages or 256 KiB)."""
    per = per or max(1, min(MAX_RECEIVE_COUNT, 200_000 // (len(body) + 60)))
    with client.get_queue_sender(q) as s:
        for i in range(0, n, per):
            s.send_messages([ServiceBusMessage(body, **kw) for _ in range(min(per, n - i))])


def receive_all(r: Any, n: int) -> list[Any]:
    got: list[Any] = []
    while len(got) < n:
        batch = r.receive_messages(max_message_count=min(MAX_RECEIVE_COUNT, n - len(got)), max_wait_time=5)
        assert batch, f"{len(got)} of {n}"
        got += batch
    return got


# ------------------------------------------------------------------------------------------ cases


@case("send", "receive", "peek", "complete", "stats")
def queue_at_the_count_caps(admin: Any, client: Any, raw: Any, server: Any) -> None:
    """A send of 5,000 messages (one batch under 256 KiB), a peek and a receive of 5,000 (the count
    cap), a complete of 5,000 in one call, the queue's counts."""
    q = name()
    admin.create_queue(q)
    fill(client, q, MAX_RECEIVE_COUNT)
    with client.get_queue_receiver(q) as r:
        assert len(r.peek_messages(MAX_RECEIVE_COUNT)) == MAX_RECEIVE_COUNT
        got = receive_all(r, MAX_RECEIVE_COUNT)
        r.complete_messages(got)
    assert admin.get_queue_runtime_properties(q).total_message_count == 0
    admin.delete_queue(q)


@case("abandon", "defer", "receive_deferred", "dead_letter", "renew")
def settlements_at_the_count_caps(admin: Any, client: Any, raw: Any, server: Any) -> None:
    """Abandon 5,000 messages at the maximum delivery count (each is dead-lettered by the
    abandon: the costliest settlement, about 20 ms a call of 250 under load), defer 5,000, receive
    1,000 deferred by number (the cap), dead-letter them with the longest reason texts, renew a
    lock."""
    q = name()
    admin.create_queue(q, max_delivery_count=1)
    n = MAX_RECEIVE_COUNT
    fill(client, q, 2 * n)
    with client.get_queue_receiver(q) as r:
        r.abandon_messages(receive_all(r, n))
        held = receive_all(r, n)
        r.renew_message_lock(held[0])
        r.defer_messages(held)
        seqs = [m.sequence_number for m in held[:MAX_SEQUENCE_NUMBERS]]
        deferred = r.receive_deferred_messages(seqs)
        assert len(deferred) == MAX_SEQUENCE_NUMBERS
        r.dead_letter_messages(deferred, "r" * 4096, "d" * 4096)
    props = admin.get_queue_runtime_properties(q)
    assert props.dead_letter_message_count == n + MAX_SEQUENCE_NUMBERS
    admin.delete_queue(q)


@case("send", "cancel_scheduled", "probe")
def scheduled_and_partitioned(admin: Any, client: Any, raw: Any, server: Any) -> None:
    """Schedule 1,000 messages and cancel them in one call (the sequence-number cap: one
    partition's share of a cancel is one atomic call), and receive from a queue of 16 partitions,
    which asks each partition first (probe)."""
    q, wide = name(), name()
    admin.create_queue(q)
    admin.create_queue(wide, enable_partitioning=True, partition_count=16)
    later = datetime.now(UTC) + timedelta(hours=1)
    with client.get_queue_sender(q) as s:
        seqs = s.schedule_messages([ServiceBusMessage(b"s") for _ in range(MAX_SEQUENCE_NUMBERS)], later)
        s.cancel_scheduled_messages(seqs)
    assert admin.get_queue_runtime_properties(q).total_message_count == 0
    fill(client, wide, 1_000)
    with client.get_queue_receiver(wide, receive_mode=ServiceBusReceiveMode.RECEIVE_AND_DELETE) as r:
        assert len(receive_all(r, 1_000)) == 1_000
    admin.delete_queue(q)
    admin.delete_queue(wide)


@case("session_lock", "session_receive", "session_renew", "session_state", "session_release", "session_list")
def sessions_at_their_caps(admin: Any, client: Any, raw: Any, server: Any) -> None:
    """A session holding 2,000 locked messages (SESS_HELD_MAX) renewed and released, its state
    at the entity's maximum message size, and a listing of many sessions."""
    q = name()
    admin.create_queue(q, requires_session=True)
    fill(client, q, 2_000, session_id="A")
    sessions = scaled(5_000, 30_000)
    with client.get_queue_sender(q) as s:
        for i in range(0, sessions, 2_000):
            sids = [f"s{j:06d}" for j in range(i, min(sessions, i + 2_000))]
            s.send_messages([ServiceBusMessage(b"m", session_id=sid) for sid in sids])
    with client.get_queue_receiver(q, session_id="A") as r:
        held = receive_all(r, 2_000)
        assert len(held) == 2_000
        r.session.renew_lock()  # type: ignore[union-attr]
        r.session.set_state(b"x" * (256 * 1024 - 1_000))  # type: ignore[union-attr]
    with client.get_queue_receiver(q, session_id=NEXT_AVAILABLE_SESSION, max_wait_time=5) as r:
        assert r.session is not None
    assert len(client.list_queue_sessions(q)) == sessions + 1
    admin.delete_queue(q)


@case("forward_out", "forward_in", "forward_ack")
def forwarding_chain_at_max_hops(admin: Any, client: Any, raw: Any, server: Any) -> None:
    """5,000 messages through the longest forwarding chain (4 hops: MAX_HOPS), and 1,000 of 60 KB."""
    from sbredis._core.fanout import MAX_HOPS

    chain = [name() for _ in range(MAX_HOPS + 1)]
    admin.create_queue(chain[-1])
    for src, dest in zip(reversed(chain[:-1]), reversed(chain[1:]), strict=True):
        admin.create_queue(src, forward_to=dest)
    fill(client, chain[0], MAX_RECEIVE_COUNT)
    fill(client, chain[0], scaled(200, 1_000), body=b"y" * 60_000)
    with client.get_queue_receiver(chain[-1], receive_mode=ServiceBusReceiveMode.RECEIVE_AND_DELETE) as r:
        assert len(receive_all(r, MAX_RECEIVE_COUNT + scaled(200, 1_000))) == MAX_RECEIVE_COUNT + scaled(200, 1_000)
    for q in chain:
        admin.delete_queue(q)


@case("tx_commit")
def transaction_at_the_operation_cap(admin: Any, client: Any, raw: Any, server: Any) -> None:
    """A transaction of 100 operations (Service Bus's cap): 50 settlements and 50 sends of
    messages near the maximum size, half to the home queue and half to another (the outbox)."""
    home, other = name(), name()
    admin.create_queue(home)
    admin.create_queue(other)
    fill(client, home, MAX_OPERATIONS // 2)
    body = b"t" * 250_000
    with (
        client.get_queue_receiver(home) as r,
        client.get_queue_sender(home) as to_home,
        client.get_queue_sender(other) as to_other,
    ):
        got = receive_all(r, MAX_OPERATIONS // 2)
        with client.transaction() as tx:
            for i, m in enumerate(got):
                r.complete_message(m, transaction=tx)
                (to_home if i % 2 else to_other).send_messages(ServiceBusMessage(body), transaction=tx)
    assert admin.get_queue_runtime_properties(home).total_message_count == MAX_OPERATIONS // 4
    admin.delete_queue(home)
    admin.delete_queue(other)


@case("send", "receive", "publish", "peek")
def largest_messages(admin: Any, client: Any, raw: Any, server: Any) -> None:
    """A message's copy is written and read whole (a call always handles at least one), so the
    time of a call grows with the message: about 2 ms a MB to send or receive one, and publish
    splits its copies by bytes (publish.lua's BUDGET_BYTES). Entities allow up to 100 MB
    (MAX_MESSAGE_KB), where one send or receive takes about 190 ms: this case stops at 8 MB,
    the size up to which the bound holds on a loaded machine (16 MB: 33 ms a send)."""
    size = 8 * 1024 * 1024 - 8192
    q, topic = name(), name()
    admin.create_queue(q, max_message_size_in_kilobytes=8192)
    admin.create_topic(topic, max_message_size_in_kilobytes=8192)
    for i in range(3):
        admin.create_subscription(topic, f"s{i}")
    body = b"z" * size
    with client.get_queue_sender(q) as s:
        s.send_messages(ServiceBusMessage(body))
    with client.get_topic_sender(topic) as s:
        s.send_messages(ServiceBusMessage(body))
    with client.get_queue_receiver(q, receive_mode=ServiceBusReceiveMode.RECEIVE_AND_DELETE) as r:
        assert len(r.peek_messages(1)) == 1
        assert len(receive_all(r, 1)) == 1
    admin.delete_queue(q)
    admin.delete_topic(topic)


@case("receive", "session_receive", "session_lock", "forward_out")
def expired_backlog(admin: Any, client: Any, raw: Any, server: Any) -> None:
    """One live message behind many expired ones (scaled: 10,000; the issue's 100,000 in full),
    on a queue, a session queue (the session search and its receive sweep) and a forwarding
    queue (its outbox sweep): the sweeps stop on their budget and the receive, or the drain,
    calls again (a drain used to stop after one sweep and leave the live message behind)."""
    import time

    n = scaled(10_000, 100_000)
    q, sq, fwd, dest = name(), name(), name(), name()
    for queue in (q, fwd, dest):
        admin.create_queue(queue)
    admin.create_queue(sq, requires_session=True)
    for queue, sid in ((q, None), (sq, "S"), (fwd, None)):
        fill(client, queue, n, body=b"e", per=1_000, session_id=sid, time_to_live=timedelta(milliseconds=1))
        fill(client, queue, 1, body=b"live", session_id=sid)
    time.sleep(0.01)
    with client.get_queue_receiver(q, max_wait_time=10) as r:
        assert [str(m) for m in r.receive_messages(1, max_wait_time=10)] == ["live"]
    with client.get_queue_receiver(sq, session_id=NEXT_AVAILABLE_SESSION, max_wait_time=10) as r:
        assert [str(m) for m in r.receive_messages(1, max_wait_time=10)] == ["live"]
    props = admin.get_queue(fwd)
    props.forward_to = dest
    admin.update_queue(props)
    with ServiceBusClient.from_connection_string(server.url) as fresh:  # knows fwd forwards
        fill(fresh, fwd, 1, body=b"next")  # the send drains fwd: the live one, then this
    with client.get_queue_receiver(dest, max_wait_time=10) as r:
        got: list[str] = []
        while len(got) < 2 and (more := r.receive_messages(2, max_wait_time=10)):
            got += [str(m) for m in more]
    assert got == ["live", "next"]
    for queue in (q, sq, fwd, dest):
        admin.delete_queue(queue)


@pytest.fixture(scope="module")
def wide_topic(admin: ServiceBusAdministrationClient, client: ServiceBusClient) -> str:
    """A topic with the maximum number of subscriptions, idle after a second (so the
    auto-delete-on-idle check reads all of them at once) but kept in use by a pending
    scheduled message."""
    topic = name()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SBREDIS_MIN_AUTO_DELETE_ON_IDLE", "1")
        admin.create_topic(topic, auto_delete_on_idle=timedelta(seconds=1))
    for i in range(MAX_SUBSCRIPTIONS_PER_TOPIC):
        admin.create_subscription(topic, f"s{i:04d}")
    with client.get_topic_sender(topic) as s:
        s.schedule_messages(ServiceBusMessage(b"kept"), datetime.now(UTC) + timedelta(days=1))
    return topic


WIDE: list[str] = []  # the module's wide topic, for the cases that use it


@case("publish", "cancel_topic_scheduled", "receive", "idle", "dashboard_counts")
def topic_of_2000_subscriptions(admin: Any, client: Any, raw: Any, server: Any) -> None:
    """On a topic of 2,000 subscriptions: a batch publish, a schedule and its cancel (every copy
    removed), a subscription receive, the auto-delete-on-idle check (the topic is in use: kept)
    and the dashboard's counts of every entity. A cancel takes up to 1,000 numbers, but 1,000
    scheduled messages on 2,000 subscriptions are 2,000,000 copies (about 30 s of server time to
    publish, 60 s to cancel, in calls of a few ms): CI schedules 10, a full run 50; a call's work
    does not depend on how many there are (200 copies a call)."""
    from sbredis.dashboard.counts import Reader

    topic = WIDE[0]
    n = scaled(10, 50)
    later = datetime.now(UTC) + timedelta(hours=1)
    with client.get_topic_sender(topic) as s:
        s.send_messages([ServiceBusMessage(f"m{i}") for i in range(n)])
        s.cancel_scheduled_messages(s.schedule_messages([ServiceBusMessage(b"s") for _ in range(n)], later))
    with client.get_subscription_receiver(topic, "s1999", receive_mode=ServiceBusReceiveMode.RECEIVE_AND_DELETE) as r:
        assert [str(m) for m in receive_all(r, n)] == [f"m{i}" for i in range(n)]
    assert topic not in admin.delete_idle_entities()
    assert Reader(client.handler_context.transport).read()


@case("syphon_lease")
def paired_syphon(admin: Any, client: Any, raw: Any, server: Any) -> None:
    """The syphon's lease of each backlog queue: one field of one hash (constant work whatever
    the input: there is no limit to reach), taken and renewed by a syphon whose secondary is this
    module's server."""
    import time

    from sbredis import SendAvailabilityPairedNamespaceOptions

    primary = RedisServer().start()
    try:
        options = SendAvailabilityPairedNamespaceOptions(
            secondary=server.url, backlog_queue_count=4, syphon_poll_interval=0.05, failover_interval=0
        )
        with ServiceBusClient(primary.url, paired_namespace=options) as c:
            c.paired_namespace.start_syphon()
            deadline = time.monotonic() + 10
            while c.paired_namespace.metrics.lease_calls < 4:  # each backlog queue's lease taken
                assert time.monotonic() < deadline
                time.sleep(0.05)
    finally:
        primary.stop()


# ------------------------------------------------------------------------------------------ tests


def test_every_script_has_a_case() -> None:
    scripts = {p.stem for p in LUA.glob("*.lua")}
    covered = {s for names in CASES.values() for s in names}
    assert scripts - covered == set(), "scripts without a budget case: add one to CASES"
    assert covered - scripts == set(), "cases naming scripts that are gone"


@pytest.mark.parametrize("run", list(CASES), ids=[fn.__name__ for fn in CASES])
def test_no_script_call_is_over_the_bound(
    run: Case,
    admin: ServiceBusAdministrationClient,
    client: ServiceBusClient,
    raw: redis.Redis,
    server: RedisServer,
    called: Counter[str],
    request: pytest.FixtureRequest,
) -> None:
    if run is topic_of_2000_subscriptions and not WIDE:  # made once, outside the measured rounds
        WIDE.append(request.getfixturevalue("wide_topic"))
    raw.config_set("slowlog-log-slower-than", SLOW_SCRIPT_US)
    slow: list[tuple[int, bytes]] = []
    for _ in range(ROUNDS):
        raw.slowlog_reset()
        run(admin, client, raw, server)
        slow = slow_calls(raw)
        if not slow:
            break
    missing = [s for s in CASES[run] if not called[s]]
    assert not missing, f"{run.__name__} never called {missing}"
    assert not slow, f"script calls over {SLOW_SCRIPT_US} us: {slow}"
