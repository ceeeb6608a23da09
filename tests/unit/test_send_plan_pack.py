"""How concurrent sends coalesced under one key are grouped into script calls (send_plan.pack).

Each group is one send call, so it must fit the entity's batch limits: at most max_bytes of
encoded messages and at most max_count messages. A group that fits exactly is not split (every
split is one more round trip), and either limit alone splits it.
"""

from __future__ import annotations

from sbredis import ServiceBusMessage
from sbredis._core.send_plan import pack


def entries(*counts: int, body: bytes = b"x" * 100) -> list[list[ServiceBusMessage]]:
    return [[ServiceBusMessage(body) for _ in range(n)] for n in counts]


def size(msgs: list[ServiceBusMessage]) -> int:
    return sum(len(m.encoded()) for m in msgs)


def test_a_group_filled_exactly_to_the_byte_limit_is_one_call() -> None:
    e = entries(1, 1, 1)
    exact = sum(size(m) for m in e)
    assert pack(e, exact, 1000) == [[0, 1, 2]]
    assert pack(e, exact - 1, 1000) == [[0, 1], [2]]


def test_a_group_filled_exactly_to_the_count_limit_is_one_call() -> None:
    e = entries(2, 2, 2)
    assert pack(e, 1 << 30, 6) == [[0, 1, 2]]
    assert pack(e, 1 << 30, 5) == [[0, 1], [2]]


def test_either_limit_alone_splits() -> None:
    e = entries(1, 1, 1, 1)
    pairs = max(size(e[0]) + size(e[1]), size(e[2]) + size(e[3]))  # sizes differ by a few bytes
    assert pack(e, pairs, 1000) == [[0, 1], [2, 3]]  # bytes only
    assert pack(e, 1 << 30, 2) == [[0, 1], [2, 3]]  # count only


def test_after_a_split_the_next_group_counts_from_zero() -> None:
    e = entries(1, 1, 1, 1, 1, 1)
    assert pack(e, max(sum(size(m) for m in e[:3]), sum(size(m) for m in e[3:])), 1000) == [[0, 1, 2], [3, 4, 5]]
    assert pack(e, 1 << 30, 3) == [[0, 1, 2], [3, 4, 5]]


def test_an_entry_larger_than_the_limit_goes_alone() -> None:
    e = entries(1, 5, 1)
    assert pack(e, size(e[0]) + size(e[2]), 1000) == [[0], [1], [2]]
    assert pack(entries(3), 1, 1) == [[0]]  # one caller's send is never split here
