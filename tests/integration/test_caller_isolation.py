"""Concurrent sends share script calls (the coalescer), yet each caller gets its own outcome: a
caller with a bad message gets its error, and every other caller's messages are stored.

The property: any mix of good and bad callers sending at once through one sender (asyncio), on a
session queue, a partitioned queue and a topic with a session subscription (where only the
publish script can tell that a copy lacks its session id, so it refuses the shared call). Then
the same through a paired namespace's sender, and through sync senders on threads.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sbredis import ServiceBusClient as SyncClient
from sbredis import ServiceBusMessage, ServiceBusReceiveMode
from sbredis.aio import ServiceBusClient
from sbredis.exceptions import InvalidArgumentError, InvalidOperationError, MessageSizeExceededError
from sbredis.management import ServiceBusAdministrationClient
from tests.integration.test_paired import FAST, Pair
from tests.redis_server import RedisServer

pytestmark = [pytest.mark.integration]

SESSION_QUEUE, QUEUE, TOPIC, SUB = "sq", "pq", "t", "s"
SESSIONS = ("a", "b")
KINDS = (
    "good",
    "no_session",
    "surrogate_value",
    "surrogate_key",
    "bytes_key",
    "unsupported_value",
    "unreadable_time",
    "too_big",
)
# kind -> the error its caller gets (no_session is an error only where sessions are required)
ERRORS: dict[str, type[Exception]] = {
    "no_session": InvalidOperationError,
    "surrogate_value": InvalidArgumentError,
    "surrogate_key": InvalidArgumentError,
    "bytes_key": InvalidArgumentError,
    "unsupported_value": InvalidArgumentError,
    "unreadable_time": InvalidArgumentError,
    "too_big": MessageSizeExceededError,
}
MAX_KB = 16


@pytest.fixture(scope="module")
def server() -> Iterator[RedisServer]:
    srv = RedisServer().start()
    with ServiceBusAdministrationClient.from_connection_string(srv.url) as admin:
        for name, sessions in ((SESSION_QUEUE, True), (QUEUE, False)):
            admin.create_queue(
                name,
                requires_session=sessions,
                enable_partitioning=True,
                partition_count=2,
                max_message_size_in_kilobytes=MAX_KB,
            )
        admin.create_topic(TOPIC, max_message_size_in_kilobytes=MAX_KB)
        admin.create_subscription(TOPIC, SUB, requires_session=True)
    yield srv
    srv.stop()


def message(kind: str, body: str, session: str) -> ServiceBusMessage:
    """A message of `kind`; the bad properties are put in place after construction (which refuses
    them), as a caller changing the dict it set would."""
    m = ServiceBusMessage(body, session_id=None if kind == "no_session" else session, application_properties={})
    props = m.sent_application_properties
    assert props is not None
    if kind == "surrogate_value":
        props["p"] = "x\ud800y"
    elif kind == "surrogate_key":
        props["\udfff"] = 1
    elif kind == "bytes_key":
        props[b"\xff\xfe"] = 1  # type: ignore[index]
    elif kind == "unsupported_value":
        props["p"] = object()
    elif kind == "unreadable_time":  # after the year 9999 in UTC: stored, no receiver could read it
        props["p"] = datetime.max.replace(tzinfo=timezone(timedelta(hours=-1)))
    elif kind == "too_big":
        m = ServiceBusMessage(b"x" * (MAX_KB * 1024 + 1), session_id=session)
    return m


def expected_error(kind: str, entity: str) -> type[Exception] | None:
    if kind == "good" or (kind == "no_session" and entity == QUEUE):
        return None
    return ERRORS[kind]


async def drain(client: ServiceBusClient, entity: str) -> list[str]:
    """Every message of `entity` (receive and delete), bodies as text."""
    got: list[str] = []
    mode = ServiceBusReceiveMode.RECEIVE_AND_DELETE
    sessions: tuple[str | None, ...] = (None,) if entity == QUEUE else SESSIONS
    for session in sessions:
        if entity == TOPIC:
            receiver = client.get_subscription_receiver(TOPIC, SUB, session_id=session, receive_mode=mode)
        else:
            receiver = client.get_queue_receiver(entity, session_id=session, receive_mode=mode)
        async with receiver:
            while batch := await receiver.receive_messages(100, max_wait_time=0.2):
                got += [str(m) for m in batch]
    return got


callers = st.lists(
    st.tuples(st.sampled_from(KINDS), st.integers(1, 3), st.integers(0, 2), st.sampled_from(SESSIONS)),
    min_size=1,
    max_size=24,
)


@given(entity=st.sampled_from([SESSION_QUEUE, QUEUE, TOPIC]), mix=callers)
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
def test_each_coalesced_caller_gets_its_own_outcome(server: RedisServer, entity: str, mix: list[Any]) -> None:
    """Each caller sends a list whose message `bad_at` (if the caller is bad) is of its kind."""
    tag = uuid.uuid4().hex[:8]

    async def main() -> tuple[list[Any], list[str]]:
        async with ServiceBusClient.from_connection_string(server.url) as client:
            sender = client.get_topic_sender(TOPIC) if entity == TOPIC else client.get_queue_sender(entity)
            async with sender:
                sends = []
                for c, (kind, n, bad_at, session) in enumerate(mix):
                    msgs = [
                        message(kind if j == min(bad_at, n - 1) else "good", f"{tag}:{c}:{j}", session)
                        for j in range(n)
                    ]
                    sends.append(sender.send_messages(msgs))
                outcomes = await asyncio.gather(*sends, return_exceptions=True)
            return outcomes, await drain(client, entity)

    outcomes, stored = asyncio.run(main())
    want_stored = []
    for c, ((kind, n, _, _), outcome) in enumerate(zip(mix, outcomes, strict=True)):
        error = expected_error(kind, entity)
        if error is None:
            assert outcome is None, (c, kind, outcome)
            want_stored += [f"{tag}:{c}:{j}" for j in range(n)]
        else:
            assert type(outcome) is error, (c, kind, outcome)
    assert sorted(stored) == sorted(want_stored)


def test_sync_senders_on_threads_get_their_own_outcomes(server: RedisServer) -> None:
    """The sync sender runs each call as its own batch: threads sending at once through one sender
    get their own outcomes too."""
    tag = uuid.uuid4().hex[:8]
    kinds = ["good", "no_session", "good", "surrogate_value", "good", "bytes_key", "good", "too_big"] * 3
    outcomes: list[Any] = [None] * len(kinds)
    with SyncClient.from_connection_string(server.url) as client, client.get_queue_sender(SESSION_QUEUE) as sender:
        start = threading.Barrier(len(kinds))

        def send(i: int) -> None:
            m = message(kinds[i], f"{tag}:{i}", "a")
            start.wait()
            try:
                sender.send_messages(m)
            except Exception as e:
                outcomes[i] = e

        threads = [threading.Thread(target=send, args=(i,)) for i in range(len(kinds))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        with client.get_queue_receiver(
            SESSION_QUEUE, session_id="a", receive_mode=ServiceBusReceiveMode.RECEIVE_AND_DELETE
        ) as r:
            stored = [str(m) for m in r.receive_messages(100, max_wait_time=1)]
    assert [type(o) if o else None for o in outcomes] == [expected_error(k, SESSION_QUEUE) for k in kinds]
    assert sorted(stored) == sorted(f"{tag}:{i}" for i, k in enumerate(kinds) if k == "good")


def test_a_paired_senders_coalesced_callers_get_their_own_outcomes() -> None:
    """Through a paired namespace's route: to the primary, then (primary down) to a backlog queue."""
    pair = Pair()
    try:
        with pair.admin() as a:
            a.create_queue(SESSION_QUEUE, requires_session=True, max_message_size_in_kilobytes=MAX_KB)
        primary_kinds = ["good", "no_session", "surrogate_value", "good", "too_big", "bytes_key", "good"] * 3
        backlog_kinds = ["good", "surrogate_key", "unsupported_value", "good"] * 3

        async def send_all(sender: Any, kinds: list[str], tag: str) -> list[Any]:
            sends = [sender.send_messages([message(k, f"{tag}:{i}", "a")]) for i, k in enumerate(kinds)]
            return list(await asyncio.gather(*sends, return_exceptions=True))

        async def main() -> tuple[list[Any], list[Any], list[str]]:
            async with ServiceBusClient(pair.primary.url, paired_namespace=pair.options(), **FAST) as c:
                sender = c.get_queue_sender(SESSION_QUEUE)
                on_primary = await send_all(sender, primary_kinds, "p")
                pair.primary.kill()
                to_backlog = await send_all(sender, backlog_kinds, "b")
                await sender.close()
            pair.primary.start()
            async with ServiceBusClient.from_connection_string(pair.primary.url) as c:
                stored = await drain(c, SESSION_QUEUE)
            return on_primary, to_backlog, stored

        on_primary, to_backlog, stored = asyncio.run(main())
        assert [type(o) if o else None for o in on_primary] == [expected_error(k, SESSION_QUEUE) for k in primary_kinds]
        assert sorted(stored) == sorted(f"p:{i}" for i, k in enumerate(primary_kinds) if k == "good")
        assert [type(o) if o else None for o in to_backlog] == [expected_error(k, QUEUE) for k in backlog_kinds]
        assert sum(pair.backlog_counts()) == backlog_kinds.count("good")
    finally:
        pair.stop()


