"""The sans-IO core: partition choice, send planning, quotas, sequence numbers, settlement groups."""

from __future__ import annotations

import binascii
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sbredis import ServiceBusMessage, ServiceBusMessageBatch, ServiceBusReceivedMessage
from sbredis._core import keys, ops, scripts
from sbredis._core.entity import build_queue
from sbredis._enums import ServiceBusMessageState, ServiceBusReceiveMode, ServiceBusSubQueue
from sbredis._message import PARTITION_SHIFT
from sbredis.exceptions import (
    InvalidArgumentError,
    InvalidOperationError,
    MessageAlreadySettled,
    MessageSizeExceededError,
)

LIMIT = 256 * 1024


def meta(partitions: int = 16, dedup: bool = False, limit: int = LIMIT, name: str = "q") -> ops.EntityMeta:
    return ops.EntityMeta(name, partitions, dedup, limit)


def partition_for(m: ServiceBusMessage, em: ops.EntityMeta, rr: int = 7) -> int:
    calls, where = ops.plan_send([m], em, rr)
    assert len(calls) == 1 and calls[0].partition == where[0]
    return where[0]


# ------------------------------------------------------------------------------ partitioning
def test_partition_of_is_crc32_mod_count() -> None:
    # 0xCBF43926 is the CRC-32 check value of "123456789"
    assert ops.partition_of("123456789", 2**32) == 0xCBF43926
    assert ops.partition_of("123456789", 16) == 0xCBF43926 % 16 == 6
    assert ops.partition_of("123456789", 7) == 5
    assert ops.partition_of("orders", 16) == 14
    assert ops.partition_of("ключ", 16) == 10  # keys are hashed as UTF-8
    assert ops.partition_of("anything", 1) == 0


@given(st.text(), st.integers(min_value=1, max_value=1024))
def test_partition_of_is_in_range_and_stable(key: str, count: int) -> None:
    p = ops.partition_of(key, count)
    assert 0 <= p < count
    assert p == binascii.crc32(key.encode()) % count
    assert p == ops.partition_of(key, count)


def test_session_id_pins_the_partition() -> None:
    em = meta(dedup=True)
    m = ServiceBusMessage("x", session_id="session-1", message_id="id-1")
    assert ops.message_key(m, em) == "session-1"
    assert partition_for(m, em) == ops.partition_of("session-1", 16) == 14


def test_partition_key_pins_the_partition() -> None:
    em = meta(dedup=True)
    m = ServiceBusMessage("x", partition_key="orders", message_id="id-1")
    assert ops.message_key(m, em) == "orders"
    assert partition_for(m, em) == ops.partition_of("orders", 16)


def test_message_id_pins_the_partition_only_with_duplicate_detection() -> None:
    m = ServiceBusMessage("x", message_id="123456789")
    assert ops.message_key(m, meta(dedup=True)) == "123456789"
    assert partition_for(m, meta(dedup=True), rr=3) == 6
    assert ops.message_key(m, meta(dedup=False)) is None
    assert partition_for(m, meta(dedup=False), rr=3) == 3


def test_unkeyed_messages_go_to_the_round_robin_partition() -> None:
    em = meta()
    msgs = [ServiceBusMessage(str(i)) for i in range(10)]
    for rr in (0, 5, 15):
        calls, where = ops.plan_send(msgs, em, rr)
        assert where == [rr] * 10
        assert len(calls) == 1 and calls[0].partition == rr
        assert calls[0].args[0] == 10


def test_plan_send_groups_by_partition_and_keeps_order() -> None:
    em = meta(partitions=16)
    msgs = [
        ServiceBusMessage("a", partition_key="orders"),  # 14
        ServiceBusMessage("b"),  # round robin: 2
        ServiceBusMessage("c", session_id="123456789"),  # 6
        ServiceBusMessage("d", partition_key="orders"),  # 14
    ]
    calls, where = ops.plan_send(msgs, em, 2)
    assert where == [14, 2, 6, 14]
    by_p = {c.partition: c for c in calls}
    assert set(by_p) == {14, 2, 6}
    assert by_p[14].args == (2, 1, msgs[0].encoded(), msgs[3].encoded())


