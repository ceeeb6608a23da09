"""Transactions on a real Redis: all operations of a transaction or none (docs/transactions.md).

Partition-key rules (InvalidOperationError when an operation is added), a lost lock failing the
whole commit, every settlement kind, "receive, process, send" through the transfer queue into
another queue and a topic, the timeout, a retried commit applied once, the async client, and a
process SIGKILLed before and right after its commit.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from sbredis import ServiceBusClient, ServiceBusMessage, ServiceBusReceiveMode, ServiceBusSubQueue
from sbredis._core.ops import partition_of
from sbredis.exceptions import (
    InvalidArgumentError,
    InvalidOperationError,
    MessageAlreadySettled,
    MessageLockLostError,
    SessionCannotBeLockedError,
    SessionLockLostError,
    TransactionTimeoutError,
)
from tests.conftest import eventually
from tests.integration.test_forwarding import take_all as forwarded_take_all

pytestmark = [pytest.mark.integration, pytest.mark.conformance]
ROOT = Path(__file__).resolve().parents[2]


def name(prefix: str = "tx") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def take_all(client: Any, queue: str, wait: float = 0.3, **kw: Any) -> list[str]:
    """The sorted bodies of every message (received and deleted; the empty receive pulls what is
    still upstream)."""
    return sorted(str(m) for m in forwarded_take_all(client, queue, wait, **kw))


def receive_one(client: Any, queue: str, **kw: Any) -> tuple[Any, Any]:
    r = client.get_queue_receiver(queue, **kw)
    [m] = r.receive_messages(1, max_wait_time=2)
    return r, m


# ------------------------------------------------------------------------------ commit
def test_receive_process_send_commits_together(admin: Any, client: Any) -> None:
    src, dst = name("src"), name("dst")
    admin.create_queue(src)
    admin.create_queue(dst)
    client.get_queue_sender(src).send_messages(ServiceBusMessage("order"))
    r, m = receive_one(client, src)
    with client.transaction() as tx:
        client.get_queue_sender(dst).send_messages(ServiceBusMessage("shipped"), transaction=tx)
        client.get_queue_sender(src).send_messages(ServiceBusMessage("audit"), transaction=tx)
        r.complete_message(m, transaction=tx)
        assert admin.get_queue_runtime_properties(src).total_message_count == 1  # nothing before commit
        assert take_all(client, dst) == []
    assert tx.state == "committed"
    assert take_all(client, dst) == ["shipped"]
    assert take_all(client, src) == ["audit"]  # the completed "order" is gone
    assert admin.get_queue_runtime_properties(src).transfer_message_count == 0


def test_exception_in_the_block_discards_everything(admin: Any, client: Any) -> None:
    q, dst = name(), name("dst")
    admin.create_queue(q, lock_duration=timedelta(seconds=1))
    admin.create_queue(dst)
    client.get_queue_sender(q).send_messages(ServiceBusMessage("work"))
    r, m = receive_one(client, q)
    with pytest.raises(RuntimeError, match="boom"), client.transaction() as tx:
        client.get_queue_sender(dst).send_messages(ServiceBusMessage("out"), transaction=tx)
        r.complete_message(m, transaction=tx)
        raise RuntimeError("boom")
    assert tx.state == "discarded"
    assert take_all(client, dst) == []
    r2, again = receive_one(client, q)  # the lock elapses; the message comes back
    assert str(again) == "work" and again.delivery_count == 1
    r2.complete_message(again)
    with pytest.raises(InvalidOperationError):
        tx.commit()


def test_every_settlement_kind_in_one_transaction(admin: Any, client: Any) -> None:
    q = name()
    admin.create_queue(q, lock_duration=timedelta(seconds=5))
    client.get_queue_sender(q).send_messages([ServiceBusMessage(b) for b in "abcde"])
    r = client.get_queue_receiver(q)
    got = {str(m): m for m in r.receive_messages(5, max_wait_time=2)}
    assert sorted(got) == list("abcde")
    before = got["e"].locked_until_utc
    time.sleep(0.05)
    with client.transaction() as tx:
        r.complete_message(got["a"], transaction=tx)
        r.abandon_message(got["b"], transaction=tx)
        r.defer_message(got["c"], transaction=tx)
        r.dead_letter_message(got["d"], "bad", "why", transaction=tx)
        r.renew_message_lock(got["e"], transaction=tx)
        assert got["e"].locked_until_utc == before  # renewed at commit
    assert got["e"].locked_until_utc > before
    [b] = r.receive_messages(1, max_wait_time=2)
    assert str(b) == "b" and b.delivery_count == 1
    r.complete_message(b)
    [c] = r.receive_deferred_messages(got["c"].sequence_number)
    assert str(c) == "c"
    r.complete_message(c)
    with client.get_queue_receiver(q, sub_queue=ServiceBusSubQueue.DEAD_LETTER) as d:
        [dl] = d.receive_messages(1, max_wait_time=2)
        assert (str(dl), dl.dead_letter_reason, dl.dead_letter_error_description) == ("d", "bad", "why")
    r.complete_message(got["e"])  # still held: the renewal applied
    with pytest.raises(MessageAlreadySettled):
        r.complete_message(got["a"])


def test_a_lost_lock_fails_the_whole_transaction(admin: Any, client: Any) -> None:
    q, dst = name(), name("dst")
    admin.create_queue(q, lock_duration=timedelta(seconds=1))
    admin.create_queue(dst)
    client.get_queue_sender(q).send_messages([ServiceBusMessage("keep"), ServiceBusMessage("lose")])
    r = client.get_queue_receiver(q)
    got = {str(m): m for m in r.receive_messages(2, max_wait_time=2)}
    time.sleep(0.6)
    r.renew_message_lock(got["keep"])  # held; "lose" is not renewed
    time.sleep(0.6)
    tx = client.transaction()
    r.complete_message(got["keep"], transaction=tx)
    r.complete_message(got["lose"], transaction=tx)
    client.get_queue_sender(dst).send_messages(ServiceBusMessage("via"), transaction=tx)
    client.get_queue_sender(q).send_messages(ServiceBusMessage("direct"), transaction=tx)
    with pytest.raises(MessageLockLostError) as e:
        tx.commit()
    assert [str(m) for m in e.value.messages] == ["lose"]
    assert tx.state == "discarded"
    # nothing applied: "keep" is still locked by us (not completed), no send is visible anywhere
    r.complete_message(got["keep"])
    assert take_all(client, dst) == []
    assert take_all(client, q) == ["lose"]  # only the message whose lock elapsed, back again
    assert admin.get_queue_runtime_properties(q).transfer_message_count == 0


def test_a_lost_session_lock_fails_the_commit_with_session_lock_lost(admin: Any, client: Any) -> None:
    q, dst = name(), name("dst")
    admin.create_queue(q, requires_session=True, lock_duration=timedelta(seconds=1))
    admin.create_queue(dst)
    client.get_queue_sender(q).send_messages([ServiceBusMessage(f"m{i}", session_id="s1") for i in range(2)])
    r = client.get_queue_receiver(q, session_id="s1")
    got = r.receive_messages(2, max_wait_time=2)
    tx = client.transaction()
    r.complete_messages(got, transaction=tx)
    client.get_queue_sender(dst).send_messages(ServiceBusMessage("via"), transaction=tx)

    def take() -> Any:  # another receiver takes the session once its lock elapsed
        try:
            return client.get_queue_receiver(q, session_id="s1", max_wait_time=1).__enter__()
        except SessionCannotBeLockedError:
            return None

    other = eventually(take, timeout=5, interval=0.1)
    with pytest.raises(SessionLockLostError) as e:
        tx.commit()
    assert not isinstance(e.value, MessageLockLostError)
    assert sorted(str(m) for m in e.value.messages) == ["m0", "m1"]
    assert tx.state == "discarded"
    # nothing applied: the session's messages are the other receiver's now, nothing was sent
    again = other.receive_messages(2, max_wait_time=2)
    assert [(str(m), m.delivery_count) for m in again] == [("m0", 1), ("m1", 1)]
    other.complete_messages(again)
    other.close()
    r.close()
    assert take_all(client, dst) == []


def test_renewing_a_session_message_in_a_transaction_is_refused(admin: Any, client: Any) -> None:
    q = name()
    admin.create_queue(q, requires_session=True)
    client.get_queue_sender(q).send_messages(ServiceBusMessage("m", session_id="s1"))
    with client.get_queue_receiver(q, session_id="s1") as r:
        [m] = r.receive_messages(1, max_wait_time=2)
        tx = client.transaction()
        with pytest.raises(InvalidOperationError, match="session lock"):
            r.renew_message_lock(m, transaction=tx)
        with pytest.raises(InvalidOperationError, match="session lock"):  # not through another receiver either
            client.get_queue_receiver(q).renew_message_lock(m, transaction=tx)
        assert tx.state == "active" and repr(tx) == "ServiceBusTransaction(active, 0 operations)"
        r.complete_message(m, transaction=tx)  # the transaction is still usable
        tx.commit()
        assert m.settled
    assert admin.get_queue_runtime_properties(q).active_message_count == 0


def test_a_transaction_not_committed_in_time_is_discarded(admin: Any, client: Any) -> None:
    q = name()
    admin.create_queue(q)
    client.get_queue_sender(q).send_messages(ServiceBusMessage("x"))
    r, m = receive_one(client, q)
    tx = client.transaction(timeout=0.3)
    r.complete_message(m, transaction=tx)
    client.get_queue_sender(q).send_messages(ServiceBusMessage("y"), transaction=tx)
    time.sleep(0.4)
    with pytest.raises(TransactionTimeoutError):
        tx.commit()
    assert tx.state == "discarded"
    r.abandon_message(m)  # still ours, not completed
    assert take_all(client, q) == ["x"]
    with pytest.raises(InvalidArgumentError):
        client.transaction(timeout=0)


def test_a_retried_commit_is_applied_once(admin: Any, client: Any) -> None:
    """A commit repeated after a connection error in doubt finds its marker and applies nothing."""
    q, dst = name(), name("dst")
    admin.create_queue(q)
    admin.create_queue(dst)
    client.get_queue_sender(q).send_messages(ServiceBusMessage("in"))
    r, m = receive_one(client, q)
    tx = client.transaction()
    r.complete_message(m, transaction=tx)
    client.get_queue_sender(q).send_messages(ServiceBusMessage("again"), transaction=tx)
    client.get_queue_sender(dst).send_messages(ServiceBusMessage("out"), transaction=tx)
    plan = tx._buffer.plan()
    first = client._transport.run(plan.call, q)  # as if the reply was lost on the way back
    assert int(first[0]) == 1
    tx.commit()  # the retry
    assert tx.state == "committed"
    assert take_all(client, q) == ["again"]
    assert take_all(client, dst) == ["out"]


# ----------------------------------------------------------------------- partition keys
def test_partitioned_entity_needs_one_partition_key(admin: Any, client: Any) -> None:
    q = name()
    admin.create_queue(q, enable_partitioning=True, partition_count=4)
    s = client.get_queue_sender(q)
    tx = client.transaction()
    with pytest.raises(InvalidOperationError, match="partition key"):
        s.send_messages(ServiceBusMessage("no key"), transaction=tx)
    s.send_messages(ServiceBusMessage("a", partition_key="k1"), transaction=tx)
    with pytest.raises(InvalidOperationError, match="same partition key"):
        s.send_messages(ServiceBusMessage("b", partition_key="k2"), transaction=tx)
    with pytest.raises(InvalidOperationError, match="same partition key"):
        s.send_messages(ServiceBusMessage("c", session_id="k3"), transaction=tx)
    # a rejected batch adds nothing, not even its valid first message
    with pytest.raises(InvalidOperationError):
        s.send_messages([ServiceBusMessage("d", partition_key="k1"), ServiceBusMessage("e")], transaction=tx)
    s.send_messages(ServiceBusMessage("f", session_id="k1"), transaction=tx)  # the same key, as a session id
    tx.commit()
    assert take_all(client, q) == ["a", "f"]


def test_message_id_is_the_key_with_duplicate_detection(admin: Any, client: Any) -> None:
    q = name()
    admin.create_queue(q, enable_partitioning=True, partition_count=4, requires_duplicate_detection=True)
    s = client.get_queue_sender(q)
    tx = client.transaction()
    s.send_messages(ServiceBusMessage("a", message_id="m1"), transaction=tx)
    s.send_messages(ServiceBusMessage("a again", message_id="m1"), transaction=tx)
    with pytest.raises(InvalidOperationError, match="same partition key"):
        s.send_messages(ServiceBusMessage("b", message_id="m2"), transaction=tx)
    tx.commit()
    assert take_all(client, q) == ["a"]  # the duplicate was dropped


def test_two_sessions_never_share_a_transaction(admin: Any, client: Any) -> None:
    q = name()
    admin.create_queue(q)  # not partitioned: the session rule holds anyway
    s = client.get_queue_sender(q)
    tx = client.transaction()
    s.send_messages(ServiceBusMessage("a", session_id="s1"), transaction=tx)
    with pytest.raises(InvalidOperationError, match="two sessions"):
        s.send_messages(ServiceBusMessage("b", session_id="s2"), transaction=tx)
    with pytest.raises(InvalidOperationError, match="two sessions"):
        s.send_messages([ServiceBusMessage("c"), ServiceBusMessage("d", session_id="s3")], transaction=tx)
    s.send_messages(ServiceBusMessage("e"), transaction=tx)
    tx.commit()
    assert take_all(client, q) == ["a", "e"]
    s.send_messages([ServiceBusMessage("s1", session_id="s1"), ServiceBusMessage("s2", session_id="s2")])
    r = client.get_queue_receiver(q)
    got = {str(m): m for m in r.receive_messages(2, max_wait_time=2)}
    tx = client.transaction()  # settling messages of two sessions
    r.complete_message(got["s1"], transaction=tx)
    with pytest.raises(InvalidOperationError, match="two sessions"):
        r.complete_message(got["s2"], transaction=tx)
    s.send_messages(ServiceBusMessage("reply", session_id="s9"), transaction=tx)  # a reply to another session
    tx.commit()
    r.complete_message(got["s2"])
    assert take_all(client, q) == ["reply"]


def test_settlements_and_sends_must_share_the_home_partition(admin: Any, client: Any) -> None:
    q, other = name(), name("other")
    admin.create_queue(q, enable_partitioning=True, partition_count=4)
    admin.create_queue(other)
    keys: dict[int, str] = {}
    for i in range(64):  # a key for each partition
        keys.setdefault(partition_of(f"k{i}", 4), f"k{i}")
    s = client.get_queue_sender(q)
    s.send_messages([ServiceBusMessage(f"p{p}", partition_key=k) for p, k in keys.items()])
    client.get_queue_sender(other).send_messages(ServiceBusMessage("o"))
    r = client.get_queue_receiver(q)
    msgs = {m.partition_id: m for m in r.receive_messages(4, max_wait_time=2)}
    while len(msgs) < 4:
        msgs.update({m.partition_id: m for m in r.receive_messages(4, max_wait_time=2)})
    ro, mo = receive_one(client, other)

    tx = client.transaction()
    r.complete_message(msgs[1], transaction=tx)
    with pytest.raises(InvalidOperationError, match="one entity partition"):
        r.complete_message(msgs[2], transaction=tx)
    with pytest.raises(InvalidOperationError, match="one entity partition"):
        ro.complete_message(mo, transaction=tx)
    with pytest.raises(InvalidOperationError, match="partition 2"):
        s.send_messages(ServiceBusMessage("x", partition_key=keys[2]), transaction=tx)
    with pytest.raises(InvalidOperationError, match="operation in this transaction"):
        r.abandon_message(msgs[1], transaction=tx)
    s.send_messages(ServiceBusMessage("x", partition_key=keys[1]), transaction=tx)
    tx.commit()

    tx2 = client.transaction()  # the other order: a send first pins the partition
    s.send_messages(ServiceBusMessage("y", partition_key=keys[3]), transaction=tx2)
    with pytest.raises(InvalidOperationError, match="partition 3"):
        r.complete_message(msgs[0], transaction=tx2)
    r.complete_message(msgs[3], transaction=tx2)
    tx2.commit()
    for p in (0, 2):
        r.complete_message(msgs[p])
    ro.complete_message(mo)
    assert take_all(client, q) == ["x", "y"]


def test_invalid_uses(admin: Any, client: Any, url: str) -> None:
    q = name()
    admin.create_queue(q)
    s = client.get_queue_sender(q)
    tx = client.transaction()
    with pytest.raises(InvalidArgumentError):
        s.send_messages(ServiceBusMessage("x"), transaction=object())
    with pytest.raises(InvalidArgumentError):
        s.send_messages(ServiceBusMessage("x"), transaction=tx, presettled=True)
    with ServiceBusClient.from_connection_string(url) as other, pytest.raises(InvalidOperationError, match="another"):
        other.get_queue_sender(q).send_messages(ServiceBusMessage("x"), transaction=tx)
    with pytest.raises(InvalidOperationError, match="at most 100"):
        s.send_messages([ServiceBusMessage(str(i)) for i in range(101)], transaction=tx)
    s.send_messages(ServiceBusMessage("one"), transaction=tx)
    tx.commit()
    with pytest.raises(InvalidOperationError, match="committed"):
        s.send_messages(ServiceBusMessage("late"), transaction=tx)
    with pytest.raises(InvalidOperationError, match="committed"):
        tx.commit()
    peeked = client.get_queue_receiver(q).peek_messages(1)
    with pytest.raises(InvalidOperationError):  # a peeked message holds no lock
        client.get_queue_receiver(q).complete_message(peeked[0], transaction=client.transaction())
    assert take_all(client, q) == ["one"]


# --------------------------------------------------------------------------- topics
def test_send_via_to_a_topic_and_a_topic_only_transaction(admin: Any, client: Any) -> None:
    q, topic = name(), name("t")
    admin.create_queue(q)
    admin.create_topic(topic, enable_partitioning=True, partition_count=2)
    admin.create_subscription(topic, "all")
    admin.create_subscription(topic, "fwd", forward_to=q)
    client.get_queue_sender(q).send_messages(ServiceBusMessage("in"))
    r, m = receive_one(client, q)
    ts = client.get_topic_sender(topic)
    with client.transaction() as tx:
        ts.send_messages(ServiceBusMessage("news", partition_key="k"), transaction=tx)
        r.complete_message(m, transaction=tx)
    sub = client.get_subscription_receiver(topic, "all", receive_mode=ServiceBusReceiveMode.RECEIVE_AND_DELETE)
    assert [str(x) for x in sub.receive_messages(10, max_wait_time=1)] == ["news"]
    assert take_all(client, q) == ["news"]  # through the forwarding subscription
    with client.transaction() as tx:  # sends to one topic partition only: one publish
        ts.send_messages(
            [ServiceBusMessage("a", partition_key="k"), ServiceBusMessage("b", partition_key="k")], transaction=tx
        )
    assert sorted(str(x) for x in sub.receive_messages(10, max_wait_time=1)) == ["a", "b"]
    tx = client.transaction()
    ts.send_messages(ServiceBusMessage("c", partition_key="k"), transaction=tx)
    with pytest.raises(InvalidOperationError, match="a topic"):
        client.get_queue_sender(topic).send_messages(ServiceBusMessage("d", partition_key="k"), transaction=tx)


# ----------------------------------------------------------------------------- async
def test_async_transaction(url: str) -> None:
    from sbredis.aio import ServiceBusClient as AsyncClient
    from sbredis.aio.management import ServiceBusAdministrationClient

    src, dst = name("src"), name("dst")

    async def main() -> None:
        async with ServiceBusAdministrationClient.from_connection_string(url) as admin:
            await admin.create_queue(src, enable_partitioning=True, partition_count=2)
            await admin.create_queue(dst, enable_partitioning=True, partition_count=4)
        async with AsyncClient.from_connection_string(url) as client:
            await client.get_queue_sender(src).send_messages(ServiceBusMessage("order", partition_key="o1"))
            r = client.get_queue_receiver(src)
            [m] = await r.receive_messages(1, max_wait_time=2)
            async with client.transaction() as tx:
                await client.get_queue_sender(dst).send_messages(
                    ServiceBusMessage("shipped", partition_key="o1"), transaction=tx
                )
                await r.complete_message(m, transaction=tx)
            assert tx.state == "committed"
            with pytest.raises(RuntimeError):
                async with client.transaction() as tx2:
                    await client.get_queue_sender(dst).send_messages(
                        ServiceBusMessage("never", partition_key="o1"), transaction=tx2
                    )
                    raise RuntimeError
            assert tx2.state == "discarded"
            d = client.get_queue_receiver(dst, receive_mode=ServiceBusReceiveMode.RECEIVE_AND_DELETE)
            assert [str(x) for x in await d.receive_messages(10, max_wait_time=1)] == ["shipped"]
            assert await d.receive_messages(10, max_wait_time=0.3) == []
            assert await r.receive_messages(1, max_wait_time=0.3) == []

    asyncio.run(main())


# ---------------------------------------------------------------------- SIGKILLed
KILLED = textwrap.dedent(
    """
    import os, signal, sys, time
    sys.path.insert(0, {root!r})
    from sbredis import ServiceBusClient, ServiceBusMessage
    from sbredis._sync import _forwarder

    url, src, dst, stage = sys.argv[1:5]

    def die(*_a, **_k):
        os.kill(os.getpid(), signal.SIGKILL)

    if stage == "after_commit":  # tx_commit ran; the drain that follows never starts
        _forwarder.Forwarder.drain_quietly = die
    client = ServiceBusClient.from_connection_string(url)
    r = client.get_queue_receiver(src)
    [m] = r.receive_messages(1, max_wait_time=5)
    tx = client.transaction()
    r.complete_message(m, transaction=tx)
    client.get_queue_sender(dst).send_messages(ServiceBusMessage("out", partition_key="k"), transaction=tx)
    client.get_queue_sender(src).send_messages(ServiceBusMessage("next", partition_key="k"), transaction=tx)
    if stage == "before_commit":
        print("ready", flush=True)
        time.sleep(60)
    tx.commit()
    print("not killed", flush=True)
    """
)


def run_killed(url: str, src: str, dst: str, stage: str) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED.format(root=str(ROOT)), url, src, dst, stage],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        if stage == "before_commit":
            assert proc.stdout is not None
            assert proc.stdout.readline().strip() == "ready"
            proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGKILL, proc.stderr.read() if proc.stderr else ""


@pytest.mark.standalone
def test_sigkill_before_commit_applies_nothing(redis_server: Any, admin: Any, client: Any) -> None:
    src, dst = name("src"), name("dst")
    admin.create_queue(src, lock_duration=timedelta(seconds=1))
    admin.create_queue(dst, enable_partitioning=True, partition_count=4)
    client.get_queue_sender(src).send_messages(ServiceBusMessage("order"))
    run_killed(redis_server.url, src, dst, "before_commit")
    assert take_all(client, dst) == []
    assert admin.get_queue_runtime_properties(src).transfer_message_count == 0
    r = client.get_queue_receiver(src)  # the lock elapses and the message is delivered again
    got = eventually(lambda: r.receive_messages(1, max_wait_time=0.5), timeout=5)
    assert [str(m) for m in got] == ["order"] and got[0].delivery_count == 1
    r.complete_message(got[0])
    assert take_all(client, src) == []


@pytest.mark.standalone
def test_sigkill_right_after_commit_delivers_exactly_once(redis_server: Any, admin: Any, client: Any) -> None:
    src, dst = name("src"), name("dst")
    admin.create_queue(src, enable_partitioning=True, partition_count=2)
    admin.create_queue(dst, enable_partitioning=True, partition_count=4)
    client.get_queue_sender(src).send_messages(ServiceBusMessage("order", partition_key="k"))
    run_killed(redis_server.url, src, dst, "after_commit")
    admin._maintained_at = time.monotonic()  # no automatic maintenance (it would drain): look first
    props = admin.get_queue_runtime_properties(src)
    assert props.transfer_message_count == 1  # committed, not yet delivered
    assert props.active_message_count == 1  # "order" completed, "next" stored
    # a client that never saw the transaction: its receiver's pull drains the transfer queue
    with ServiceBusClient.from_connection_string(redis_server.url) as fresh:
        assert take_all(fresh, dst) == ["out"]
    assert admin.forward_pending() == 0  # drained once: nothing left to deliver
    assert take_all(client, dst) == []
    assert take_all(client, src) == ["next"]
    assert admin.get_queue_runtime_properties(src).transfer_message_count == 0
