"""Wide fan-outs split across script calls (docs/topics.md, "Wide fan-outs"; issue 23): every copy
arrives, in order per subscription; a refusal comes before anything is written; a publisher killed
between calls leaves a journal that the next publish, or a receive on any subscription of the
topic partition, finishes; subscriptions created or deleted meanwhile; forwarding and
transactions into a wide topic.

A call's budget is 200 units, 2 per subscription and 1 per subscription x message
(protocol/publish.py's chunk_size): 50 messages make chunks of 3 subscriptions, so 12
subscriptions take four checks, a start call and four continuations, which keeps these tests small.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from typing import Any

import pytest

from sbredis import NEXT_AVAILABLE_SESSION, ServiceBusMessage, ServiceBusReceiveMode
from sbredis._core import keys
from sbredis._core.protocol import publish
from sbredis._core.rules import SqlRuleFilter
from sbredis.aio._forwarder import KILL_AFTER_CHUNKS
from sbredis.exceptions import InvalidOperationError, MessagingEntityNotFoundError, ServiceBusQuotaExceededError

pytestmark = [pytest.mark.integration, pytest.mark.conformance]
killing = pytest.mark.standalone  # a publisher killed in another process: a server both reach

N = 50  # messages per publish: chunks of 3 subscriptions
SUBS = [f"s{i:02d}" for i in range(12)]


def batch(tag: str, n: int = N, **kw: Any) -> list[ServiceBusMessage]:
    return [ServiceBusMessage(f"{tag}{i}", **kw) for i in range(n)]


def bodies(*tags: str) -> list[str]:
    return [f"{tag}{i}" for tag in tags for i in range(N)]


def wide_topic(admin: Any, subs: list[str] = SUBS, **kw: Any) -> str:
    topic = "t-" + uuid.uuid4().hex[:10]
    admin.create_topic(topic, **kw)
    for s in subs:
        admin.create_subscription(topic, s)
    return topic


def drain(client: Any, topic: str, sub: str) -> list[str]:
    with client.get_subscription_receiver(
        topic, sub, receive_mode=ServiceBusReceiveMode.RECEIVE_AND_DELETE, max_wait_time=0.2
    ) as r:
        out: list[str] = []
        while got := r.receive_messages(250, max_wait_time=0.2):
            out += [str(m) for m in got]
        return out


def killed_publish(
    url: str, topic: str, api: str, chunks: int, tag: str = "a", scheduled: bool = False, session: str | None = None
) -> None:
    """Publish batch(tag) from another process that kills itself (SIGKILL, the test-only hook)
    after `chunks` continuation calls: its journal stays half done. Message ids are the bodies;
    with `session`, every message is of that session."""
    code = f"""
import asyncio, datetime
from sbredis import ServiceBusClient, ServiceBusMessage
msgs = [ServiceBusMessage("{tag}%d" % i, message_id="{tag}%d" % i, session_id={session!r}) for i in range({N})]
at = datetime.datetime.now(datetime.UTC) + datetime.timedelta(hours=1)
if "{api}" == "sync":
    with ServiceBusClient.from_connection_string("{url}") as c, c.get_topic_sender("{topic}") as s:
        s.schedule_messages(msgs, at) if {scheduled} else s.send_messages(msgs)
else:
    from sbredis.aio import ServiceBusClient as A
    async def main():
        async with A.from_connection_string("{url}") as c, c.get_topic_sender("{topic}") as s:
            await (s.schedule_messages(msgs, at) if {scheduled} else s.send_messages(msgs))
    asyncio.run(main())