def test_plan_send_arguments_match_send_lua() -> None:
    """send.lua: ARGV[1] n, ARGV[2] w, then per message (w = 4) message_id ('' without dedup),
    ttl_ms, scheduled_ms, blob, or (w = 1, every message with the defaults) the blob alone."""
    m1 = ServiceBusMessage("a", message_id="m1", time_to_live=2.5)
    m2 = ServiceBusMessage("b", message_id="m2")
    for dedup in (False, True):
        em = meta(partitions=1, dedup=dedup)
        calls, _ = ops.plan_send([m1, m2], em, 0)
        (c,) = calls
        assert c.script is scripts.load("send")
        assert c.keys == keys.partition_keys("q", 0)[:1]  # cfg alone: send.lua names the others
        ids = ("m1", "m2") if dedup else ("", "")
        assert c.args == (2, 4, ids[0], 2500, 0, m1.encoded(), ids[1], 0, 0, m2.encoded())
        (c,), _ = ops.plan_send([m2, m2], em, 0)
        if dedup:  # the message ids are needed: the full form
            assert c.args == (2, 4, "m2", 0, 0, m2.encoded(), "m2", 0, 0, m2.encoded())
        else:
            assert c.args == (2, 1, m2.encoded(), m2.encoded())


def test_plan_send_schedule_time() -> None:
    m = ServiceBusMessage("a")
    (c,), _ = ops.plan_send([m], meta(partitions=1), 0, sched_ms=1_900_000_000_000)
    assert c.args == (1, 4, "", 0, 1_900_000_000_000, m.encoded())


def test_send_result_gives_global_sequence_numbers() -> None:
    (c,), _ = ops.plan_send([ServiceBusMessage("a"), ServiceBusMessage("b")], meta(), 5)
    assert ops.send_result(c, [123, b"7", b"0"]) == [(5 << PARTITION_SHIFT) | 7, 0]
    p, local = ops.split_sequence_number(ops.send_result(c, [0, 9, 10])[0], 16)
    assert (p, local) == (5, 9)
    # {now, first}: every message stored, consecutive seqs (send.lua's short reply)
    assert ops.send_result(c, [123, 40]) == [(5 << PARTITION_SHIFT) | 40, (5 << PARTITION_SHIFT) | 41]
    (one,), _ = ops.plan_send([ServiceBusMessage("a")], meta(), 5)
    assert ops.send_result(one, [123, 0]) == [0]  # one message: the reply is always its own seq


def test_oversized_message_is_rejected_before_any_call() -> None:
    em = meta(limit=1000)
    small = ServiceBusMessage(b"x" * 10, partition_key="a")
    big = ServiceBusMessage(b"x" * 1000, partition_key="b")
    with pytest.raises(MessageSizeExceededError) as ei:
        ops.plan_send([small, big], em, 0)
    assert isinstance(ei.value, ValueError)
    assert "1000" in str(ei.value)


def test_one_partitions_share_over_the_limit_is_rejected() -> None:
    em = meta(limit=1000)
    a = ServiceBusMessage(b"x" * 600, partition_key="k")
    b = ServiceBusMessage(b"y" * 600, partition_key="k")
    assert len(a.encoded()) < 1000
    with pytest.raises(MessageSizeExceededError):
        ops.plan_send([a, b], em, 0)
    # the same two messages on different partitions fit (each partition stores its own share)
    a2 = ServiceBusMessage(b"x" * 600, partition_key="123456789")  # partition 6
    b2 = ServiceBusMessage(b"y" * 600, partition_key="orders")  # partition 14
    calls, where = ops.plan_send([a2, b2], em, 0)
    assert sorted(c.partition for c in calls) == [6, 14]
    assert where == [6, 14]


