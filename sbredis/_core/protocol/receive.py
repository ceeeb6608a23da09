"""receive.lua: hand out up to `count` available messages of one partition."""

from __future__ import annotations

from typing import Any

from ..._enums import ServiceBusMessageState, ServiceBusReceiveMode
from ..._message import LockRef, ServiceBusReceivedMessage
from ..keys import SUBSCRIPTIONS, TRANSFER, journal_key
from .base import SWEEP_LIMIT, Call, Group, Mode, cfg_call, text_or_none
from .peek import Fields

NAME = "receive"
ARGV = ("group", "mode", "count", "lock nonce", "sweep limit")


JOURNAL = 2  # reply[2] of a receive that found its topic partition's fan-out journal pending


def call(entity: str, partition: int, group: Group, mode: Mode, count: int, nonce: str) -> Call:
    c = cfg_call(NAME, entity, partition, (group, mode, count, nonce, SWEEP_LIMIT))
    topic, sep, _ = entity.partition(SUBSCRIPTIONS)
    if sep and not entity.endswith(TRANSFER):  # a subscription: its topic partition's journal too
        return Call(c.script, (*c.keys, journal_key(topic, partition)), c.args, partition)
    return c


def journal_pending(reply: list[Any]) -> bool:
    """A subscription's receive found a fan-out unfinished and took nothing: finish it
    (finish_journal), then receive again."""
    return int(reply[2]) == JOURNAL


def more(reply: list[Any]) -> bool:
    """Whether the call stopped on its expiry budget with expired messages left: another call at
    once may find a live message behind them (a receive, session_receive reply)."""
    return int(reply[2]) == 1


def parse(
    reply: list[Any],
    entity: str,
    partition: int,
    group: str,
    nonce: str,
    mode: ServiceBusReceiveMode,
    state: ServiceBusMessageState = ServiceBusMessageState.ACTIVE,
) -> tuple[int, list[ServiceBusReceivedMessage]]:
    """(server now ms, messages) from a receive, receive_deferred or session_receive reply (its
    delivery counts and expiries are integer replies already). The stored count includes this
    delivery; a message's delivery_count, as the SDK's, counts the ones before it (0 at first)."""
    now = int(reply[0])
    locked = int(reply[1]) if mode is ServiceBusReceiveMode.PEEK_LOCK else 0
    if not locked:
        nonce = ""
    ref = LockRef(entity, partition, group, nonce, mode)  # one per call, shared by its messages
    settled = mode is ServiceBusReceiveMode.RECEIVE_AND_DELETE
    cls = ServiceBusReceivedMessage
    new, fill = cls.__new__, cls.fill  # no constructor call frame: this runs per message
    out = []
    fields = iter(reply)
    next(fields), next(fields), next(fields)
    if group != Group.DEAD_LETTER:
        for seq, dc, blob, enq, exp in zip(fields, fields, fields, fields, fields, strict=True):
            m = new(cls)
            fill(m, blob, ref, int(seq), dc - 1, int(enq), exp, locked, settled, state)
            out.append(m)
        return now, out
    for seq, dc, blob, enq, exp, reason, description in zip(*[fields] * 7, strict=True):
        m = new(cls)
        fill(m, blob, ref, int(seq), dc - 1, int(enq), exp, locked, settled, state)
        m.dead_letter_reason = text_or_none(reason)
        m.dead_letter_error_description = text_or_none(description)
        out.append(m)
    return now, out


def parse_fields(reply: list[Any], group: str) -> tuple[int, Fields]:
    """(locked until ms, 0 when not locked; the messages as columns) from a receive reply, for
    readers that need no message objects (the Spark source): `parse` without a message each."""
    dlq = group == Group.DEAD_LETTER
    stride = 7 if dlq else 5
    n = (len(reply) - 3) // stride
    none: list[str | None] = [None] * n
    return (
        int(reply[1]),
        Fields(
            [int(v) for v in reply[3::stride]],
            [dc - 1 for dc in reply[4::stride]],  # as parse: the deliveries before this one
            [int(ServiceBusMessageState.ACTIVE)] * n,
            reply[5::stride],
            [int(v) for v in reply[6::stride]],
            reply[7::stride],
            [text_or_none(v) for v in reply[8::stride]] if dlq else none,
            [text_or_none(v) for v in reply[9::stride]] if dlq else none,
        ),
    )
