"""The batch read's column decoder against the message objects the client builds from the same peek.

The Spark source turns each page of a peek straight into Arrow columns; a received message read
through the client's own classes must give the same values, column by column, whatever state
the messages are in (locked, abandoned, deferred, scheduled, dead-lettered) and whatever the
properties hold.
"""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from sbredis import ServiceBusMessage
from sbredis._core import log_read, protocol
from sbredis.exceptions import MessagingEntityNotFoundError
from sbredis.spark import _broker, _columns

pytestmark = pytest.mark.spark

ALL = tuple(range(len(_columns.READ_COLUMNS)))


def both(client: Any, entity: str, group: protocol.Group, partitions: int) -> tuple[list[Any], list[Any]]:
    """(rows from the column decoder, rows from message objects) of every partition."""
    pages = _columns.ArrowPages(ALL)
    decoded: list[Any] = []
    built: list[Any] = []
    for p in range(partitions):
        for f in _broker.peek_pages(client, entity, p, group, 1, 1 << 40, 7):
            decoded.extend(tuple(r.values()) for r in pages.batch(entity, p, f).to_pylist())
        for m in _broker.peek_range(client, entity, p, group, 1, 1 << 40, 7):
            built.append(_columns.ArrowBatches(ALL).batch([_columns.to_row(m)]).to_pylist()[0])
    return decoded, [tuple(r.values()) for r in built]


def test_columns_match_the_message_objects_in_every_state(client: Any, make_queue: Any) -> None:
    q = make_queue(enable_partitioning=True, partition_count=2, max_delivery_count=5)
    when = datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)
    rich = [
        ServiceBusMessage(
            f"body-{i}".encode(),
            message_id=f"m-{i}",
            session_id=None,
            partition_key=f"k{i % 3}",
            correlation_id=f"c-{i}" if i % 2 else None,
            subject="s" if i % 3 else None,
            content_type="application/json" if i % 4 else None,
            application_properties={
                "n": i,
                "f": 1.5,
                "b": i % 2 == 0,
                "raw": b"\x00\xff",
                "when": when,
                "span": timedelta(seconds=3),
                "u": uuid.UUID(int=i),
                "t": "x",
            }
            if i % 5
            else None,
            time_to_live=timedelta(minutes=5) if i % 2 else None,
        )
        for i in range(40)
    ]
    with client.get_queue_sender(q) as s:
        s.send_messages(rich)
        s.schedule_messages(ServiceBusMessage("later", message_id="sched"), datetime.now(UTC) + timedelta(hours=1))
    with client.get_queue_receiver(q, max_wait_time=2) as r:
        got = r.receive_messages(12, max_wait_time=2)
        while len(got) < 12:
            got += r.receive_messages(12 - len(got), max_wait_time=2)
        r.defer_message(got[0])
        r.abandon_message(got[1])  # a delivery count held in the partition's count hash
        r.dead_letter_message(got[2], reason="why", error_description="because")
        # got[3:] stay locked: their delivery counts are in their lock records
    decoded, built = both(client, q, protocol.Group.MAIN, 2)
    assert len(decoded) == 40  # 37 stored + the scheduled one + the deferred one, minus the dead letter
    assert decoded == built
    states = {row[_columns.READ_COLUMNS.index("state")] for row in decoded}
    assert states == {"active", "deferred", "scheduled"}
    seq, dc = _columns.READ_COLUMNS.index("sequenceNumber"), _columns.READ_COLUMNS.index("deliveryCount")
    shown = {row[seq]: row[dc] for row in decoded}
    for m in got[1:2] + got[3:]:  # abandoned (count in the hash) and still locked (count in the lock)
        assert shown[m.sequence_number] == m.delivery_count

    dead, dead_built = both(client, q, protocol.Group.DEAD_LETTER, 2)
    assert dead == dead_built
    assert [(r[_columns.READ_COLUMNS.index("deadLetterReason")]) for r in dead] == ["why"]


def test_session_ids_fill_the_partition_key_column(client: Any, make_queue: Any) -> None:
    q = make_queue(enable_partitioning=True, partition_count=2, requires_session=True)
    with client.get_queue_sender(q) as s:
        s.send_messages([ServiceBusMessage(f"b{i}", session_id=f"s{i % 3}") for i in range(9)])
    decoded, built = both(client, q, protocol.Group.MAIN, 2)
    assert decoded == built
    pk = _columns.READ_COLUMNS.index("partitionKey")
    sid = _columns.READ_COLUMNS.index("sessionId")
    assert all(row[pk] == row[sid] and row[sid].startswith("s") for row in decoded)