def test_exact_limit_is_accepted() -> None:
    m = ServiceBusMessage(b"")
    overhead = len(m.encoded())
    fits = ServiceBusMessage(b"z" * (1000 - overhead - 100), message_id=m.message_id)
    size = len(fits.encoded())
    calls, _ = ops.plan_send([fits], meta(partitions=1, limit=size), 0)
    assert len(calls) == 1
    with pytest.raises(MessageSizeExceededError):
        ops.plan_send([fits], meta(partitions=1, limit=size - 1), 0)


def test_entity_meta_from_properties() -> None:
    p = build_queue(
        "q",
        enable_partitioning=True,
        partition_count=4,
        requires_duplicate_detection=True,
        max_message_size_in_kilobytes=512,
    )
    assert ops.EntityMeta.from_properties(p) == ops.EntityMeta("q", 4, True, 512 * 1024)


def test_as_messages() -> None:
    m = ServiceBusMessage("x")
    assert ops.as_messages(m) == [m]
    assert ops.as_messages([m, m]) == [m, m]
    assert ops.as_messages((m,)) == [m]
    batch = ServiceBusMessageBatch(10_000)
    batch.add_message(m)
    assert ops.as_messages(batch) == [m]
    for bad in ("text", b"x", None, 5, [m, "x"], {m}):
        with pytest.raises(InvalidArgumentError):
            ops.as_messages(bad)


# ------------------------------------------------------------------------------------ quotas
orders = st.integers(min_value=1, max_value=64).flatmap(lambda k: st.permutations(list(range(k))))


@given(st.integers(min_value=0, max_value=5000), orders)
def test_split_quota_spreads_exactly_n(n: int, order: list[int]) -> None:
    q = ops.split_quota(n, order)
    assert sum(q.values()) == n
    assert set(q) <= set(order)
    assert all(v > 0 for v in q.values())
    if q:
        assert max(q.values()) - min(q.values()) <= 1
    # the first partitions in order take the remainder
    shares = [q.get(p, 0) for p in order]
    assert shares == sorted(shares, reverse=True)


def test_split_quota_examples() -> None:
    assert ops.split_quota(1, [3, 4, 5]) == {3: 1}
    assert ops.split_quota(5, [2, 0, 1]) == {2: 5}  # small requests go to one partition
    assert ops.split_quota(100, list(range(16))) == {0: 100}  # MIN_SHARE each
    assert ops.split_quota(250, [5, 6, 7]) == {5: 125, 6: 125}
    assert ops.split_quota(1000, [0, 1]) == {0: 500, 1: 500}
    assert ops.split_quota(0, [0, 1]) == {}


@given(
    st.integers(min_value=0, max_value=5000),
    orders,
    st.data(),
)
def test_fill_quota_never_asks_for_more_than_wanted_or_available(n: int, order: list[int], data: Any) -> None:
    available = {p: data.draw(st.integers(min_value=0, max_value=200)) for p in order}
    q = ops.fill_quota(n, available, order)
    assert sum(q.values()) <= n
    assert all(0 < v <= available[p] for p, v in q.items())
    assert sum(q.values()) == min(n, sum(available.values()))
    # greedy in order: a partition is asked only when all before it were drained
    asked = [p for p in order if p in q]
    for p in order[: order.index(asked[-1])] if asked else []:
        assert q.get(p, 0) == available[p]


def test_fill_quota_ignores_partitions_not_in_order_and_negative_counts() -> None:
    assert ops.fill_quota(10, {1: 5, 2: 5, 9: 100}, [2, 1]) == {2: 5, 1: 5}
    assert ops.fill_quota(3, {1: -4, 2: 2}, [1, 2]) == {2: 2}
    assert ops.fill_quota(0, {1: 4}, [1]) == {}


# -------------------------------------------------------------------------- sequence numbers
@given(
    st.integers(min_value=1, max_value=1024).flatmap(
        lambda n: st.tuples(st.just(n), st.integers(0, n - 1), st.integers(1, (1 << PARTITION_SHIFT) - 1))
    )
)
def test_split_sequence_number_round_trip(case: tuple[int, int, int]) -> None:
    partitions, p, local = case
    assert ops.split_sequence_number((p << PARTITION_SHIFT) | local, partitions) == (p, local)


