"""Client-side checks of arguments, before anything is sent (InvalidArgumentError and friends)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from .._message import (
    PARTITION_SHIFT,
    ServiceBusMessage,
    ServiceBusMessageBatch,
    ServiceBusReceivedMessage,
    as_message,
    check_properties,
    utf8_text,
)
from ..amqp import AmqpAnnotatedMessage
from ..exceptions import InvalidArgumentError, InvalidOperationError

LOCAL_MASK = (1 << PARTITION_SHIFT) - 1
MAX_RECEIVE_COUNT = 5000
# Sequence numbers per receive_deferred_messages / cancel_scheduled_messages call: each partition's
# numbers are one atomic script call, whose work grows with them (docs/keyspace.md, Per-call caps).
MAX_SEQUENCE_NUMBERS = 1000
# A dead-letter reason or description (the .NET SDK's MaxDeadLetterReasonLength): both are stored
# with the message and shown by every peek of it.
MAX_DEAD_LETTER_TEXT = 4096


def as_messages(message: Any) -> list[ServiceBusMessage]:
    """One message, a list of them or a batch, as a list; raises InvalidArgumentError otherwise.
    A message may be an AmqpAnnotatedMessage or a dict of ServiceBusMessage's arguments.

    Application properties are checked again here, in the caller's own call: the caller may have
    changed a message's dict in place since it was set, and its error must stay its own (concurrent
    sends share script calls)."""
    if isinstance(message, ServiceBusMessage):
        messages = [message]
    elif isinstance(message, ServiceBusMessageBatch):
        messages = list(message)
    elif isinstance(message, (list, tuple)):
        messages = [m if isinstance(m, ServiceBusMessage) else as_message(m) for m in message]
    elif isinstance(message, (AmqpAnnotatedMessage, Mapping)) or hasattr(message, "keys"):
        messages = [as_message(message)]
    else:
        raise InvalidArgumentError(
            f"send_messages takes a ServiceBusMessage, a list of them or a batch, not {type(message).__name__}"
        )
    for m in messages:
        if m.application_properties:
            check_properties(m.application_properties)
        if isinstance(m, ServiceBusReceivedMessage) and not m.ttl_ms:
            m.ttl_ms = m.sent_ttl_ms()
    return messages


def check_session_ids(messages: Iterable[ServiceBusMessage], entity: str) -> None:
    """Raises InvalidOperationError when a message for a session entity has no session_id."""
    for m in messages:
        if not m.session_id:
            raise InvalidOperationError(
                f"'{entity}' requires sessions: every message sent to it needs a session_id (nothing was stored)."
            )


def check_count(name: str, n: Any, upper: int = MAX_RECEIVE_COUNT) -> int:
    if isinstance(n, bool) or not isinstance(n, int):
        raise InvalidArgumentError(f"{name} must be an int, not {type(n).__name__}")
    if not 1 <= n <= upper:
        raise InvalidArgumentError(f"{name} must be between 1 and {upper}")
    return n


def check_wait(name: str, value: Any) -> float | None:
    """A wait or timeout in seconds (None: unset). NaN and infinity are refused: NaN compares false
    to every deadline, so a wait of NaN would never end."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidArgumentError(f"{name} must be a number of seconds")
    if not math.isfinite(value):
        raise InvalidArgumentError(f"{name} must be a finite number of seconds")
    if value < 0:
        raise InvalidArgumentError(f"{name} must not be negative")
    return float(value)


def check_timeout(value: Any) -> float | None:
    """A ``timeout=`` the SDK refuses unless above 0 (receive_deferred_messages, peek_messages,
    renew_message_lock, the session's state and lock calls): a ValueError, as the SDK's."""
    seconds = check_wait("timeout", value)
    if seconds is not None and seconds <= 0:
        raise InvalidArgumentError("timeout must be greater than 0")
    return seconds


def sequence_numbers(value: Any) -> list[int]:
    """One sequence number or an iterable of them, as a list (each checked by split_sequence_number).

    Raises:
        InvalidArgumentError: neither an int nor an iterable.
    """
    if isinstance(value, int) and not isinstance(value, bool):
        return [value]
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise InvalidArgumentError(f"sequence numbers must be an int or iterable of ints, not {type(value).__name__}")
    seqs = list(value)
    if len(seqs) > MAX_SEQUENCE_NUMBERS:
        raise InvalidArgumentError(f"at most {MAX_SEQUENCE_NUMBERS} sequence numbers a call, not {len(seqs)}")
    return seqs


def dead_letter_text(name: str, value: Any) -> str:
    """A dead-letter reason or error description: None (as "") or text UTF-8 can carry, at most
    MAX_DEAD_LETTER_TEXT characters.

    Raises:
        InvalidArgumentError: not a str, too long, or holding a lone surrogate.
    """
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InvalidArgumentError(f"{name} must be a str")
    if len(value) > MAX_DEAD_LETTER_TEXT:
        raise InvalidArgumentError(f"{name} is longer than {MAX_DEAD_LETTER_TEXT} characters")
    return utf8_text(name, value)


def split_sequence_number(seq: Any, partitions: int) -> tuple[int, int]:
    """(partition, local seq) of a global sequence number."""
    if isinstance(seq, bool) or not isinstance(seq, int) or seq <= 0:
        raise InvalidArgumentError("sequence numbers are positive ints")
    p, local = seq >> PARTITION_SHIFT, seq & LOCAL_MASK
    if p >= partitions or local == 0:
        raise InvalidArgumentError(f"sequence number {seq} does not belong to this entity")
    return p, local
