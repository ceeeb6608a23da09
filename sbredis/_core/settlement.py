"""Settlement checks and grouping: which received messages a receiver may settle, by partition and
in chunks a script call takes; lock nonces; recording a settlement reply on its messages."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, NoReturn

from .._enums import ServiceBusReceiveMode
from .._message import ServiceBusReceivedMessage
from ..exceptions import InvalidArgumentError, InvalidOperationError, MessageAlreadySettled
from .protocol import SETTLE

# Messages per settlement script call. An abandon that dead-letters at the maximum delivery count
# costs up to ~40 us a message on a loaded server; 250 keeps such a call near 20 ms (1,000 reached
# 50-85 ms), and the chunks of one settlement go in one pipelined round trip.
SETTLE_CHUNK = 250
MAX_ABANDON_DELAY = 366 * 86400.0  # seconds: a retry delay past a year is a unit mistake


def new_nonce() -> str:
    return os.urandom(8).hex()


def abandon_extra(delay: Any) -> tuple[Any, ...]:
    """The abandon script's arguments after the messages for a delay in seconds (None or 0: none).

    Raises:
        InvalidArgumentError: not a number of seconds between 0 and MAX_ABANDON_DELAY.
    """
    if delay is None:
        return ("0",)
    if isinstance(delay, bool) or not isinstance(delay, (int, float)) or not 0 <= delay <= MAX_ABANDON_DELAY:
        raise InvalidArgumentError(f"delay must be a number of seconds between 0 and {MAX_ABANDON_DELAY:.0f}")
    ms = int(delay * 1000)
    return ("0", ms) if ms > 0 else ("0",)


def settle_groups(
    messages: Sequence[Any], entity: str, group: str, what: str
) -> dict[int, list[ServiceBusReceivedMessage]]:
    """Check messages can be settled by this receiver and group them by partition.

    Raises:
        InvalidArgumentError: not a received message.
        InvalidOperationError: the message came from another entity or subqueue, or was peeked.
        MessageAlreadySettled: settled before.
        InvalidOperationError: received in RECEIVE_AND_DELETE mode (a ValueError, as in the SDK).
    """
    out: dict[int, list[ServiceBusReceivedMessage]] = {}
    count = 0
    cls = ServiceBusReceivedMessage
    checked = None  # the last lock reference found right: one receive call's messages share it
    for m in messages:
        if not isinstance(m, cls) or m.settled:
            _refuse_settle(messages, entity, group, what)
        ref = m.lock_ref
        if ref is not checked:
            if ref.entity != entity or ref.group != group:
                _refuse_settle(messages, entity, group, what)
            checked = ref
        part = out.get(m.partition_id)
        if part is None:
            out[m.partition_id] = [m]
        else:
            part.append(m)
        count += 1
    if len({id(m) for part in out.values() for m in part}) != count:
        _refuse_settle(messages, entity, group, what)
    return out


def by_partition(messages: Sequence[ServiceBusReceivedMessage]) -> dict[int, list[ServiceBusReceivedMessage]]:
    """Messages grouped by partition, each group in the given order."""
    first = messages[0].partition_id
    for m in messages:  # the usual batch: one receive call's messages, all from one partition
        if m.partition_id != first:
            break
    else:
        return {first: list(messages)}
    out: dict[int, list[ServiceBusReceivedMessage]] = {}
    for m in messages:
        out.setdefault(m.partition_id, []).append(m)
    return out


def _refuse_settle(messages: Sequence[Any], entity: str, group: str, what: str) -> NoReturn:
    """settle_groups found a message it refuses: raise the error for the first one, in order."""
    seen: set[int] = set()
    for m in messages:
        if not isinstance(m, ServiceBusReceivedMessage):
            raise InvalidArgumentError(f"{what} takes received messages, not {type(m).__name__}")
        ref = m.lock_ref
        if ref.entity != entity or ref.group != group:
            raise InvalidOperationError(
                f"the message was received from '{ref.entity}' ({'dead-letter' if ref.group == 'd' else 'main'} "
                f"queue), not from this receiver's entity"
            )
        if m.settled:
            if ref.receive_mode is ServiceBusReceiveMode.RECEIVE_AND_DELETE:
                # a ValueError, as the SDK raises: the mode settles every message on receipt
                raise InvalidOperationError("The operation is not supported in RECEIVE_AND_DELETE receive mode.")
            if not ref.nonce:
                raise InvalidOperationError("A peeked message holds no lock and cannot be settled.")
            raise MessageAlreadySettled("The message has been settled already.")
        if id(m) in seen:
            raise InvalidArgumentError("the same message appears twice")
        seen.add(id(m))
    raise AssertionError("unreachable: settle_groups refused nothing")


def chunks(msgs: Sequence[ServiceBusReceivedMessage]) -> list[Sequence[ServiceBusReceivedMessage]]:
    return [msgs[i : i + SETTLE_CHUNK] for i in range(0, len(msgs), SETTLE_CHUNK)]


def apply_settled(
    name: str, msgs: Sequence[ServiceBusReceivedMessage], reply: list[Any], status: dict[int, Any]
) -> None:
    """Record a settlement script's reply on its messages; the lost ones go into `status`
    (id(message) -> LOCK_LOST)."""
    SETTLE[name].apply(msgs, reply, status)