@pytest.mark.parametrize(
    ("seq", "partitions"),
    [
        ((16 << PARTITION_SHIFT) | 1, 16),  # partition 16 of a 16-partition queue
        ((1 << PARTITION_SHIFT) | 5, 1),  # partition 1 of an unpartitioned queue
        (1 << PARTITION_SHIFT, 4),  # local number 0
        (0, 1),
        (-1, 1),
        (True, 1),
        (1.0, 1),
        ("1", 1),
        (None, 1),
    ],
    ids=repr,
)
def test_split_sequence_number_rejects_foreign_numbers(seq: Any, partitions: int) -> None:
    with pytest.raises(InvalidArgumentError):
        ops.split_sequence_number(seq, partitions)


# ------------------------------------------------------------------------------ argument checks
def test_check_count_and_wait() -> None:
    assert ops.check_count("n", 1) == 1
    assert ops.check_count("n", ops.MAX_RECEIVE_COUNT) == ops.MAX_RECEIVE_COUNT
    for bad in (0, -1, ops.MAX_RECEIVE_COUNT + 1, True, 1.0, "1", None):
        with pytest.raises(InvalidArgumentError):
            ops.check_count("n", bad)
    assert ops.check_wait("w", None) is None
    assert ops.check_wait("w", 0) == 0.0
    assert ops.check_wait("w", 1.5) == 1.5
    for bad in (-0.1, True, "1", [1]):
        with pytest.raises(InvalidArgumentError):
            ops.check_wait("w", bad)


def test_codes() -> None:
    assert ops.group_code(None) == "m"
    assert ops.group_code(ServiceBusSubQueue.DEAD_LETTER) == "d"
    assert ops.mode_code(ServiceBusReceiveMode.PEEK_LOCK) == "L"
    assert ops.mode_code(ServiceBusReceiveMode.RECEIVE_AND_DELETE) == "D"
    nonces = {ops.new_nonce() for _ in range(1000)}
    assert len(nonces) == 1000
    assert all(len(n) == 16 and int(n, 16) >= 0 for n in nonces)


# ------------------------------------------------------------------ replies and settlement
def _fields(m: ServiceBusMessage, enq: int = 1000, exp: int = 0, extra: tuple[bytes, ...] = ()) -> list[Any]:
    return [b"b", m.encoded(), b"e", str(enq).encode(), b"x", str(exp).encode(), *extra]


def test_parse_received_builds_messages() -> None:
    m = ServiceBusMessage("hello", application_properties={"k": 1}, subject="s")
    blob = m.encoded()
    # receive.lua's reply: now, locked-until, more, then seq, delivery count, blob, enqueued, expires
    # (delivery count and expires as integer replies)
    reply = [5000, 65000, 0, b"3", 2, blob, b"4000", 9000, b"4", 1, blob, b"4100", 0]
    now, msgs = ops.parse_received(reply, "q", 2, "m", "ab" * 8, ServiceBusReceiveMode.PEEK_LOCK)
    assert now == 5000
    first, second = msgs
    assert first.sequence_number == (2 << PARTITION_SHIFT) | 3
    assert first.delivery_count == 1
    assert first.body_bytes == b"hello" and str(first) == "hello"
    assert first.sent_application_properties == {"k": 1} and first.subject == "s"
    assert first.message_id == m.message_id
    assert first.locked_until_utc is not None and first.lock_token is not None
    assert first.expires_at_utc is not None and second.expires_at_utc is None
    assert first.time_to_live is not None and first.time_to_live.total_seconds() == 5
    assert first.lock_token != second.lock_token

    _, rad = ops.parse_received(reply, "q", 2, "m", "ab" * 8, ServiceBusReceiveMode.RECEIVE_AND_DELETE)
    assert rad[0].lock_token is None and rad[0].locked_until_utc is None


