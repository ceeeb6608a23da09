"""Sans-IO session operations: which partition, which script, which KEYS/ARGV, and what the reply means.

A session lives in the partition its session_id hashes to (session_id is the partition key). A
session receiver holds the session's lock (nonce + locked-until in the partition, server clock);
the messages it receives are locked with the same nonce and until, so the settlement scripts'
message-lock check covers the session lock (lua/includes/sessions.lua has the design).
"""

from __future__ import annotations

from typing import Any

from .._enums import ServiceBusSessionFilter
from ..exceptions import InvalidArgumentError, InvalidOperationError
from .ops import SWEEP_LIMIT, Call, call, partition_of

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
    return session_id


def session_partition(session_id: str, partitions: int) -> int:
    return partition_of(session_id, partitions)


def lock_call(entity: str, partition: int, session_id: str, nonce: str) -> Call:
    """Lock `session_id` ('' for the next available session of the partition)."""
    return call("session_lock", entity, partition, session_id, nonce, SWEEP_LIMIT)


def parse_lock(reply: list[Any]) -> tuple[int, int, str | None]:
    """(server now ms, locked-until ms, session id) of a session_lock reply; (now, 0, None) when
    no session was available."""
    now, until, sid = int(reply[0]), int(reply[1]), reply[2]
    if not until:
        return now, 0, None
    return now, until, sid.decode() if isinstance(sid, bytes) else str(sid)


def receive_call(entity: str, partition: int, session_id: str, mode: str, count: int, nonce: str) -> Call:
    return call("session_receive", entity, partition, session_id, mode, count, nonce, SWEEP_LIMIT)


def renew_call(entity: str, partition: int, session_id: str, nonce: str) -> Call:
    return call("session_renew", entity, partition, session_id, nonce)


def release_call(entity: str, partition: int, session_id: str, nonce: str, unhanded: list[int]) -> Call:
    """Let go of the session; `unhanded`: local seqs fetched ahead and never handed out."""
    return call("session_release", entity, partition, session_id, nonce, len(unhanded), *unhanded)


def state_bytes(state: Any) -> bytes | None:
    """set_state's argument as stored: bytes, str (UTF-8) or None (no state).

    Raises:
        InvalidArgumentError: another type.
    """
    if state is None:
        return None
    if isinstance(state, str):
        return state.encode()
    if isinstance(state, (bytes, bytearray, memoryview)):
        return bytes(state)
    raise InvalidArgumentError(f"session state must be bytes, str or None, not {type(state).__name__}")


def get_state_call(entity: str, partition: int, session_id: str, nonce: str) -> Call:
    return call("session_state", entity, partition, "get", session_id, nonce)


def count_call(entity: str, partition: int, session_id: str, nonce: str) -> Call:
    """The number of the session's available messages (the caller holds the session)."""
    return call("session_state", entity, partition, "count", session_id, nonce)


def set_state_call(entity: str, partition: int, session_id: str, nonce: str, state: bytes | None) -> Call:
    if state is None:
        return call("session_state", entity, partition, "del", session_id, nonce)
    return call("session_state", entity, partition, "set", session_id, nonce, state)


def list_calls(entity: str, partitions: int) -> list[Call]:
    return [call("session_list", entity, p) for p in range(partitions)]


def parse_list(replies: list[Any]) -> list[str]:
    """Session ids from every partition's session_list reply, each once, sorted."""
    out: set[str] = set()
    for reply in replies:
        for sid in reply:
            out.add(sid.decode() if isinstance(sid, bytes) else str(sid))
    return sorted(out)


def refuse_plain_receive(entity: str) -> InvalidOperationError:
    return InvalidOperationError(
        f"'{entity}' requires sessions: receive with a session receiver (session_id=<id> or NEXT_AVAILABLE_SESSION)."
    )


def refuse_session_receiver(entity: str) -> InvalidOperationError:
    return InvalidOperationError(
        f"'{entity}' does not require sessions: a session receiver cannot be used on it (omit session_id)."
    )
