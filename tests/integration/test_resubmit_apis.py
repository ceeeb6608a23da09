"""resubmit_dead_letters through both APIs (sbredis.management and sbredis.aio.management): dead
letters back to their queue, to a topic (fan-out), from a subscription to a queue; a copy the target
drops as a duplicate leaves its dead letter there; dead letters locked elsewhere, or not selected,
are left where they were."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

import pytest

from sbredis import ServiceBusMessage, ServiceBusSubQueue
from sbredis.aio.management import resubmit_dead_letters as aio_resubmit
from sbredis.management import resubmit_dead_letters as sync_resubmit
from tests.sync_over_async import _unwrap

pytestmark = [pytest.mark.integration, pytest.mark.conformance, pytest.mark.standalone]

DLQ = ServiceBusSubQueue.DEAD_LETTER


def resubmit(sb_api: Any, client: Any, admin: Any, *args: Any, **kwargs: Any) -> Any:
    """resubmit_dead_letters of the API under test (the aio one awaited on the adapter's loop)."""
    if sb_api.name == "async":
        return sb_api.runner.run(aio_resubmit, _unwrap(client), _unwrap(admin), *args, **kwargs)
    return sync_resubmit(client, admin, *args, **kwargs)


def dead_letter(client: Any, q: str, bodies: list[str], **kw: Any) -> dict[str, int]:
    """Send `bodies` (each its own message id) to `q` and dead-letter them; their dead-letter
    sequence numbers by body."""
    with client.get_queue_sender(q) as s:
        s.send_messages([ServiceBusMessage(b, message_id=b, **kw) for b in bodies])
    with client.get_queue_receiver(q) as r:
        got: list[Any] = []
        deadline = time.monotonic() + 10
        while len(got) < len(bodies) and time.monotonic() < deadline:
            got += r.receive_messages(len(bodies) - len(got), max_wait_time=1)
        r.dead_letter_messages(got, reason="Bad")
    with client.get_queue_receiver(q, sub_queue=DLQ) as r:
        return {str(m): m.sequence_number for m in r.peek_messages(100, sequence_number=0)}


def counts(admin: Any, q: str) -> tuple[int, int]:
    p = admin.get_queue_runtime_properties(q)
    return p.active_message_count, p.dead_letter_message_count


def test_back_to_the_queue_itself_with_a_selection(sb_api: Any, client: Any, admin: Any, make_queue: Any) -> None:
    q = make_queue()
    dl = dead_letter(client, q, ["a", "b", "c", "d"])
    gone = max(dl.values()) + 100
    progress: list[int] = []
    out = resubmit(
        sb_api, client, admin, q, sequence_numbers=[dl["b"], dl["d"], gone], batch_size=1, on_progress=progress.append
    )
    assert (out.resubmitted, out.kept_as_duplicates, out.lock_lost) == (2, 0, 0)
    assert out.not_found == [gone] and out.to == q
    assert sum(progress) == 4  # every dead letter received was counted once, moved or not
    assert counts(admin, q) == (2, 2)
    with client.get_queue_receiver(q) as r:
        assert sorted(map(str, r.receive_messages(10, max_wait_time=1))) == ["b", "d"]
    with client.get_queue_receiver(q, sub_queue=DLQ) as r:
        left = r.receive_messages(10, max_wait_time=1)
    # given back, not completed; each received twice now (by the dead-lettering receive and the resubmit)
    assert sorted(map(str, left)) == ["a", "c"]


def test_to_a_topic_every_matching_subscription_gets_a_copy(
    sb_api: Any, client: Any, admin: Any, make_queue: Any, queue_name: str
) -> None:
    q = make_queue()
    t = "t-" + queue_name
    admin.create_topic(t)
    try:
        admin.create_subscription(t, "x")
        admin.create_subscription(t, "y")
        dead_letter(client, q, ["p", "q"], application_properties={"k": "v"})
        out = resubmit(sb_api, client, admin, q, t, max_message_count=1)
        assert (out.resubmitted, out.to) == (1, t)
        assert counts(admin, q) == (0, 1)
        for sub in ("x", "y"):
            with client.get_subscription_receiver(t, sub) as r:
                got = r.receive_messages(10, max_wait_time=1)
            assert [m.sent_application_properties for m in got] == [{"k": "v"}]
            assert [str(m) for m in got] == ["p"]  # the oldest dead letter first
    finally:
        admin.delete_topic(t)


def test_subscription_dead_letters_to_a_queue(
    sb_api: Any, client: Any, admin: Any, make_queue: Any, queue_name: str
) -> None:
    q = make_queue()
    t = "t-" + queue_name
    admin.create_topic(t)
    try:
        admin.create_subscription(t, "s")
        with client.get_topic_sender(t) as s:
            s.send_messages([ServiceBusMessage(f"e{i}") for i in range(3)])
        with client.get_subscription_receiver(t, "s") as r:
            got: list[Any] = []
            deadline = time.monotonic() + 10
            while len(got) < 3 and time.monotonic() < deadline:
                got += r.receive_messages(3, max_wait_time=1)
            r.dead_letter_messages(got, reason="Bad")
        out = resubmit(sb_api, client, admin, f"{t}/Subscriptions/s", q, new_message_ids=True)
        assert out.resubmitted == 3
        assert admin.get_subscription_runtime_properties(t, "s").dead_letter_message_count == 0
        with client.get_queue_receiver(q) as r:
            copies = r.receive_messages(10, max_wait_time=1)
        assert sorted(map(str, copies)) == ["e0", "e1", "e2"]
        ids = {m.message_id for m in copies}
        assert len(ids) == 3 and not ids & {m.message_id for m in got}  # new ids, as asked
    finally:
        admin.delete_topic(t)


def test_a_copy_dropped_as_a_duplicate_leaves_its_dead_letter(
    sb_api: Any, client: Any, admin: Any, make_queue: Any, queue_name: str
) -> None:
    q = make_queue()
    target = "d-" + queue_name
    admin.create_queue(target, requires_duplicate_detection=True)
    try:
        dead_letter(client, q, ["m1", "m2"])
        with client.get_queue_sender(target) as s:
            s.send_messages(ServiceBusMessage("earlier", message_id="m1"))
        out = resubmit(sb_api, client, admin, q, target)
        assert (out.resubmitted, out.kept_as_duplicates) == (1, 1)
        with client.get_queue_receiver(q, sub_queue=DLQ) as r:
            assert [str(m) for m in r.peek_messages(10, sequence_number=0)] == ["m1"]
        # with new ids the target takes it
        assert resubmit(sb_api, client, admin, q, target, new_message_ids=True).resubmitted == 1
        assert counts(admin, q) == (0, 0)
        with client.get_queue_receiver(target) as r:
            assert sorted(map(str, r.receive_messages(10, max_wait_time=1))) == ["earlier", "m1", "m2"]
    finally:
        admin.delete_queue(target)


def test_dead_letters_locked_elsewhere_are_left_alone(sb_api: Any, client: Any, admin: Any, make_queue: Any) -> None:
    q = make_queue()
    dead_letter(client, q, ["h1", "h2", "h3"])
    with client.get_queue_receiver(q, sub_queue=DLQ) as other:
        held = other.receive_messages(1, max_wait_time=1)
        assert [str(m) for m in held] == ["h1"]
        out = resubmit(sb_api, client, admin, q)  # counts 3 there, can receive only 2
        assert out.resubmitted == 2
        other.complete_message(held[0])  # that lock was never taken from its holder
    assert counts(admin, q) == (2, 0)


def sleep_after_batch(k: int, calls: list[int]) -> Any:
    """An on_progress (noting each count in `calls`) that outlasts a 1 s lock after batch `k`:
    the dead letters held then (received, not moved) can be received again."""

    def progress(n: int) -> None:
        calls.append(n)
        if len(calls) == k:
            time.sleep(1.2)

    return progress


def test_a_held_dead_letter_whose_lock_elapsed_is_given_back_anyway(
    sb_api: Any, client: Any, admin: Any, make_queue: Any
) -> None:
    q = make_queue(lock_duration=timedelta(seconds=1))
    dl = dead_letter(client, q, ["k1", "k2", "k3"])

    # after the last batch: past the 1 s locks of the two held dead letters
    slow = sleep_after_batch(3, [])
    out = resubmit(sb_api, client, admin, q, sequence_numbers=[dl["k3"]], batch_size=1, on_progress=slow)
    assert out.resubmitted == 1 and out.not_found == []
    with client.get_queue_receiver(q, sub_queue=DLQ) as r:
        assert sorted(map(str, r.receive_messages(10, max_wait_time=1))) == ["k1", "k2"]


def test_a_held_dead_letter_that_comes_back_counts_once_against_the_limit(
    sb_api: Any, client: Any, admin: Any, make_queue: Any, queue_name: str
) -> None:
    q = make_queue(lock_duration=timedelta(seconds=1))
    target = "d-" + queue_name
    admin.create_queue(target, requires_duplicate_detection=True)
    try:
        dead_letter(client, q, ["e1", "e2", "e3", "e4"])
        with client.get_queue_sender(target) as s:
            s.send_messages(ServiceBusMessage("earlier", message_id="e1"))  # e1's copy is dropped: e1 is held
        calls: list[int] = []
        out = resubmit(
            sb_api,
            client,
            admin,
            q,
            target,
            max_message_count=3,
            batch_size=1,
            on_progress=sleep_after_batch(1, calls),
        )
        # three dead letters handled, as asked: e1 (kept, received twice), e2 and e3
        assert (out.resubmitted, out.kept_as_duplicates, out.lock_lost) == (2, 1, 0)
        assert sum(calls) == 3
        with client.get_queue_receiver(q, sub_queue=DLQ) as r:
            assert sorted(map(str, r.receive_messages(10, max_wait_time=1))) == ["e1", "e4"]
    finally:
        admin.delete_queue(target)


def test_a_dead_letter_not_selected_that_comes_back_does_not_hide_a_selected_one(
    sb_api: Any, client: Any, admin: Any, make_queue: Any
) -> None:
    q = make_queue(lock_duration=timedelta(seconds=1))
    dl = dead_letter(client, q, ["s1", "s2", "s3"])
    calls: list[int] = []
    out = resubmit(
        sb_api,
        client,
        admin,
        q,
        sequence_numbers=[dl["s2"], dl["s3"]],
        batch_size=1,
        on_progress=sleep_after_batch(1, calls),
    )
    assert (out.resubmitted, out.not_found) == (2, [])
    assert counts(admin, q) == (2, 1)
