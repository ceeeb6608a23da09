"""Sessions: requires_session, session receivers, session locks, state and listing, on a real Redis
(standalone, cluster and memory backends)."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from sbredis import (
    NEXT_AVAILABLE_SESSION,
    ServiceBusClient,
    ServiceBusMessage,
    ServiceBusReceiveMode,
    ServiceBusSubQueue,
)
from sbredis._core.keys import partition_keys
from sbredis.exceptions import (
    InvalidArgumentError,
    InvalidOperationError,
    MessageNotFoundError,
    MessageSizeExceededError,
    OperationTimeoutError,
    SessionCannotBeLockedError,
    SessionLockLostError,
)
from tests.conftest import eventually

pytestmark = [pytest.mark.integration, pytest.mark.conformance]
LOCK = timedelta(seconds=1)


def send(client: ServiceBusClient, q: str, *msgs: ServiceBusMessage) -> None:
    with client.get_queue_sender(q) as s:
        s.send_messages(list(msgs))


def msg(body: str, sid: str | None, **kw: Any) -> ServiceBusMessage:
    return ServiceBusMessage(body, session_id=sid, **kw)


# ------------------------------------------------------------------------------- sending
def test_send_without_session_id_is_rejected_and_nothing_is_stored(client: ServiceBusClient, make_queue: Any) -> None:
    q = make_queue(requires_session=True)
    with client.get_queue_sender(q) as s:
        with pytest.raises(InvalidOperationError, match="session"):
            s.send_messages([msg("ok", "a"), ServiceBusMessage("no session")])
        with pytest.raises(InvalidOperationError, match="session"):
            s.schedule_messages(ServiceBusMessage("later"), datetime.now(UTC) + timedelta(seconds=5))
    with client.get_queue_receiver(q, session_id="a") as r:
        assert r.peek_messages(10) == []  # the batch was refused as a whole


def test_send_to_a_session_queue_bypassing_the_client_check_is_refused_by_the_script(
    client: ServiceBusClient, make_queue: Any, raw_redis: Any
) -> None:
    from sbredis._core import ops

    q = make_queue(requires_session=True)
    meta = ops.EntityMeta(q, 1, False, 256 * 1024)  # a stale view: no sessions
    (c,), _ = ops.plan_send([ServiceBusMessage("x")], meta, 0)
    with pytest.raises(InvalidOperationError, match="session_id"):
        client._transport.run(c, q)
    assert raw_redis.xlen(partition_keys(q, 0)[2]) == 0


# ------------------------------------------------------------------------------ receivers
def test_plain_receiver_on_a_session_queue_is_refused(client: ServiceBusClient, make_queue: Any) -> None:
    q = make_queue(requires_session=True)
    send(client, q, msg("m", "a"))
    with pytest.raises(InvalidOperationError, match="requires sessions"), client.get_queue_receiver(q):
        pass  # it fails at open, as the SDK's does
    r = client.get_queue_receiver(q)
    with pytest.raises(InvalidOperationError, match="requires sessions"):
        r.receive_messages(1, max_wait_time=0.1)
    with pytest.raises(InvalidOperationError, match="requires sessions"):
        r.receive_deferred_messages([1])
    assert [m.session_id for m in r.peek_messages(5)] == ["a"]  # browsing is allowed
    r.close()


def test_a_receivers_repr_names_its_queue_subqueue_and_session(client: ServiceBusClient, make_queue: Any) -> None:
    q = make_queue(requires_session=True)
    dl = ServiceBusSubQueue.DEAD_LETTER
    with client.get_queue_receiver(q, session_id="a") as r:
        assert repr(r) == f"ServiceBusReceiver(queue={q!r}, session_id='a')"
    plain, dead = client.get_queue_receiver(q), client.get_queue_receiver(q, sub_queue=dl)
    assert repr(plain) == f"ServiceBusReceiver(queue={q!r})"
    assert repr(dead) == f"ServiceBusReceiver(queue={q!r}, sub_queue={dl.value!r})"
    plain.close()
    dead.close()


def test_session_receiver_on_a_plain_queue_is_refused(client: ServiceBusClient, make_queue: Any) -> None:
    q = make_queue()
    with (
        pytest.raises(InvalidOperationError, match="does not require sessions"),
        client.get_queue_receiver(q, session_id="a"),
    ):
        pass
    r = client.get_queue_receiver(q, session_id=NEXT_AVAILABLE_SESSION, max_wait_time=0.1)
    with pytest.raises(InvalidOperationError, match="does not require sessions"):
        r.receive_messages(1)
    r.close()
    with pytest.raises(InvalidOperationError, match="does not require sessions"):
        client.list_queue_sessions(q)


def test_bad_session_arguments(client: ServiceBusClient, make_queue: Any) -> None:
    q = make_queue(requires_session=True)
    for bad in ("", "x" * 129, 5, b"a"):
        with pytest.raises(InvalidArgumentError):
            client.get_queue_receiver(q, session_id=bad)
    with pytest.raises(InvalidOperationError):
        client.get_queue_receiver(q, session_id="a", sub_queue=ServiceBusSubQueue.DEAD_LETTER)
    with client.get_queue_receiver(q, session_id="a") as r, pytest.raises(InvalidArgumentError):
        r.session.set_state(12)  # type: ignore[union-attr,arg-type]


def test_session_receiver_gets_only_its_session_in_send_order(client: ServiceBusClient, make_queue: Any) -> None:
    q = make_queue(requires_session=True, enable_partitioning=True, partition_count=4)
    send(client, q, *[msg(f"{s}{i}", s) for i in range(5) for s in ("a", "b")])
    with client.get_queue_receiver(q, session_id="b", max_wait_time=0.2) as r:
        assert r.session is not None and r.session.session_id == "b"
        assert r.session.locked_until_utc is not None
        got = r.receive_messages(3)
        got += r.receive_messages(10)
        assert [str(m) for m in got] == [f"b{i}" for i in range(5)]
        assert all(m.session_id == "b" for m in got)
        r.complete_messages(got)
        assert r.receive_messages(1, max_wait_time=0.1) == []


def test_a_held_session_cannot_be_locked_by_another_receiver(client: ServiceBusClient, make_queue: Any) -> None:
    q = make_queue(requires_session=True)
    send(client, q, msg("m", "a"))
    with client.get_queue_receiver(q, session_id="a") as r:
        with pytest.raises(SessionCannotBeLockedError), client.get_queue_receiver(q, session_id="a"):
            pass
        (m,) = r.receive_messages(1, max_wait_time=1)
        r.complete_message(m)
    with client.get_queue_receiver(q, session_id="a") as again:  # closing let go of it
        assert again.receive_messages(1, max_wait_time=0.1) == []


def test_next_available_takes_an_unheld_session_with_messages(client: ServiceBusClient, make_queue: Any) -> None:
    q = make_queue(requires_session=True, enable_partitioning=True, partition_count=4)
    send(client, q, msg("a1", "a"), msg("b1", "b"))
    with client.get_queue_receiver(q, session_id="a") as ra:
        with client.get_queue_receiver(q, session_id=NEXT_AVAILABLE_SESSION, max_wait_time=2) as rn:
            assert rn.session is not None and rn.session.session_id == "b"
            assert [str(m) for m in rn.receive_messages(5, max_wait_time=0.2)] == ["b1"]
            with (  # a is held, b is held: none left
                pytest.raises(OperationTimeoutError),
                client.get_queue_receiver(q, session_id=NEXT_AVAILABLE_SESSION, max_wait_time=0.3),
            ):
                pass
        assert [str(m) for m in ra.receive_messages(5, max_wait_time=0.2)] == ["a1"]


def test_next_available_waits_for_a_session_to_arrive(client: ServiceBusClient, make_queue: Any) -> None:
    q = make_queue(requires_session=True, enable_partitioning=True, partition_count=4)
    timer = threading.Timer(0.3, send, (client, q, msg("late", "z")))
    timer.start()
    try:
        with client.get_queue_receiver(q, session_id=NEXT_AVAILABLE_SESSION, max_wait_time=5) as r:
            assert r.session is not None and r.session.session_id == "z"
            assert [str(m) for m in r.receive_messages(1, max_wait_time=1)] == ["late"]
    finally:
        timer.join()


# ------------------------------------------------------------------------ locks and expiry
def test_an_elapsed_session_lock_frees_the_session_and_settling_raises_session_lock_lost(
    client: ServiceBusClient, make_queue: Any
) -> None:
    q = make_queue(requires_session=True, lock_duration=LOCK)
    send(client, q, msg("one", "a"), msg("two", "a"))
    first = client.get_queue_receiver(q, session_id="a")
    (m1,) = first.receive_messages(1, max_wait_time=1)
    time.sleep(1.2)  # the session lock (and with it the message's) elapses

    def take_over() -> Any:
        try:
            return client.get_queue_receiver(q, session_id=NEXT_AVAILABLE_SESSION, max_wait_time=0.2).__enter__()
        except OperationTimeoutError:
            return None

    second = eventually(take_over, timeout=3)
    assert second.session.session_id == "a"
    got = second.receive_messages(5, max_wait_time=0.5)
    assert [str(m) for m in got] == ["one", "two"]  # the lost message first, in order
    assert got[0].delivery_count == 1
    with pytest.raises(SessionLockLostError):
        first.complete_message(m1)
    with pytest.raises(SessionLockLostError):
        first.session.renew_lock()  # type: ignore[union-attr]
    with pytest.raises(SessionLockLostError):
        first.session.get_state()  # type: ignore[union-attr]
    second.complete_messages(got)
    first.close()  # letting go of a session it no longer holds changes nothing
    second.close()


def test_an_elapsed_session_lock_is_lost_even_when_nobody_took_the_session(
    client: ServiceBusClient, make_queue: Any
) -> None:
    q = make_queue(requires_session=True, lock_duration=LOCK)
    send(client, q, msg("one", "a"), msg("two", "a"))
    with client.get_queue_receiver(q, session_id="a") as r:
        assert r.session is not None
        (m,) = r.receive_messages(1, max_wait_time=1)
        until = r.session.locked_until_utc
        eventually(lambda: datetime.now(UTC) > until + timedelta(milliseconds=50), timeout=3)
        with pytest.raises(SessionLockLostError):
            r.session.renew_lock()
        with pytest.raises(SessionLockLostError):
            r.receive_messages(1, wait=False)
        with pytest.raises(SessionLockLostError):
            r.complete_message(m)
    with client.get_queue_receiver(q, session_id="a") as again:  # both messages are still there
        got = again.receive_messages(5, max_wait_time=1)
        assert [str(g) for g in got] == ["one", "two"]
        again.complete_messages(got)


def test_renewing_the_session_renews_its_messages(client: ServiceBusClient, make_queue: Any) -> None:
    q = make_queue(requires_session=True, lock_duration=LOCK)
    send(client, q, msg("m", "a"))
    with client.get_queue_receiver(q, session_id="a") as r:
        assert r.session is not None
        (m,) = r.receive_messages(1, max_wait_time=1)
        with pytest.raises(InvalidOperationError):
            r.renew_message_lock(m)
        for _ in range(3):
            time.sleep(0.5)
            until = r.session.renew_lock()
            assert until == r.session.locked_until_utc
        r.complete_message(m)  # 1.5 s after the receive: alive thanks to the session renewals


def test_auto_lock_renewer_keeps_a_session(client: ServiceBusClient, make_queue: Any, sb_api: Any) -> None:
    q = make_queue(requires_session=True, lock_duration=LOCK)
    send(client, q, msg("m", "a"))
    with sb_api.AutoLockRenewer() as renewer:
        with client.get_queue_receiver(q, session_id="a", auto_lock_renewer=renewer) as r:
            (m,) = r.receive_messages(1, max_wait_time=1)
            time.sleep(2.2)
            r.complete_message(m)
            assert r.session is not None and r.session.auto_renew_error is None
        with client.get_queue_receiver(q, session_id="b") as r2:
            assert r2.session is not None
            renewer.register(r2, r2.session, max_lock_renewal_duration=10)
            time.sleep(1.5)
            r2.session.set_state("still mine")


def test_abandon_returns_the_message_to_the_front_of_its_session(client: ServiceBusClient, make_queue: Any) -> None:
    q = make_queue(requires_session=True, max_delivery_count=2)
    send(client, q, msg("x", "a"), msg("y", "a"))
    with client.get_queue_receiver(q, session_id="a", max_wait_time=0.2) as r:
        (x,) = r.receive_messages(1)
        r.abandon_message(x)
        (x2,) = r.receive_messages(1)
        assert str(x2) == "x" and x2.delivery_count == 1
        r.abandon_message(x2)  # the second delivery: to the dead-letter subqueue
        (y,) = r.receive_messages(5)
        assert str(y) == "y"
        r.complete_message(y)
    with client.get_queue_receiver(q, sub_queue=ServiceBusSubQueue.DEAD_LETTER, max_wait_time=1) as d:
        (dl,) = d.receive_messages(1)
        assert str(dl) == "x" and dl.session_id == "a"
        d.complete_message(dl)


def test_closing_releases_unsettled_messages_to_the_next_holder(client: ServiceBusClient, make_queue: Any) -> None:
    q = make_queue(requires_session=True)
    send(client, q, *[msg(str(i), "a") for i in range(4)])
    with client.get_queue_receiver(q, session_id="a", prefetch_count=2) as r:
        got = r.receive_messages(1, max_wait_time=1)
        assert [str(m) for m in got] == ["0"]
    with client.get_queue_receiver(q, session_id="a", max_wait_time=0.2) as r:
        again = r.receive_messages(10)
        assert [str(m) for m in again] == ["0", "1", "2", "3"]
        assert [m.delivery_count for m in again] == [1, 0, 0, 0]  # prefetched, never handed out: not counted
        r.complete_messages(again)


# ----------------------------------------------------------------------------- deferral, peek
def test_deferred_and_peeked_messages_belong_to_the_session(client: ServiceBusClient, make_queue: Any) -> None:
    q = make_queue(requires_session=True, enable_partitioning=True, partition_count=2)
    send(client, q, *[msg(f"{s}{i}", s) for i in range(3) for s in ("a", "b")])
    with client.get_queue_receiver(q, session_id="a", max_wait_time=0.2) as r:
        assert [str(m) for m in r.peek_messages(10)] == ["a0", "a1", "a2"]
        (a0,) = r.receive_messages(1)
        r.defer_message(a0)
        rest = r.receive_messages(10)
        assert [str(m) for m in rest] == ["a1", "a2"]
        r.complete_messages(rest)
        (d,) = r.receive_deferred_messages([a0.sequence_number])
        assert str(d) == "a0"
        r.complete_message(d)
    with client.get_queue_receiver(q, session_id="b", max_wait_time=0.2) as rb:
        (b0,) = rb.receive_messages(1)
        rb.defer_message(b0)
    with (
        client.get_queue_receiver(q, session_id="a", max_wait_time=0.2) as r,
        pytest.raises(MessageNotFoundError),  # b's deferred message is not a's
    ):
        r.receive_deferred_messages([b0.sequence_number])


def test_a_session_peek_from_past_its_partition_finds_nothing(client: ServiceBusClient, make_queue: Any) -> None:
    """A session's messages live in one partition: peeking it from a sequence number of a later
    partition is peeking past its last message, which is nothing (not its messages again)."""
    from sbredis._core.validation import PARTITION_SHIFT

    q = make_queue(requires_session=True, enable_partitioning=True, partition_count=4)
    sessions = [f"s{i}" for i in range(40)]
    send(client, q, *[msg(f"{s}-0", s) for s in sessions])
    for sid in sessions:  # the first session of partition 0: there the wrong partition would hold it too
        with client.get_queue_receiver(q, session_id=sid, max_wait_time=0.2) as r:
            (m,) = r.peek_messages(10)
            assert str(m) == f"{sid}-0"
            partition = m.sequence_number >> PARTITION_SHIFT
            if partition == 0:
                past = ((partition + 1) << PARTITION_SHIFT) + 1
                assert r.peek_messages(10, sequence_number=past) == []
                return
    raise AssertionError("none of 40 sessions landed in partition 0 of 4")


# ---------------------------------------------------------------------- state and listing
def test_state_round_trips_and_outlives_the_messages(client: ServiceBusClient, make_queue: Any) -> None:
    q = make_queue(requires_session=True, max_message_size_in_kilobytes=1)
    send(client, q, msg("m", "a"))
    with client.get_queue_receiver(q, session_id="a", max_wait_time=0.2) as r:
        s = r.session
        assert s is not None
        assert s.get_state() is None
        s.set_state(b"\x00\x01binary")
        assert s.get_state() == b"\x00\x01binary"
        s.set_state("text é")
        assert s.get_state() == "text é".encode()
        with pytest.raises(MessageSizeExceededError):
            s.set_state(b"x" * 1025)
        r.complete_messages(r.receive_messages(5))
    assert client.list_queue_sessions(q) == ["a"]  # no messages left, state kept
    with client.get_queue_receiver(q, session_id="a") as r:
        assert r.session is not None
        assert r.session.get_state() == "text é".encode()
        r.session.set_state(None)
        assert r.session.get_state() is None
    assert client.list_queue_sessions(q) == []


def test_list_sessions_with_messages_or_state(client: ServiceBusClient, make_queue: Any) -> None:
    q = make_queue(requires_session=True, enable_partitioning=True, partition_count=4)
    assert client.list_queue_sessions(q) == []
    send(client, q, *[msg("m", s) for s in ("s1", "s2", "s2", "s3")])
    assert client.list_queue_sessions(q) == ["s1", "s2", "s3"]
    with client.get_queue_receiver(q, session_id="s4") as r:
        assert r.session is not None
        r.session.set_state("x")
    assert client.list_queue_sessions(q) == ["s1", "s2", "s3", "s4"]


def _set_state(client: ServiceBusClient, q: str, sid: str, state: str | None) -> None:
    with client.get_queue_receiver(q, session_id=sid) as r:
        assert r.session is not None
        r.session.set_state(state)


def _after_now() -> datetime:
    """A cutoff after everything done so far and before anything done next (server and tests
    share the clock; the state times are server ms)."""
    cutoff = datetime.now(UTC)
    time.sleep(0.005)
    return cutoff


def test_list_sessions_by_state_update_time(client: ServiceBusClient, make_queue: Any) -> None:
    q = make_queue(requires_session=True, enable_partitioning=True, partition_count=4)
    send(client, q, *[msg("m", s) for s in ("old", "new", "messages-only")])
    _set_state(client, q, "old", "x")
    _set_state(client, q, "gone", "x")
    cutoff = _after_now()
    assert client.list_queue_sessions(q, state_updated_after=cutoff) == []
    _set_state(client, q, "new", "y")
    _set_state(client, q, "stateless", "z")
    _set_state(client, q, "stateless", None)  # state cleared: no state to have been updated
    _set_state(client, q, "gone", "again")
    assert client.list_queue_sessions(q, state_updated_after=cutoff) == ["gone", "new"]
    # a naive datetime is UTC, as the SDK takes it
    assert client.list_queue_sessions(q, state_updated_after=cutoff.replace(tzinfo=None)) == ["gone", "new"]
    assert client.list_queue_sessions(q, state_updated_after=datetime(2000, 1, 1, tzinfo=UTC)) == [
        "gone",
        "new",
        "old",
    ]
    assert client.list_queue_sessions(q) == ["gone", "messages-only", "new", "old"]  # unfiltered as before
    with pytest.raises(InvalidArgumentError, match="state_updated_after"):
        client.list_queue_sessions(q, state_updated_after="yesterday")  # type: ignore[arg-type]


def test_list_subscription_sessions_by_state_update_time(client: ServiceBusClient, admin: Any, queue_name: str) -> None:
    admin.create_topic(queue_name)
    admin.create_subscription(queue_name, "s", requires_session=True)
    with client.get_topic_sender(queue_name) as sender:
        sender.send_messages([msg("m", "a"), msg("m", "b")])
    with client.get_subscription_receiver(queue_name, "s", session_id="a") as r:
        assert r.session is not None
        r.session.set_state("1")
    cutoff = _after_now()
    with client.get_subscription_receiver(queue_name, "s", session_id="b") as r:
        assert r.session is not None
        r.session.set_state("2")
    assert client.list_subscription_sessions(queue_name, "s", state_updated_after=cutoff) == ["b"]
    admin.delete_topic(queue_name)  # its session times go with it
    admin.create_topic(queue_name)
    admin.create_subscription(queue_name, "s", requires_session=True)
    assert client.list_subscription_sessions(queue_name, "s", state_updated_after=datetime(2000, 1, 1)) == []


# ----------------------------------------------------------- TTL, schedule, dedup, delete mode
def test_scheduled_session_message_becomes_available_in_its_session(client: ServiceBusClient, make_queue: Any) -> None:
    q = make_queue(requires_session=True)
    with client.get_queue_sender(q) as s:
        s.schedule_messages(msg("later", "a"), datetime.now(UTC) + timedelta(seconds=0.5))
    with client.get_queue_receiver(q, session_id=NEXT_AVAILABLE_SESSION, max_wait_time=3) as r:
        assert r.session is not None and r.session.session_id == "a"
        (m,) = r.receive_messages(1, max_wait_time=2)
        assert str(m) == "later"
        r.complete_message(m)


def test_expired_session_messages_are_dead_lettered(client: ServiceBusClient, make_queue: Any) -> None:
    q = make_queue(requires_session=True, dead_lettering_on_message_expiration=True)
    send(client, q, msg("old", "a", time_to_live=timedelta(milliseconds=200)), msg("new", "a"))
    time.sleep(0.4)
    with client.get_queue_receiver(q, session_id="a", max_wait_time=0.2) as r:
        assert [str(m) for m in r.receive_messages(5)] == ["new"]
    with client.get_queue_receiver(q, sub_queue=ServiceBusSubQueue.DEAD_LETTER, max_wait_time=1) as d:
        (dl,) = d.receive_messages(1)
        assert str(dl) == "old" and dl.dead_letter_reason == "TTLExpiredException"


def test_duplicate_detection_and_receive_and_delete(client: ServiceBusClient, make_queue: Any) -> None:
    q = make_queue(requires_session=True, requires_duplicate_detection=True)
    send(client, q, msg("1", "a", message_id="m1"), msg("1 again", "a", message_id="m1"), msg("2", "a"))
    with client.get_queue_receiver(
        q, session_id="a", receive_mode=ServiceBusReceiveMode.RECEIVE_AND_DELETE, max_wait_time=0.2
    ) as r:
        assert [str(m) for m in r.receive_messages(5)] == ["1", "2"]
    with client.get_queue_receiver(q, session_id="a", max_wait_time=0.1) as r:
        assert r.receive_messages(5) == []


# ------------------------------------------------------------------------------ ordering
def test_competing_receivers_keep_each_sessions_order(client: ServiceBusClient, make_queue: Any) -> None:
    q = make_queue(
        requires_session=True, enable_partitioning=True, partition_count=16, lock_duration=timedelta(seconds=5)
    )
    sessions = [f"s{i}" for i in range(12)]
    per = 15
    with client.get_queue_sender(q) as s:
        for i in range(per):
            s.send_messages([msg(f"{sid}:{i}", sid) for sid in sessions])
    seen: dict[str, list[int]] = {sid: [] for sid in sessions}
    lock = threading.Lock()
    errors: list[BaseException] = []

    def work() -> None:
        try:
            while True:
                try:
                    r = client.get_queue_receiver(q, session_id=NEXT_AVAILABLE_SESSION, max_wait_time=0.5)
                    r.__enter__()
                except OperationTimeoutError:
                    return
                with r:
                    while batch := r.receive_messages(4, max_wait_time=0.05):
                        for m in batch:
                            sid, n = str(m).split(":")
                            with lock:
                                seen[sid].append(int(n))
                        r.complete_messages(batch)
        except BaseException as e:
            errors.append(e)

    workers = [threading.Thread(target=work) for _ in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(60)
    assert not errors, errors
    assert seen == {sid: list(range(per)) for sid in sessions}


# ------------------------------------------------------------------------- subscriptions
def test_session_subscription(client: ServiceBusClient, admin: Any, queue_name: str) -> None:
    topic = "t-" + queue_name
    admin.create_topic(topic, enable_partitioning=True, partition_count=4)
    admin.create_subscription(topic, "sess", requires_session=True)
    admin.create_subscription(topic, "plain")
    with client.get_topic_sender(topic) as s:
        s.send_messages([msg(f"a{i}", "a") for i in range(3)] + [msg("b0", "b")])
        with pytest.raises(InvalidOperationError, match="session"):
            s.send_messages(ServiceBusMessage("no session"))  # its copy for 'sess' would have none
    assert client.list_subscription_sessions(topic, "sess") == ["a", "b"]
    with client.get_subscription_receiver(topic, "sess", session_id="a", max_wait_time=0.2) as r:
        got = r.receive_messages(10)
        assert [str(m) for m in got] == ["a0", "a1", "a2"]
        r.complete_messages(got)
    with client.get_subscription_receiver(topic, "plain", max_wait_time=0.2) as p:
        assert sorted(str(m) for m in p.receive_messages(10)) == ["a0", "a1", "a2", "b0"]
    with (
        pytest.raises(InvalidOperationError, match="requires sessions"),
        client.get_subscription_receiver(topic, "sess", max_wait_time=0.1),
    ):
        pass


def test_requires_session_cannot_change(admin: Any, make_queue: Any) -> None:
    q = make_queue(requires_session=True)
    props = admin.get_queue(q)
    props.requires_session = False
    with pytest.raises(InvalidOperationError):
        admin.update_queue(props)


# -------------------------------------------------------------------------- transactions
def test_session_messages_in_a_transaction(client: ServiceBusClient, make_queue: Any) -> None:
    q = make_queue(requires_session=True)
    send(client, q, msg("in", "a"))
    with client.get_queue_receiver(q, session_id="a", max_wait_time=0.5) as r:
        (m,) = r.receive_messages(1)
        with client.transaction() as tx:
            client.get_queue_sender(q).send_messages(msg("out", "a"), transaction=tx)
            r.complete_message(m, transaction=tx)
        (out,) = r.receive_messages(5)  # the completed message is gone, the sent one is in the session
        assert str(out) == "out"
        r.complete_message(out)
        assert r.receive_messages(1, max_wait_time=0.1) == []
    with pytest.raises(InvalidOperationError, match="session"), client.transaction() as tx:
        client.get_queue_sender(q).send_messages(ServiceBusMessage("no session"), transaction=tx)


def test_messages_completed_one_by_one_free_their_place_under_the_session_cap(client: Any, make_queue: Any) -> None:
    """A session holds at most 2,000 locked messages (SESS_HELD_MAX): each completed message frees
    its place, so after completing all 2,000 singly the same receiver gets the next one."""
    q = make_queue(requires_session=True, lock_duration=timedelta(seconds=60))
    with client.get_queue_sender(q) as s:
        for i in range(0, 2_001, 500):
            s.send_messages([ServiceBusMessage(str(j), session_id="s") for j in range(i, min(i + 500, 2_001))])
    with client.get_queue_receiver(q, session_id="s") as r:
        got: list[Any] = []
        deadline = time.monotonic() + 30
        while len(got) < 2_000 and time.monotonic() < deadline:
            got += r.receive_messages(max_message_count=2_000 - len(got), max_wait_time=5)
        assert [str(m) for m in got] == [str(j) for j in range(2_000)]
        for m in got:
            r.complete_message(m)
        [last] = r.receive_messages(max_message_count=10, max_wait_time=5)
        assert str(last) == "2000"
        r.complete_message(last)