"""
    env = {**os.environ, KILL_AFTER_CHUNKS: str(chunks)}
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, timeout=60)
    assert p.returncode == -signal.SIGKILL, p.stderr.decode()


def journal(raw_redis: Any, topic: str) -> dict[bytes, bytes]:
    j: dict[bytes, bytes] = raw_redis.hgetall(keys.journal_key(topic, 0))
    return j


def server_ms(raw_redis: Any) -> int:
    s, us = raw_redis.time()
    return int(s) * 1000 + int(us) // 1000


def until_stalled(raw_redis: Any, topic: str) -> None:
    """Wait until the pending journal has made no progress for the time after which receivers
    finish it (includes/journal.lua's JOURNAL_STALL_MS: its writer died)."""
    pt = int(journal(raw_redis, topic)[b"pt"])
    deadline = time.monotonic() + 10
    while server_ms(raw_redis) < pt + 1_000:
        assert time.monotonic() < deadline
        time.sleep(0.05)


def live(raw_redis: Any, topic: str) -> None:
    """Make the pending journal look written by a live client (its progress time ahead of the
    server's clock: as if a chunk had just been written, for as long as the test takes)."""
    raw_redis.hset(keys.journal_key(topic, 0), "pt", server_ms(raw_redis) + 60_000)


def killed_cancel(url: str, topic: str, chunks: int, tag: str = "c", at: Any = None) -> list[int]:
    """Schedule batch(tag) (from this process; for `at`, else in an hour), then cancel it from
    another process that kills itself after `chunks` continuation calls of the cancel: its
    journal stays half done."""
    from datetime import UTC, datetime, timedelta

    from sbredis import ServiceBusClient

    with ServiceBusClient.from_connection_string(url) as c, c.get_topic_sender(topic) as s:
        seqs: list[int] = s.schedule_messages(batch(tag), at or datetime.now(UTC) + timedelta(hours=1))
    code = f"""
from sbredis import ServiceBusClient
with ServiceBusClient.from_connection_string("{url}") as c, c.get_topic_sender("{topic}") as s:
    s.cancel_scheduled_messages({seqs!r})
"""
    env = {**os.environ, KILL_AFTER_CHUNKS: str(chunks)}
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, timeout=60)
    assert p.returncode == -signal.SIGKILL, p.stderr.decode()
    return seqs


def peeked(client: Any, topic: str, sub: str) -> list[str]:
    with client.get_subscription_receiver(topic, sub) as r:
        return [str(m) for m in r.peek_messages(300)]


def test_chunks_are_what_the_docs_say() -> None:
    assert publish.chunk_size(1) == 66 and publish.chunk_size(10) == 16 and publish.chunk_size(N) == 3


def test_a_wide_publish_stores_every_copy_in_order(admin: Any, client: Any, raw_redis: Any) -> None:
    topic = wide_topic(admin)
    with client.get_topic_sender(topic) as sender:
        sender.send_messages(batch("a"))
        sender.send_messages(batch("b"))
    for s in SUBS:
        assert drain(client, topic, s) == bodies("a", "b"), s
    assert not journal(raw_redis, topic)


def test_a_refusal_in_any_chunk_stores_nothing(admin: Any, client: Any) -> None:
    """QUOTA in the last chunk and NOSESSION in the last chunk: the error, and no copy anywhere."""
    topic = wide_topic(admin, SUBS[:-1], max_size_in_megabytes=1)
    admin.create_subscription(topic, "s11")  # the last chunk: its own filter so it alone fills up
    for s in SUBS[:-1]:
        admin.delete_rule(topic, s, "$Default")
        admin.create_rule(topic, s, "x", filter=SqlRuleFilter("sys.label = 'x'"))
    with client.get_topic_sender(topic) as sender:
        for size in (200_000, 20_000, 1_000):  # fill s11 to within 1 kB (narrow publishes: one call each)
            with pytest.raises(ServiceBusQuotaExceededError):
                for _ in range(20):
                    sender.send_messages(ServiceBusMessage("f" * size))
        with pytest.raises(ServiceBusQuotaExceededError):
            sender.send_messages(batch("q", subject="x"))
    assert all(drain(client, topic, s) == [] for s in SUBS[:-1])

    topic = wide_topic(admin, SUBS[:-1])
    admin.create_subscription(topic, "s11", requires_session=True)
    with client.get_topic_sender(topic) as sender, pytest.raises(InvalidOperationError):
        sender.send_messages(batch("n"))
    assert all(drain(client, topic, s) == [] for s in SUBS[:-1])


@killing
def test_a_killed_publisher_is_finished_by_the_next_publish_in_order(
    admin: Any, client: Any, raw_redis: Any, url: str, api: str
) -> None:
    topic = wide_topic(admin)
    killed_publish(url, topic, api, chunks=0)
    assert int(journal(raw_redis, topic)[b"cur"]) == 0  # the start call writes no chunk
    with client.get_topic_sender(topic) as sender:
        sender.send_messages(batch("b"))
    assert not journal(raw_redis, topic)
    for s in SUBS:
        assert drain(client, topic, s) == bodies("a", "b"), s


