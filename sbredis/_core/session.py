"""Sans-IO session operations: which partition, which script, which KEYS/ARGV, and what the reply means.

A session lives in the partition its session_id hashes to (session_id is the partition key). A
session receiver holds the session's lock (nonce + locked-until in the partition, server clock);
the messages it receives are locked with the same nonce and until, so the settlement scripts'
message-lock check covers the session lock (lua/includes/sessions.lua has the design).
"""

from __future__ import annotations

from typing import Any

from .._enums import ServiceBusSessionFilter
from .._message import utf8_text
from ..exceptions import InvalidArgumentError, InvalidOperationError
from .protocol import session_list
from .protocol.base import Call
from .send_plan import partition_of

MAX_SESSION_ID = 128


def check_session_id(session_id: Any) -> str | ServiceBusSessionFilter:
    """A session_id for a receiver: a non-empty str of at most 128 characters, or NEXT_AVAILABLE_SESSION.

    Raises:
        InvalidArgumentError: anything else.
    """
    if isinstance(session_id, ServiceBusSessionFilter):
        return session_id
    if not isinstance(session_id, str):
        raise InvalidArgumentError(
            f"session_id must be a str or NEXT_AVAILABLE_SESSION, not {type(session_id).__name__}"
        )
    if not session_id or len(session_id) > MAX_SESSION_ID:
        raise InvalidArgumentError(f"session_id must be 1 to {MAX_SESSION_ID} characters")
    return utf8_text("session_id", session_id)


def session_partition(session_id: str, partitions: int) -> int:
    return partition_of(session_id, partitions)


def state_bytes(state: Any) -> bytes | None:
    """set_state's argument as stored: bytes, str (UTF-8) or None (no state).

    Raises:
        InvalidArgumentError: another type, or text UTF-8 cannot carry.
    """
    if state is None:
        return None
    if isinstance(state, str):
        return utf8_text("session state", state).encode()
    if isinstance(state, (bytes, bytearray, memoryview)):
        return bytes(state)
    raise InvalidArgumentError(f"session state must be bytes, str or None, not {type(state).__name__}")


def list_calls(entity: str, partitions: int, after_ms: int | None = None) -> list[Call]:
    return [session_list.call(entity, p, after_ms=after_ms) for p in range(partitions)]


def refuse_plain_receive(entity: str) -> InvalidOperationError:
    return InvalidOperationError(
        f"'{entity}' requires sessions: receive with a session receiver (session_id=<id> or NEXT_AVAILABLE_SESSION)."
    )


def refuse_session_receiver(entity: str) -> InvalidOperationError:
    return InvalidOperationError(
        f"'{entity}' does not require sessions: a session receiver cannot be used on it (omit session_id)."
    )