def test_a_projection_reads_only_its_columns(client: Any, make_queue: Any) -> None:
    q = make_queue()
    with client.get_queue_sender(q) as s:
        s.send_messages([ServiceBusMessage(f"b{i}", message_id=f"m{i}") for i in range(3)])
    cols = (_columns.READ_COLUMNS.index("body"), _columns.READ_COLUMNS.index("offset"))
    pages = _columns.ArrowPages(cols)
    (f,) = list(_broker.peek_pages(client, q, 0, protocol.Group.MAIN, 1, 1 << 40, 10))
    batch = pages.batch(q, 0, f)
    assert batch.schema.names == ["body", "offset"]
    assert batch.to_pylist() == [{"body": f"b{i}".encode(), "offset": i + 1} for i in range(3)]


def test_a_range_end_cuts_the_last_page(client: Any, make_queue: Any) -> None:
    q = make_queue()
    with client.get_queue_sender(q) as s:
        s.send_messages([ServiceBusMessage(f"b{i}") for i in range(10)])
    pages = list(_broker.peek_pages(client, q, 0, protocol.Group.MAIN, 3, 8, 4))
    assert [f.local_seq for f in pages] == [[3, 4, 5, 6], [7]]


def test_received_messages_decode_as_their_message_objects_read(client: Any, make_queue: Any) -> None:
    """The consuming source's column-wise rows (and locks) equal what the message objects give."""
    from sbredis.spark._consume_stream import received_locks

    q = make_queue(enable_partitioning=True, partition_count=2)
    with client.get_queue_sender(q) as s:
        for i in range(6):
            s.send_messages(
                ServiceBusMessage(
                    f"b{i}".encode(),
                    message_id=f"m{i}",
                    subject="s",
                    application_properties={"n": i, "raw": b"\x00", "when": datetime(2026, 1, 2, tzinfo=UTC)},
                    time_to_live=timedelta(minutes=5) if i % 2 else None,
                )
            )
    with client.get_queue_receiver(q, max_wait_time=2) as r:
        got: list[Any] = []
        while len(got) < 6:
            got += r.receive_messages(6 - len(got), max_wait_time=2)
        handles = [_broker.held(q, "", g.partition, g.nonce, seq, 0) for g in received_locks(got) for seq in g.seqs]
        assert sorted(str(h.lock_token) for h in handles) == sorted(str(m.lock_token) for m in got)
        batches = list(_columns.received_batches(_columns.ArrowPages(ALL), got))
        assert {b.column("partition")[0].as_py() for b in batches} == {0, 1}
        decoded = sorted((tuple(row.values()) for b in batches for row in b.to_pylist()), key=lambda row: row[3])
        built = sorted(
            (tuple(_columns.ArrowBatches(ALL).batch([_columns.to_row(m)]).to_pylist()[0].values()) for m in got),
            key=lambda row: row[3],
        )
        assert decoded == built
        r.complete_messages(got)


def test_a_receive_round_decodes_as_the_message_objects_and_completes_by_its_locks(
    client: Any, make_queue: Any
) -> None:
    """The consuming source's fast path: one pipelined receive over the partitions, parsed as
    columns into one Arrow batch, gives the rows the message objects give, and its locks (lock
    nonce and sequence numbers) complete the messages (a second complete finds every lock gone)."""
    q = make_queue(enable_partitioning=True, partition_count=2)
    with client.get_queue_sender(q) as s:
        s.send_messages(
            [ServiceBusMessage(f"b{i}".encode(), message_id=f"m{i}", application_properties={"n": i}) for i in range(8)]
        )
    expected = sorted(both(client, q, protocol.Group.MAIN, 2)[1])  # as message objects give them
    meta = _broker.meta(client, q)
    took, error = _broker.receive_round(client, q, meta, protocol.Group.MAIN, {0: 10, 1: 10})
    assert error is None
    assert {t.partition for t in took} == {0, 1} and not any(t.more for t in took)
    batch = _columns.joined_batch(_columns.ArrowPages(ALL), q, [(t.partition, t.fields) for t in took])
    assert sorted(tuple(r.values()) for r in batch.to_pylist()) == expected
    locks = _broker.taken_locks(took)
    assert [g.partition << 40 | seq for g in locks for seq in g.seqs] == batch.column("sequenceNumber").to_pylist()
    assert _broker.complete_locks(client, q, protocol.Group.MAIN, meta.generation, locks) == 0
    assert _broker.complete_locks(client, q, protocol.Group.MAIN, meta.generation, locks) == 8  # gone
    with client.get_queue_receiver(q) as r:
        assert r.peek_messages(10) == []


def test_a_receive_round_lock_is_settled_by_a_receiver_through_its_handle(client: Any, make_queue: Any) -> None:
    """A lock a round took, as a handle built from its parts, is settled by a receiver."""
    q = make_queue()
    with client.get_queue_sender(q) as s:
        s.send_messages([ServiceBusMessage(f"b{i}") for i in range(3)])
    took, _ = _broker.receive_round(client, q, _broker.meta(client, q), protocol.Group.MAIN, {0: 2})
    (t,) = took
    assert t.more  # it filled its quota: there may be more
    with client.get_queue_receiver(q, max_wait_time=2) as r:
        (m,) = r.receive_messages(1, max_wait_time=2)
        (g,) = _broker.taken_locks([t])
        handle = _broker.held(q, protocol.Group.MAIN, g.partition, g.nonce, g.seqs[0], t.locked_until_ms)
        r.complete_messages([handle])
        assert m.sequence_number == 3  # the round holds the first two
        r.complete_messages([m])