def test_parse_received_dead_letter_group_reads_reason() -> None:
    blob = ServiceBusMessage("x").encoded()
    reply = [5000, 65000, 0, b"1", 3, blob, b"4000", 0, b"why", b"details", b"2", 1, blob, b"4000", 0, b"", b""]
    _, (first, second) = ops.parse_received(reply, "q", 0, "d", "ab" * 8, ServiceBusReceiveMode.PEEK_LOCK)
    assert (first.dead_letter_reason, first.dead_letter_error_description) == ("why", "details")
    assert (second.dead_letter_reason, second.dead_letter_error_description) == (None, None)


def test_parse_peeked_messages_cannot_be_settled() -> None:
    blob = ServiceBusMessage("x").encoded()
    reply = [5000, 0, b"7", 0, 1, blob, 4000, 0]  # now, resume, then seq, delivery count, state, blob, ...
    (p,) = ops.parse_peeked(reply, "q", 0, "m")
    assert p.state is ServiceBusMessageState.DEFERRED
    assert p.sequence_number == 7
    with pytest.raises(InvalidOperationError):
        ops.settle_groups([p], "q", "m", "complete")


def _received(
    partition: int,
    seq: int,
    entity: str = "q",
    group: str = "m",
    mode: ServiceBusReceiveMode = ServiceBusReceiveMode.PEEK_LOCK,
) -> ServiceBusReceivedMessage:
    return ServiceBusReceivedMessage(
        ServiceBusMessage("x").encoded(),
        entity_name=entity,
        partition_id=partition,
        group=group,
        local_seq=seq,
        delivery_count=1,
        enqueued_ms=1,
        expires_ms=0,
        locked_until_ms=10**13,
        nonce="00" * 8 if mode is ServiceBusReceiveMode.PEEK_LOCK else "",
        receive_mode=mode,
    )


def test_settle_groups_and_lock_args() -> None:
    a, b, c = _received(0, 1), _received(3, 2), _received(0, 5)
    groups = ops.settle_groups([a, b, c], "q", "m", "complete")
    assert groups == {0: [a, c], 3: [b]}
    # complete.lua: ARGV[1] group (comes first), ARGV[2] n, ARGV[3] the shared nonce, then n seqs
    assert ops.lock_args(groups[0]) == [2, "00" * 8, 1, 5]
    # locks from different receive calls: '' and then n pairs (seq, nonce)
    d = _received(0, 7)
    d.lock_ref = d.lock_ref._replace(nonce="11" * 8)
    assert ops.lock_args([a, d, c]) == [3, "", 1, "00" * 8, 7, "11" * 8, 5, "00" * 8]


@pytest.mark.parametrize(
    ("message", "error"),
    [
        (_received(0, 1, entity="other"), InvalidOperationError),
        (_received(0, 1, group="d"), InvalidOperationError),
        (_received(0, 1, mode=ServiceBusReceiveMode.RECEIVE_AND_DELETE), InvalidOperationError),
        (ServiceBusMessage("not received"), InvalidArgumentError),
    ],
    ids=["other entity", "dead-letter message on main receiver", "receive-and-delete", "not received"],
)
def test_settle_groups_rejects(message: Any, error: type[Exception]) -> None:
    with pytest.raises(error):
        ops.settle_groups([message], "q", "m", "complete")


def test_settle_groups_rejects_settled_and_duplicates() -> None:
    m = _received(0, 1)
    with pytest.raises(InvalidArgumentError):
        ops.settle_groups([m, m], "q", "m", "complete")
    m.settled = True
    with pytest.raises(MessageAlreadySettled):
        ops.settle_groups([m], "q", "m", "complete")


def test_config_and_delete_commands_cover_every_partition() -> None:
    p = build_queue("q", enable_partitioning=True, partition_count=3)
    cfg = ops.config_commands(p)
    # each partition's cfg, then its transfer queue's (the forwarding outbox and transfer dead-letter)
    owners = [keys.partition_keys("q", i) for i in range(3)]
    assert [c[1] for c in cfg] == [k for ks in owners for k in (ks[0], keys.transfer_keys(ks)[0])]
    assert all(c[0] == "HSET" and c[1].endswith(":cfg") for c in cfg)
    dels = ops.delete_commands("q", 3)
    assert [c[1:] for c in dels] == [(*ks, *keys.transfer_keys(ks)) for ks in owners]
