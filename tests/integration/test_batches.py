"""Large batches: the paths where the scripts write many lock records, deadlines, ready entries,
expiries and duplicate-detection marks in one call (sbredis/lua/includes/partition.lua's call_many turns
such keys into their hashtable / skiplist form first). What a user sees must not change."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from sbredis import ServiceBusMessage
from sbredis._core.keys import partition_keys
from sbredis.exceptions import MessageAlreadySettled
from tests.conftest import eventually

pytestmark = [pytest.mark.integration, pytest.mark.conformance]

N = 150  # over Redis's 128-entry ziplist limit, and over call_many's threshold


def test_large_batch_lock_abandon_complete(client: Any, admin: Any, make_queue: Any) -> None:
    q = make_queue()
    with client.get_queue_sender(q) as s:
        s.send_messages([ServiceBusMessage(f"m{i}") for i in range(N)])
    with client.get_queue_receiver(q) as r:
        got = r.receive_messages(N, max_wait_time=1)
        assert [str(m) for m in got] == [f"m{i}" for i in range(N)]
        assert all(m.delivery_count == 0 for m in got)
        r.abandon_messages(got[::2])
        r.complete_messages(got[1::2])
        with pytest.raises(MessageAlreadySettled):
            r.complete_messages(got[1:2])
        again = r.receive_messages(N, max_wait_time=1)
        assert [str(m) for m in again] == [f"m{i}" for i in range(0, N, 2)]
        assert all(m.delivery_count == 1 for m in again)
        r.complete_messages(again)
        assert r.receive_messages(N, wait=False) == []
    props = admin.get_queue_runtime_properties(q)
    assert props.total_message_count == 0 and props.size_in_bytes == 0


def test_large_batch_duplicates_and_expiry(client: Any, admin: Any, make_queue: Any) -> None:
    q = make_queue(
        requires_duplicate_detection=True,
        duplicate_detection_history_time_window=timedelta(minutes=1),
        max_delivery_count=1000,  # the polling below abandons what it sees
    )
    ids = [f"id-{i}" for i in range(N)]
    with client.get_queue_sender(q) as s:
        s.send_messages([ServiceBusMessage(f"m{i}", message_id=ids[i]) for i in range(N)])
        s.send_messages([ServiceBusMessage(f"again{i}", message_id=ids[i]) for i in range(N)])  # all dropped
        assert admin.get_queue_runtime_properties(q).total_message_count == N
        s.send_messages(
            [
                ServiceBusMessage(f"short{i}", message_id=f"x-{i}", time_to_live=timedelta(milliseconds=200))
                for i in range(N)
            ]
        )
    with client.get_queue_receiver(q) as r:

        def only_the_first_batch_is_left() -> list[str] | None:
            got = r.receive_messages(2 * N, max_wait_time=0.2)
            bodies = [str(m) for m in got]
            if bodies and not bodies[0].startswith("m"):
                return None
            r.abandon_messages(got)
            return bodies if len(bodies) == N else None

        # the expiring messages go away; the duplicates never showed up
        assert eventually(only_the_first_batch_is_left, timeout=5) == [f"m{i}" for i in range(N)]


def test_one_call_settles_locks_of_several_receives(client: Any, make_queue: Any, raw_redis: Any) -> None:
    """A settlement call naming locks from different receive calls (different lock nonces) settles
    each one; delivery counts survive abandon and defer, and completing leaves no count behind."""
    q = make_queue(max_delivery_count=10)
    with client.get_queue_sender(q) as s:
        s.send_messages([ServiceBusMessage(f"m{i}") for i in range(8)])
    with client.get_queue_receiver(q) as r:
        first = r.receive_messages(4, max_wait_time=1)
        second = r.receive_messages(4, max_wait_time=1)
        assert first[0].lock_ref.nonce != second[0].lock_ref.nonce
        r.abandon_messages([first[0], second[0], first[1], second[1]])
        r.defer_messages([first[2], second[2]])
        r.dead_letter_messages([first[3], second[3]], reason="r")
        again = r.receive_messages(8, max_wait_time=1)
        assert sorted(str(m) for m in again) == ["m0", "m1", "m4", "m5"]
        assert all(m.delivery_count == 1 for m in again)
        deferred = r.receive_deferred_messages([first[2].sequence_number, second[2].sequence_number])
        assert [m.delivery_count for m in deferred] == [1, 1]
        r.complete_messages([*again[:2], deferred[0], *again[2:], deferred[1]])
        with pytest.raises(MessageAlreadySettled):
            r.complete_messages([again[0]])
    with client.get_queue_receiver(q, sub_queue="deadletter") as d:
        dead = d.receive_messages(4, max_wait_time=1)
        assert sorted(str(m) for m in dead) == ["m3", "m7"]
        assert [m.delivery_count for m in dead] == [1, 1]
        d.complete_messages(dead)
    dc_keys = [k for k in partition_keys(q, 0) if k.endswith(":dc")]
    assert dc_keys and all(raw_redis.hlen(k) == 0 for k in dc_keys)


def test_completing_in_any_order_removes_exactly_those_messages(client: Any, admin: Any, make_queue: Any) -> None:
    """complete drops a run of the log's oldest entries at once (sbredis/lua/includes/settle.lua); out of
    order, with gaps, or with an older message still there, only the completed ones go."""
    q = make_queue()
    with client.get_queue_sender(q) as s:
        s.send_messages([ServiceBusMessage(f"m{i}") for i in range(40)])
    with client.get_queue_receiver(q) as r:
        got = r.receive_messages(40, max_wait_time=1)
        assert len(got) == 40
        r.complete_messages(got[5:10])  # consecutive, but m0..m4 are older and stay
        r.complete_messages(got[14:11:-1])  # descending
        r.complete_messages([got[20], got[22], got[21], got[24]])  # a gap (m23 stays)
        r.complete_messages(got[0:3])  # the oldest run
        r.abandon_messages([*got[3:5], *got[10:12], *got[15:20], got[23], *got[25:]])
        left = r.receive_messages(40, max_wait_time=1)
        expect = [3, 4, 10, 11, *range(15, 20), 23, *range(25, 40)]
        assert [str(m) for m in left] == [f"m{i}" for i in expect]
        r.complete_messages(left)
    props = admin.get_queue_runtime_properties(q)
    assert props.total_message_count == 0 and props.size_in_bytes == 0