def test_locks_of_an_entity_created_again_are_lost_and_a_round_on_a_deleted_one_fails(
    client: Any, make_queue: Any, admin: Any
) -> None:
    q = make_queue()
    with client.get_queue_sender(q) as s:
        s.send_messages([ServiceBusMessage(f"b{i}") for i in range(3)])
    meta = _broker.meta(client, q)
    (t,), _ = _broker.receive_round(client, q, meta, protocol.Group.MAIN, {0: 3})
    admin.delete_queue(q)
    took, error = _broker.receive_round(client, q, meta, protocol.Group.MAIN, {0: 3})
    assert took == [] and error is not None
    admin.create_queue(q)
    assert _broker.complete_locks(client, q, protocol.Group.MAIN, meta.generation, _broker.taken_locks([t])) == 3


def test_the_plain_read_matches_the_peek_script_on_expired_and_delivered_messages(
    client: Any, make_queue: Any, admin: Any
) -> None:
    """The pages read with XRANGE (peek_pages) against the peek script's (peek_range): messages
    whose TTL passed but are still stored show as the script shows them, and so do counts of
    earlier deliveries once no lock is held."""
    q = make_queue(enable_partitioning=True, partition_count=2, max_delivery_count=5)
    with client.get_queue_sender(q) as s, client.get_queue_receiver(q, max_wait_time=2) as r:
        s.send_messages([ServiceBusMessage(f"k{i}") for i in range(4)])
        for _ in range(2):  # delivered twice: peek shows 1 delivery before the last
            got: list[Any] = []
            while len(got) < 4:
                got += r.receive_messages(4 - len(got), max_wait_time=2)
            for m in got:
                r.abandon_message(m)  # no lock left; the count in the partition's count hash
        s.send_messages([ServiceBusMessage(f"b{i}", time_to_live=timedelta(milliseconds=1)) for i in range(4)])
    time.sleep(0.01)  # past the TTL; nothing receives, so the expired messages stay stored
    decoded, built = both(client, q, protocol.Group.MAIN, 2)
    assert decoded == built and len(decoded) == 8
    assert sorted(row[_columns.READ_COLUMNS.index("deliveryCount")] for row in decoded) == [0] * 4 + [1] * 4
    admin.delete_queue(q)
    with pytest.raises(MessagingEntityNotFoundError):
        list(_broker.peek_pages(client, q, 0, protocol.Group.MAIN, 1, 10, 5))


def test_a_log_entry_sbredis_did_not_write_is_refused() -> None:
    with pytest.raises(ValueError, match="not written by sbredis"):
        log_read.parse_page([b"Active", [[b"1-0", [b"z", b"1"]]], 0, 0, 0, 0], "q", protocol.Group.MAIN)
    with pytest.raises(MessagingEntityNotFoundError):
        log_read.parse_page([None, [], 0, 0, 0, 0], "q", protocol.Group.MAIN)
    assert log_read.lock_delivery_count("n|r|0|10|3|sess") == 3
    assert log_read.lock_delivery_count(b"n|d|5|10|1") == 1
    assert log_read.lock_delivery_count("n|1700000000000|r|0|10|3") == 3  # with its lock's end
    assert log_read.lock_delivery_count(b"n|1700000000000|d|5|10|12") == 12


def test_a_projection_without_counts_or_states_reads_the_same_rows(client: Any, make_queue: Any, url: str) -> None:
    """A read whose columns show no delivery count or state skips the lock and state reads: on a
    partition with a locked and a deferred message it gives the rows a full read gives."""
    from sbredis.spark import _options, _source

    q = make_queue()
    with client.get_queue_sender(q) as s:
        s.send_messages([ServiceBusMessage(f"b{i}", message_id=f"m{i}") for i in range(5)])
    with client.get_queue_receiver(q, max_wait_time=2) as r:
        a, b = r.receive_messages(2, max_wait_time=2)
        r.defer_message(a)  # b stays locked
        opts = _options.parse({"url": url, "entity": q})
        rng = _source.OffsetRange(0, 1, 6)
        names = ("offset", "body", "messageId")
        cols = tuple(_columns.READ_COLUMNS.index(n) for n in names)
        lean = [row for batch in _source._read_range(opts, rng, cols) for row in batch.to_pylist()]
        full = [row for batch in _source._read_range(opts, rng, ALL) for row in batch.to_pylist()]
        assert lean == [{n: row[n] for n in names} for row in full]
        assert {row["state"] for row in full} == {"active", "deferred"}
        r.complete_messages([b])