def test_a_call_the_script_refuses_for_one_caller_is_sent_again_without_it(server: RedisServer) -> None:
    """The sender's cached limit is stale (another client shrank it): only send.lua sees that one
    caller's message is too large, and refuses the whole shared call; the others are stored."""
    with ServiceBusAdministrationClient.from_connection_string(server.url) as admin:
        admin.create_queue("shrinks", max_message_size_in_kilobytes=MAX_KB)

    async def main() -> tuple[list[Any], list[str]]:
        async with ServiceBusClient.from_connection_string(server.url) as client:
            sender = client.get_queue_sender("shrinks")
            await sender.send_messages(ServiceBusMessage("first"))  # the sender reads the limit
            with ServiceBusAdministrationClient.from_connection_string(server.url) as admin:
                admin.update_queue(admin.get_queue("shrinks"), max_message_size_in_kilobytes=1)
            bodies = [f"small {i}" for i in range(10)]
            bodies.insert(5, "x" * 2048)
            outcomes = await asyncio.gather(
                *(sender.send_messages(ServiceBusMessage(b)) for b in bodies), return_exceptions=True
            )
            # the sender read the new limit: a large message alone is refused before it is sent
            with pytest.raises(MessageSizeExceededError, match="exceeds the maximum of 1024 bytes"):
                await sender.send_messages(ServiceBusMessage("x" * 2048))
            mode = ServiceBusReceiveMode.RECEIVE_AND_DELETE
            async with client.get_queue_receiver("shrinks", receive_mode=mode) as r:
                stored = [str(m) for m in await r.receive_messages(100, max_wait_time=1)]
            return outcomes, stored

    outcomes, stored = asyncio.run(main())
    assert [type(o) if o else None for o in outcomes] == [None] * 5 + [MessageSizeExceededError] + [None] * 5
    assert sorted(stored) == sorted(["first", *(f"small {i}" for i in range(10))])
