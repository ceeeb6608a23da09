"""Reading a partition's log with plain commands: peek's reply without a script per page.

``peek.lua`` reads log entries with XRANGE inside a script and adds, per message, its delivery
count (from its lock record, or the dc hash) and its state (deferred, scheduled). Redis spends
several times the work of a plain XRANGE on that (the script turns each entry into Lua tables and
back). A read-only bulk reader (the Spark source) mostly reads partitions where none of that
applies: no message is locked, deferred, scheduled or was delivered before. So a page is read as
one MULTI of the XRANGE and the sizes of those four structures (:func:`page_commands`); when they
are all empty the log entries are the whole answer (:func:`parse_page`), else one more MULTI reads
the page's messages' lock records, counts and states (:func:`state_commands`,
:func:`with_state`). The result is a :class:`peek.Fields`.

The lock record's format belongs to the Lua scripts (includes/messages.lua, ``lock_record``):
:func:`lock_delivery_count` is the one place here that reads it.
"""

from __future__ import annotations

from typing import Any

from ..exceptions import MessagingEntityNotFoundError
from .keys import entity_keys
from .protocol.base import Group, text_or_none
from .protocol.peek import Fields

# positions in entity_keys (keys.PARTITION_KEY_NAMES)
_CFG, _SCHED = 0, 8
_GROUP = {Group.MAIN: 2, Group.DEAD_LETTER: 11}  # the group's log; ready, locked, lk, dc, deferred follow
_LOG, _LK, _DC, _DEFERRED = 0, 3, 4, 5


class Keys:
    """The keys of one partition's group that a log read touches."""

    def __init__(self, entity: str, partition: int, group: Group) -> None:
        keys = entity_keys(entity, partition)
        g = _GROUP[group]
        self.main = group == Group.MAIN
        self.cfg = keys[_CFG]
        self.log = keys[g + _LOG]
        self.lk = keys[g + _LK]
        self.dc = keys[g + _DC]
        self.deferred = keys[g + _DEFERRED]
        self.sched = keys[_SCHED]


def page_commands(k: Keys, first: int, count: int) -> list[tuple[Any, ...]]:
    """One page: up to `count` log entries from partition-local seq `first` on, whether the entity
    exists, and the sizes of the lock, delivery-count, deferred and (main queue) schedule sets.
    To be read in one MULTI (Transport.read_many), the page and the sizes at the same moment."""
    cmds: list[tuple[Any, ...]] = [
        ("HGET", k.cfg, "status"),
        ("XRANGE", k.log, first, "+", "COUNT", count),
        ("HLEN", k.lk),
        ("HLEN", k.dc),
        ("ZCARD", k.deferred),
    ]
    if k.main:
        cmds.append(("ZCARD", k.sched))
    return cmds


def parse_page(replies: list[Any], entity: str, group: Group) -> tuple[Fields, bool]:
    """The page of :func:`page_commands`' replies as columns (delivery count 0, state active), and
    whether some message of the partition may have another count or state: then
    :func:`state_commands` and :func:`with_state` complete it.

    Raises:
        MessagingEntityNotFoundError: the entity does not exist (any more).
        ValueError: a log entry that sbredis did not write.
    """
    if replies[0] is None:
        raise MessagingEntityNotFoundError(f"The messaging entity '{entity}' was not found.")
    entries = replies[1]
    dlq = group == Group.DEAD_LETTER
    n = len(entries)
    none: list[str | None] = [None] * n
    try:
        # the entry's fields in the order every writer gives them (b blob, e enqueued ms, x expires
        # ms [, r reason, rd description]), read by position as peek.lua's put() reads them
        values = [e[1] for e in entries]
        if any(v[0] != b"b" or v[2] != b"e" or v[4] != b"x" for v in values):
            raise ValueError
        seqs = [int(e[0][:-2]) for e in entries]  # '<seq>-0'
        raw = [v[1] for v in values]
        enq = [int(v[3]) for v in values]
        exp = [int(v[5]) for v in values]
        reason = [text_or_none(v[7]) for v in values] if dlq else none
        desc = [text_or_none(v[9]) for v in values] if dlq else none
    except (IndexError, ValueError, TypeError):
        raise ValueError(f"a log entry of '{entity}' was not written by sbredis") from None
    fields = Fields(seqs, [0] * n, [0] * n, raw, enq, exp, reason, desc)
    return fields, n > 0 and any(int(v) for v in replies[2:])


def state_commands(k: Keys, seqs: list[int]) -> list[tuple[Any, ...]]:
    """The lock records, delivery counts, deferred and (main queue) scheduled marks of `seqs`, to be
    read in one MULTI."""
    cmds: list[tuple[Any, ...]] = [("HMGET", k.lk, *seqs), ("HMGET", k.dc, *seqs), ("ZMSCORE", k.deferred, *seqs)]
    if k.main:
        cmds.append(("ZMSCORE", k.sched, *seqs))
    return cmds


def lock_delivery_count(record: bytes | str) -> int:
    """The delivery count a lock record carries (includes/messages.lua ``lock_record``:
    ``nonce|locked-until|home|expires|size|delivery count``, or for a session message and a record
    written before records carried their lock's end ``nonce|home|expires|size|delivery count
    [|session id]``)."""
    text = record.decode() if isinstance(record, bytes) else record
    parts = text.split("|", 6)
    return int(parts[5] if parts[1].isdigit() else parts[4])


def with_state(f: Fields, replies: list[Any]) -> Fields:
    """`f` with the delivery counts and states of :func:`state_commands`' replies, as peek.lua
    gives them: the locked delivery's count, else the stored one; deferred before scheduled."""
    locks, counts, deferred = replies[0], replies[1], replies[2]
    sched = replies[3] if len(replies) > 3 else [None] * len(locks)
    dc = []
    for rec, c in zip(locks, counts, strict=True):
        d = lock_delivery_count(rec) if rec is not None else int(c or 0)
        dc.append(max(0, d - 1))  # as peek.parse: the deliveries before the last
    state = [1 if d is not None else 2 if s is not None else 0 for d, s in zip(deferred, sched, strict=True)]
    return Fields(
        f.local_seq,
        dc,
        state,
        f.raw,
        f.enqueued_ms,
        f.expires_ms,
        f.dead_letter_reason,
        f.dead_letter_error_description,
    )