@killing
def test_a_killed_publisher_is_finished_by_a_receive(
    admin: Any, client: Any, raw_redis: Any, url: str, api: str
) -> None:
    """Nobody publishes again: once the journal has made no progress for a second (its writer
    died), a receive on a subscription the journal had not reached finishes it, for every
    subscription. A subscription deleted meanwhile is skipped (and not brought back), one
    created meanwhile gets nothing of the earlier publish."""
    topic = wide_topic(admin)
    killed_publish(url, topic, api, chunks=1)
    assert int(journal(raw_redis, topic)[b"cur"]) == 3
    admin.delete_subscription(topic, "s07")
    admin.create_subscription(topic, "late")
    until_stalled(raw_redis, topic)
    assert drain(client, topic, "s11") == bodies("a")
    assert not journal(raw_redis, topic)
    for s in SUBS:
        if s not in ("s07", "s11"):  # deleted; drained above
            assert drain(client, topic, s) == bodies("a"), s
    assert drain(client, topic, "late") == []
    with pytest.raises(MessagingEntityNotFoundError):
        admin.get_subscription(topic, "s07")
    assert not raw_redis.exists(*keys.subscription_fan_keys(topic, "s07", 0))


@killing
@pytest.mark.parametrize("session_id", ["S", NEXT_AVAILABLE_SESSION], ids=["named", "next-available"])
def test_a_killed_publisher_is_finished_by_a_session_receiver(
    admin: Any, client: Any, raw_redis: Any, url: str, api: str, session_id: Any
) -> None:
    """A topic whose subscriptions all require sessions: a session receiver on a subscription the
    journal had not reached (named, or accepting the next available session, which the journal
    had not delivered there yet) finishes it, and every subscription has the whole publish."""
    topic = "t-" + uuid.uuid4().hex[:10]
    admin.create_topic(topic)
    for s in SUBS:
        admin.create_subscription(topic, s, requires_session=True)
    killed_publish(url, topic, api, chunks=1, session="S")
    assert int(journal(raw_redis, topic)[b"cur"]) == 3
    until_stalled(raw_redis, topic)
    for s in reversed(SUBS):  # s11 first: the journal had not reached it
        with client.get_subscription_receiver(topic, s, session_id=session_id, max_wait_time=0.5) as r:
            got: list[str] = []
            while more := r.receive_messages(250, max_wait_time=0.5):
                r.complete_messages(more)
                got += [str(m) for m in more]
        assert got == bodies("a"), s
        assert not journal(raw_redis, topic)


@killing
def test_a_scheduled_wide_publish_is_cancelled_everywhere(
    admin: Any, client: Any, raw_redis: Any, url: str, api: str
) -> None:
    """Cancelled while its journal is half done: the chunks after the cancel store no copy."""
    from datetime import UTC, datetime, timedelta

    topic = wide_topic(admin)
    with client.get_topic_sender(topic) as sender:
        seqs = sender.schedule_messages(batch("s"), datetime.now(UTC) + timedelta(hours=1))
        sender.cancel_scheduled_messages(seqs)
    killed_publish(url, topic, api, chunks=0, tag="k", scheduled=True)
    seqs = [(0 << 48) | int(s) for s in range(N + 1, 2 * N + 1)]  # the killed publish's numbers
    with client.get_topic_sender(topic) as sender:
        sender.cancel_scheduled_messages(seqs)
        sender.send_messages(ServiceBusMessage("after"))  # finishes the journal first
    for s in SUBS:
        with client.get_subscription_receiver(topic, s) as r:
            assert [str(m) for m in r.peek_messages(300)] == ["after"], s


def test_forwarding_and_a_transaction_into_a_wide_topic(admin: Any, client: Any) -> None:
    topic = wide_topic(admin)
    q = "q-" + uuid.uuid4().hex[:10]
    admin.create_queue(q, forward_to=topic)
    with client.get_queue_sender(q) as sender:
        sender.send_messages(batch("f"))
    ts = client.get_topic_sender(topic)
    with client.transaction() as tx:
        ts.send_messages(batch("t", partition_key="k"), transaction=tx)
    for s in SUBS:
        assert drain(client, topic, s) == bodies("f", "t"), s


