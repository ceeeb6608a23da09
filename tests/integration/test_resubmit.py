"""resubmit_dead_letters (sbredis.management, sbredis.aio.management): dead letters copied to one
subscription of a topic reach it alone, past the topic's rules; a selection moves only what it
names; bad input is refused before any dead letter is received."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from sbredis import ServiceBusClient, ServiceBusMessage, ServiceBusSubQueue
from sbredis.exceptions import InvalidArgumentError, MessagingEntityNotFoundError
from sbredis.management import ServiceBusAdministrationClient, resubmit_dead_letters

pytestmark = pytest.mark.integration

DLQ = ServiceBusSubQueue.DEAD_LETTER


@pytest.fixture()
def sync_clients(url: str) -> Iterator[tuple[ServiceBusClient, ServiceBusAdministrationClient]]:
    with (
        ServiceBusClient.from_connection_string(url) as c,
        ServiceBusAdministrationClient.from_connection_string(url) as a,
    ):
        yield c, a


@pytest.fixture()
def topic(sync_clients: Any, queue_name: str) -> Iterator[str]:
    """A topic (2 partitions) with subscriptions `all` and `one` (both take everything) and `none`
    (no rule: nothing sent to the topic reaches it)."""
    _, admin = sync_clients
    t = "t-" + queue_name
    admin.create_topic(t, enable_partitioning=True, partition_count=2)
    for name in ("all", "one", "none"):
        admin.create_subscription(t, name)
    admin.delete_rule(t, "none", "$Default")
    yield t
    admin.delete_topic(t)


def dead_letter_queue(client: ServiceBusClient, q: str, n: int, **kw: Any) -> list[int]:
    with client.get_queue_sender(q) as s:
        s.send_messages([ServiceBusMessage(f"m{i}", message_id=f"m{i}", **kw) for i in range(n)])
    with client.get_queue_receiver(q) as r:
        got: list[Any] = []
        while len(got) < n:
            got += r.receive_messages(n - len(got), max_wait_time=2)
        r.dead_letter_messages(got, reason="Bad")
    return sorted(m.sequence_number for m in got)


def active(admin: ServiceBusAdministrationClient, t: str) -> dict[str, int]:
    return {s: admin.get_subscription_runtime_properties(t, s).active_message_count for s in ("all", "one", "none")}


def peek_dlq(client: ServiceBusClient, q: str) -> list[Any]:
    with client.get_queue_receiver(q, sub_queue=DLQ) as r:
        return list(r.peek_messages(100, sequence_number=0))


def test_selected_dead_letters_to_one_subscription(sync_clients: Any, make_queue: Any, topic: str) -> None:
    client, admin = sync_clients
    q = make_queue(enable_partitioning=True, partition_count=2)
    seqs = dead_letter_queue(client, q, 6, application_properties={"k": 1})
    dl = {m.message_id: m.sequence_number for m in peek_dlq(client, q)}
    chosen = [dl["m1"], dl["m4"], dl["m5"]]
    gone = max(seqs) + 1000  # not in the subqueue

    out = resubmit_dead_letters(client, admin, q, f"{topic}:none", sequence_numbers=[*chosen, gone])
    assert (out.resubmitted, out.kept_as_duplicates, out.lock_lost) == (3, 0, 0)
    assert out.not_found == [gone] and out.to == f"{topic}/Subscriptions/none"
    assert active(admin, topic) == {"all": 0, "one": 0, "none": 3}  # no fan-out, no rule in the way
    with client.get_subscription_receiver(topic, "none") as r:
        copies = r.peek_messages(10, sequence_number=0)
    assert sorted(m.message_id for m in copies) == ["m1", "m4", "m5"]
    assert all(m.sent_application_properties == {"k": 1} and str(m) == m.message_id for m in copies)
    # the others stay dead-lettered: received in passing, then given back (abandoned)
    assert sorted(m.message_id for m in peek_dlq(client, q)) == ["m0", "m2", "m3"]

    # all the rest, into another subscription by its full path
    out = resubmit_dead_letters(client, admin, q, f"{topic}/Subscriptions/one", new_message_ids=True)
    assert out.resubmitted == 3 and peek_dlq(client, q) == []
    assert active(admin, topic) == {"all": 0, "one": 3, "none": 3}
    with client.get_subscription_receiver(topic, "one") as r:
        got = r.receive_messages(3, max_wait_time=2)
        assert sorted(map(str, got)) == ["m0", "m2", "m3"] and not {m.message_id for m in got} & {"m0", "m2", "m3"}
        r.complete_messages(got)


def test_subscription_dead_letters_back_to_that_subscription(sync_clients: Any, topic: str) -> None:
    client, admin = sync_clients
    with client.get_topic_sender(topic) as s:
        s.send_messages([ServiceBusMessage(f"e{i}") for i in range(4)])
    with client.get_subscription_receiver(topic, "one") as r:
        got: list[Any] = []
        while len(got) < 4:
            got += r.receive_messages(4, max_wait_time=2)
        r.dead_letter_messages(got, reason="Bad")
    assert active(admin, topic) == {"all": 4, "one": 0, "none": 0}
    with pytest.raises(InvalidArgumentError, match="name a target"):
        resubmit_dead_letters(client, admin, f"{topic}/Subscriptions/one")
    out = resubmit_dead_letters(client, admin, f"{topic}/Subscriptions/one", f"{topic}/Subscriptions/one")
    assert out.resubmitted == 4
    assert active(admin, topic) == {"all": 4, "one": 4, "none": 0}  # `all` got no second copy
    assert admin.get_subscription_runtime_properties(topic, "one").dead_letter_message_count == 0


def test_session_subscription_keeps_session_ids(sync_clients: Any, make_queue: Any, topic: str) -> None:
    client, admin = sync_clients
    admin.create_subscription(topic, "carts", requires_session=True)
    q = make_queue(requires_session=True)
    with client.get_queue_sender(q) as s:
        s.send_messages([ServiceBusMessage(f"c{i}", session_id=f"s{i % 2}") for i in range(4)])
    for sid in ("s0", "s1"):
        with client.get_queue_receiver(q, session_id=sid) as r:
            got = r.receive_messages(2, max_wait_time=2)
            r.dead_letter_messages(got, reason="Bad")
    assert resubmit_dead_letters(client, admin, q, f"{topic}:carts").resubmitted == 4
    with client.get_subscription_receiver(topic, "carts", session_id="s1") as r:
        assert sorted(map(str, r.receive_messages(4, max_wait_time=1))) == ["c1", "c3"]


def test_bad_input_is_refused_before_anything_is_received(sync_clients: Any, make_queue: Any, topic: str) -> None:
    client, admin = sync_clients
    q = make_queue()
    dead_letter_queue(client, q, 2)
    before = [m.delivery_count for m in peek_dlq(client, q)]
    bad: list[tuple[dict[str, Any], type[Exception]]] = [
        ({"to": f"{topic}:missing"}, MessagingEntityNotFoundError),
        ({"to": "no-such-entity"}, MessagingEntityNotFoundError),
        ({"to": f"{topic}:"}, InvalidArgumentError),
        ({"to": f"{topic}:one", "sub_queue": "deadletters"}, InvalidArgumentError),
        ({"to": f"{topic}:one", "sequence_numbers": []}, InvalidArgumentError),
        ({"to": f"{topic}:one", "sequence_numbers": ["1"]}, InvalidArgumentError),
        ({"to": f"{topic}:one", "max_message_count": 0}, InvalidArgumentError),
        ({"to": f"{topic}:one", "batch_size": 5001}, InvalidArgumentError),
    ]
    for kwargs, error in bad:
        with pytest.raises(error):
            resubmit_dead_letters(client, admin, q, **kwargs)
    with pytest.raises(MessagingEntityNotFoundError):
        resubmit_dead_letters(client, admin, "no-such-queue", f"{topic}:one")
    # nothing was received: no delivery counted, nothing locked, nothing sent
    assert [m.delivery_count for m in peek_dlq(client, q)] == before
    assert active(admin, topic) == {"all": 0, "one": 0, "none": 0}
    with client.get_queue_receiver(q, sub_queue=DLQ) as r:
        assert len(r.receive_messages(2, max_wait_time=1)) == 2


def test_transfer_dead_letters_to_one_subscription(sync_clients: Any, topic: str, queue_name: str) -> None:
    client, admin = sync_clients
    admin.create_queue(queue_name)
    admin.create_subscription(topic, "fwd", forward_to=queue_name)
    admin.delete_queue(queue_name)  # what `fwd` forwards now lands in its transfer dead-letter subqueue
    with client.get_topic_sender(topic) as s:
        s.send_messages([ServiceBusMessage(f"f{i}") for i in range(3)])

    def tdlq() -> int:
        return int(admin.get_subscription_runtime_properties(topic, "fwd").transfer_dead_letter_message_count)

    from tests.conftest import eventually

    eventually(lambda: tdlq() == 3)
    out = resubmit_dead_letters(
        client, admin, f"{topic}:fwd", f"{topic}:none", sub_queue=ServiceBusSubQueue.TRANSFER_DEAD_LETTER
    )
    assert out.resubmitted == 3 and tdlq() == 0
    assert active(admin, topic) == {"all": 3, "one": 3, "none": 3}  # `all` and `one` had theirs from the send


def test_async(url: str, queue_name: str) -> None:
    from sbredis.aio import ServiceBusClient as AsyncClient
    from sbredis.aio.management import ServiceBusAdministrationClient as AsyncAdmin
    from sbredis.aio.management import resubmit_dead_letters as aresubmit

    async def main() -> None:
        async with AsyncAdmin.from_connection_string(url) as admin, AsyncClient.from_connection_string(url) as c:
            t = "t-" + queue_name
            await admin.create_queue(queue_name)
            await admin.create_topic(t)
            try:
                await admin.create_subscription(t, "a")
                await admin.create_subscription(t, "b")
                async with c.get_queue_sender(queue_name) as s:
                    await s.send_messages([ServiceBusMessage(f"x{i}") for i in range(5)])
                async with c.get_queue_receiver(queue_name) as r:
                    got = await r.receive_messages(5, max_wait_time=2)
                    await r.dead_letter_messages(got, reason="Bad")
                progress: list[int] = []
                out = await aresubmit(c, admin, queue_name, f"{t}:b", batch_size=2, on_progress=progress.append)
                assert out.resubmitted == 5 and sum(progress) == 5 and len(progress) >= 3
                a = await admin.get_subscription_runtime_properties(t, "a")
                b = await admin.get_subscription_runtime_properties(t, "b")
                assert (a.active_message_count, b.active_message_count) == (0, 5)
            finally:
                await admin.delete_topic(t)
                await admin.delete_queue(queue_name)

    asyncio.run(main())


def test_on_a_cluster(redis_cluster: Any, queue_name: str) -> None:
    """Each partition of the subscription on its own slot: the copies spread over them all."""
    url = str(redis_cluster.url)
    t = "t-" + queue_name
    with (
        ServiceBusClient.from_connection_string(url) as client,
        ServiceBusAdministrationClient.from_connection_string(url) as admin,
    ):
        admin.create_queue(queue_name, enable_partitioning=True, partition_count=4)
        admin.create_topic(t, enable_partitioning=True, partition_count=4)
        try:
            admin.create_subscription(t, "a")
            admin.create_subscription(t, "b")
            with client.get_queue_sender(queue_name) as s:
                s.send_messages([ServiceBusMessage(f"k{i}", partition_key=f"k{i}") for i in range(12)])
            with client.get_queue_receiver(queue_name) as r:
                got: list[Any] = []
                while len(got) < 12:
                    got += r.receive_messages(12, max_wait_time=2)
                r.dead_letter_messages(got, reason="Bad")
            assert resubmit_dead_letters(client, admin, queue_name, f"{t}:b").resubmitted == 12
            b = admin.get_subscription_runtime_properties(t, "b")
            a = admin.get_subscription_runtime_properties(t, "a")
            assert (a.active_message_count, b.active_message_count) == (0, 12)
            with client.get_subscription_receiver(t, "b") as r:
                copies = r.peek_messages(20, sequence_number=0)
            assert sorted(map(str, copies)) == sorted(f"k{i}" for i in range(12))
            assert len({m.partition_id for m in copies}) > 1  # keyed copies: several partitions, several nodes
        finally:
            admin.delete_topic(t)
            admin.delete_queue(queue_name)
