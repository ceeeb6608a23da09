"""Map Redis errors and Lua status codes to the sbredis exception tree (the only mapping table)."""

from __future__ import annotations

import re

import redis.exceptions as rx

from .. import exceptions as ex
from .redact import redact_text

# Error replies from the Lua scripts: 'SBERR <CODE>'.
LUA_ERRORS: dict[str, tuple[type[ex.ServiceBusError], str]] = {
    "NOTFOUND": (ex.MessagingEntityNotFoundError, "The messaging entity '{entity}' was not found."),
    # the caller's metadata is of an earlier generation: clients reload it and go on (docs/semantics.md)
    "STALE": (
        ex.MessagingEntityNotFoundError,
        "The messaging entity '{entity}' was deleted and created again since its metadata was read.",
    ),
    "DISABLED": (
        ex.MessagingEntityDisabledError,
        "The messaging entity '{entity}' is disabled for this operation.",
    ),
    "SIZE": (
        ex.MessageSizeExceededError,
        "A message or batch is larger than the maximum message size of '{entity}'.",
    ),
    "QUOTA": (
        ex.ServiceBusQuotaExceededError,
        "The messaging entity '{entity}' has reached its maximum size.",
    ),
    "NOMSG": (
        ex.MessageNotFoundError,
        "A sequence number does not name a message in the expected state on '{entity}'.",
    ),
    "INVALID": (ex.InvalidOperationError, "The operation is not valid on '{entity}'."),
    "NOSESSION": (
        ex.InvalidOperationError,
        "'{entity}' requires sessions: every message sent to it needs a session_id (nothing was stored).",
    ),
    "SESSIONREQ": (
        ex.InvalidOperationError,
        "'{entity}' requires sessions: receive with a session receiver (session_id=<id> or NEXT_AVAILABLE_SESSION).",
    ),
    "NOTSESSIONFUL": (
        ex.InvalidOperationError,
        "'{entity}' does not require sessions: a session receiver cannot be used on it (omit session_id).",
    ),
    "UNSETTLED": (
        ex.ServiceBusQuotaExceededError,
        "The session receiver on '{entity}' holds 2000 unsettled messages, the most one session may hold "
        "locked: settle some before receiving more.",
    ),
    "HELD": (ex.SessionCannotBeLockedError, "Another receiver holds the session on '{entity}'."),
    "LOST": (
        ex.SessionLockLostError,
        "The session lock on '{entity}' was lost (it elapsed, or another receiver took the session).",
    ),
}

# Added to a connection error that came from the TLS layer (a refused or unverifiable certificate).
TLS_HINT = (
    " (TLS: check ssl_ca_certs and the host name in the server's certificate; a server that asks for a "
    "client certificate needs ssl_certfile and ssl_keyfile)"
)


# Added to a connect timeout over TLS: a server without TLS reads the TLS handshake as the start of
# a command and waits for the rest, so the client hears nothing until its timeout.
PLAIN_SERVER_HINT = (
    " (over TLS: a server that does not speak TLS never answers the handshake; for one, use redis://, "
    "or UseTls=false in an Endpoint= connection string)"
)


# Redis before 7.0 wraps an error raised by a command inside a script in its own text
# ("Error running script (call to f_...): @user_script:12: -OOM command not allowed ..."), and redis-py
# then sees a plain ResponseError: the inner reply's code is what says what went wrong.
_SCRIPT_WRAPPED = re.compile(r"^Error running script .*?: -([A-Z]+ .*)$", re.DOTALL)


# A command inside a script that the ACL refuses: Redis 6.2 (wrapped as above, but with no error
# code), 7.0 and 8.x each word it differently, and none starts it with NOPERM.
_SCRIPT_ACL = re.compile(r"The user executing the script can't|^ACL failure in script")


def _unwrapped(text: str) -> str:
    match = _SCRIPT_WRAPPED.match(text)
    return match.group(1) if match else text


def map_error(err: Exception, entity: str = "") -> ex.ServiceBusError:
    """Turn an exception raised by redis-py into a ServiceBusError (never a raw Redis error)."""
    if isinstance(err, ex.ServiceBusError):
        return err
    text = _unwrapped(str(err))
    if isinstance(err, rx.ResponseError) and text.startswith("SBERR "):
        code = text[6:].split(" ", 1)[0]
        cls, template = LUA_ERRORS.get(code, (ex.ServiceBusError, "Broker error " + code))
        return cls(template.format(entity=entity))
    if isinstance(err, (rx.AskError, rx.ClusterDownError)) or text.startswith(("MOVED", "ASK", "CLUSTERDOWN")):
        return ex.ServiceBusConnectionError(
            "The cluster moved a partition or lost a node: " + _first_line(text), error=type(err)
        )
    if isinstance(err, rx.AuthenticationError):
        return ex.ServiceBusAuthenticationError("Redis refused the credentials.", error=type(err))
    if isinstance(err, rx.NoPermissionError) or text.startswith("NOPERM") or _SCRIPT_ACL.search(text):
        return ex.ServiceBusAuthorizationError(
            "Redis refused the operation for this user (ACL): " + _first_line(text), error=type(err)
        )
    if isinstance(err, rx.OutOfMemoryError) or text.startswith("OOM"):
        return ex.ServiceBusQuotaExceededError("Redis is out of memory.", error=type(err))
    if isinstance(err, (rx.MasterDownError, rx.ReadOnlyError)) or text.startswith(("READONLY", "MASTERDOWN")):
        return ex.ServiceBusConnectionError("Redis cannot take writes now: " + _first_line(text), error=type(err))
    if isinstance(err, rx.TryAgainError):
        return ex.ServiceBusServerBusyError("Redis is busy: " + _first_line(text), error=type(err))
    if isinstance(err, rx.TimeoutError):
        if "connecting" in text:  # redis-py's "Timeout connecting to server"
            return ex.OperationTimeoutError("The operation timed out connecting to Redis.", error=type(err))
        return ex.OperationTimeoutError("The operation timed out talking to Redis.", error=type(err))
    if isinstance(err, rx.BusyLoadingError) or text.startswith(("BUSY", "LOADING", "TRYAGAIN")):
        return ex.ServiceBusServerBusyError("Redis is busy: " + _first_line(text), error=type(err))
    if isinstance(err, (rx.ConnectionError, ConnectionError, OSError)):
        hint = TLS_HINT if any(m in text for m in ("SSL", "_ssl.c", "TLS")) else ""
        return ex.ServiceBusConnectionError("Could not talk to Redis: " + _first_line(text) + hint, error=type(err))
    if isinstance(err, rx.ReadOnlyError) or text.startswith(("READONLY", "MASTERDOWN")):
        return ex.ServiceBusConnectionError("Redis cannot take writes now: " + _first_line(text), error=type(err))
    if text.startswith("OOM"):
        return ex.ServiceBusQuotaExceededError("Redis is out of memory.", error=type(err))
    if text.startswith("WRONGTYPE") or "WRONGTYPE" in text:
        return ex.ServiceBusError(
            f"A key of '{entity}' holds data of the wrong type; the keyspace was changed outside sbredis.",
            error=type(err),
        )
    return ex.ServiceBusError("Redis error: " + _first_line(text), error=type(err))


def _first_line(text: str) -> str:
    """The first line of a Redis error, without credentials (a library may quote the URL)."""
    return redact_text(text.splitlines()[0])[:200] if text else ""