@killing
def test_a_resend_of_a_killed_publish_is_a_duplicate(
    admin: Any, client: Any, raw_redis: Any, url: str, api: str
) -> None:
    """Duplicate detection knew the ids from the start call: the resend finishes the journal,
    then is dropped, so every subscription has each message once."""
    topic = "t-" + uuid.uuid4().hex[:10]
    admin.create_topic(topic, requires_duplicate_detection=True)
    for s in SUBS:
        admin.create_subscription(topic, s)
    killed_publish(url, topic, api, chunks=1)
    with client.get_topic_sender(topic) as sender:
        sender.send_messages([ServiceBusMessage(b, message_id=b) for b in bodies("a")])
    assert not journal(raw_redis, topic)
    for s in SUBS:
        assert drain(client, topic, s) == bodies("a"), s


@killing
def test_a_receive_leaves_a_live_publish_to_its_publisher_and_a_publish_finishes_it_first(
    admin: Any, client: Any, raw_redis: Any, url: str, api: str
) -> None:
    """A receive does not wait for a fan-out whose writer is making progress: a subscription the
    journal has not reached receives what it has (nothing yet) and the journal is where it was;
    one it reached receives its copies. A publish finishes any pending journal first, live or
    not, so every subscription still has the messages in order."""
    topic = wide_topic(admin)
    killed_publish(url, topic, api, chunks=1)
    live(raw_redis, topic)
    before = journal(raw_redis, topic)
    assert drain(client, topic, "s11") == []
    assert journal(raw_redis, topic) == before  # the receive did not help: no chunk written
    assert drain(client, topic, "s00") == bodies("a")  # the start call wrote its chunk
    with client.get_topic_sender(topic) as sender:
        sender.send_messages(batch("b"))
    assert not journal(raw_redis, topic)
    assert drain(client, topic, "s00") == bodies("b")
    for s in SUBS[3:]:
        assert drain(client, topic, s) == bodies("a", "b"), s


def test_a_wide_cancel_removes_every_copy(admin: Any, client: Any, raw_redis: Any) -> None:
    """50 messages x 12 subscriptions are 600 copies, over a cancel call's 200
    (protocol/cancel_topic_scheduled.py's CHUNK): a start call and three chunks. Every copy is
    gone with its bytes, a second cancel of the numbers is refused, and the topic goes on."""
    from datetime import UTC, datetime, timedelta

    from sbredis._core.protocol import cancel_topic_scheduled
    from sbredis.exceptions import MessageNotFoundError

    assert cancel_topic_scheduled.CHUNK == 200
    topic = wide_topic(admin)
    with client.get_topic_sender(topic) as sender:
        seqs = sender.schedule_messages(batch("s"), datetime.now(UTC) + timedelta(hours=1))
        assert peeked(client, topic, "s11") == bodies("s")
        sender.cancel_scheduled_messages(seqs)
        assert not journal(raw_redis, topic)
        with pytest.raises(MessageNotFoundError):
            sender.cancel_scheduled_messages(seqs)
        sender.send_messages(ServiceBusMessage("after"))
    for s in SUBS:
        assert peeked(client, topic, s) == ["after"], s
        assert admin.get_subscription_runtime_properties(topic, s).total_message_count == 1, s


@killing
@pytest.mark.parametrize("then", ["publish", "receive", "cancel"])
def test_a_killed_cancel_is_finished(admin: Any, client: Any, raw_redis: Any, url: str, then: str) -> None:
    """A canceller killed after one chunk: the cancel stands (its numbers are refused again at
    once) and its journal is finished by the next publish (first, so the message published
    after it is the only one anywhere), by a receive once it has stalled, or by the next wide
    cancel (before its own start call)."""
    from datetime import UTC, datetime, timedelta

    from sbredis.exceptions import MessageNotFoundError

    topic = wide_topic(admin)
    with client.get_topic_sender(topic) as sender:
        other = sender.schedule_messages(batch("o"), datetime.now(UTC) + timedelta(hours=1))
    seqs = killed_cancel(url, topic, chunks=1)
    j = journal(raw_redis, topic)
    assert j[b"id"].startswith(b"c") and int(j[b"cur"]) == 1
    left = peeked(client, topic, "s11")[N:]  # after batch("o"): the chunk took the first messages' copies
    assert 0 < len(left) < N and left == bodies("c")[-len(left) :]
    with client.get_topic_sender(topic) as sender:
        with pytest.raises(MessageNotFoundError):
            sender.cancel_scheduled_messages(seqs[:1])
        if then == "publish":
            sender.send_messages(ServiceBusMessage("after"))
        elif then == "cancel":
            sender.cancel_scheduled_messages(other)  # 600 copies: a wide cancel of its own
        else:
            until_stalled(raw_redis, topic)
            assert drain(client, topic, "s11") == []
    assert not journal(raw_redis, topic)
    expected = {"publish": [*bodies("o"), "after"], "receive": bodies("o"), "cancel": []}[then]
    for s in SUBS:
        assert peeked(client, topic, s) == expected, s
        assert admin.get_subscription_runtime_properties(topic, s).total_message_count == (then == "publish"), s


@killing
def test_a_cancelled_message_that_falls_due_is_never_received(
    admin: Any, client: Any, raw_redis: Any, url: str
) -> None:
    """A cancel's journal whose writer is live (not stalled) but whose messages fall due: a
    receive finishes the cancel first, so no subscription hands out a cancelled copy."""
    from datetime import UTC, datetime, timedelta

    topic = wide_topic(admin)
    at = datetime.now(UTC) + timedelta(seconds=5)
    killed_cancel(url, topic, chunks=1, at=at)
    live(raw_redis, topic)
    deadline = time.monotonic() + 15
    while server_ms(raw_redis) <= int(at.timestamp() * 1000):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert drain(client, topic, "s11") == []
    assert not journal(raw_redis, topic)
    for s in SUBS:
        assert drain(client, topic, s) == [], s


def forwarded(client: Any, q: str) -> list[str]:
    """What a receiver of `q` gets: its receive pulls what forwards into `q` (the drain)."""
    with client.get_queue_receiver(q, receive_mode=ServiceBusReceiveMode.RECEIVE_AND_DELETE) as r:
        out: list[str] = []
        while got := r.receive_messages(250, max_wait_time=1.5):
            out += [str(m) for m in got]
        return out


@killing
def test_a_forwarding_subscription_never_forwards_a_cancelled_message_that_falls_due(
    admin: Any, client: Any, raw_redis: Any, url: str
) -> None:
    """As a receive does (test_a_cancelled_message_that_falls_due_is_never_received), a drain of
    a forwarding subscription finishes a cancel whose messages fall due before it moves any copy:
    the destination gets none of them."""
    from datetime import UTC, datetime, timedelta

    q = "q-" + uuid.uuid4().hex[:10]
    admin.create_queue(q)
    topic = wide_topic(admin, SUBS[:-1])
    admin.create_subscription(topic, SUBS[-1], forward_to=q)
    at = datetime.now(UTC) + timedelta(seconds=5)
    killed_cancel(url, topic, chunks=1, at=at)
    live(raw_redis, topic)
    assert peeked(client, topic, SUBS[-1])  # the cancel has not reached the forwarding one's copies
    deadline = time.monotonic() + 15
    while server_ms(raw_redis) <= int(at.timestamp() * 1000):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert forwarded(client, q) == []
    assert not journal(raw_redis, topic)
    for s in SUBS:
        assert drain(client, topic, s) == [], s


@killing
def test_a_forwarding_subscription_finishes_a_killed_publish(admin: Any, client: Any, raw_redis: Any, url: str) -> None:
    """A publisher killed mid fan-out, on a topic whose subscriptions all forward (nobody
    receives from them): once the journal has stalled, the drain finishes it, and every copy
    arrives at the destinations, in order."""
    qs = ["q-" + uuid.uuid4().hex[:10] for _ in SUBS]
    for q in qs:
        admin.create_queue(q)
    topic = "t-" + uuid.uuid4().hex[:10]
    admin.create_topic(topic)
    for s, q in zip(SUBS, qs, strict=True):
        admin.create_subscription(topic, s, forward_to=q)
    killed_publish(url, topic, "sync", chunks=1)
    assert journal(raw_redis, topic)
    until_stalled(raw_redis, topic)
    assert forwarded(client, qs[-1]) == bodies("a")
    assert not journal(raw_redis, topic)
    for q in qs[:-1]:
        assert forwarded(client, q) == bodies("a"), q
