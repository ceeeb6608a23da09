"""`sbredis sessions list ENTITY` / `sbredis sessions show ENTITY SESSION_ID`: the sessions of a
queue or subscription that requires sessions.

``list`` prints the ids of the sessions with available messages, a lock holder or state (as
``list_queue_sessions``). ``show`` locks the session for a moment (reading its state needs the
session lock, as in Service Bus), prints its state (text when it is UTF-8, else base64) and how
many of its messages are available, and lets go of it. A session another receiver holds is not
waited for: exit 1 with one line saying so.
"""

from __future__ import annotations

import argparse
import base64
from typing import Any

from ..exceptions import SessionCannotBeLockedError
from . import _clients
from ._registry import ExitCode, Registry, UsageError
from .output import Output

SHOW_COLUMNS = ("session_id", "available", "state_size", "state_encoding", "state")


def register(cli: Registry) -> None:
    g = cli.group("sessions", "list the sessions of a session entity, or show one (state, message count)")
    p = g.command("list", "ids of the sessions with messages, a holder or state", run_list)
    p.add_argument("entity", help="QUEUE, TOPIC/Subscriptions/SUB or TOPIC:SUB")
    p = g.command("show", "a session's state and available message count (takes the session lock briefly)", run_show)
    p.add_argument("entity", help="QUEUE, TOPIC/Subscriptions/SUB or TOPIC:SUB")
    p.add_argument("session_id")


def _path(entity: str) -> tuple[str, str | None]:
    topic, sub = _clients.split(entity)
    if not topic or sub == "":
        raise UsageError(f"{entity!r} is not QUEUE, TOPIC/Subscriptions/SUB or TOPIC:SUB")
    return topic, sub


def run_list(args: argparse.Namespace, out: Output) -> int:
    topic, sub = _path(args.entity)
    with _clients.client(args) as c:
        ids = c.list_queue_sessions(topic) if sub is None else c.list_subscription_sessions(topic, sub)
    out.show([{"session_id": s} for s in ids], ("session_id",), data=ids)
    if not ids:
        out.say(f"no sessions on {args.entity}")
    return ExitCode.OK


def state_fields(state: bytes | None) -> dict[str, Any]:
    """The state as the command prints it: text when it is UTF-8, else base64 (None: no state)."""
    if state is None:
        return {"state": None, "state_encoding": None, "state_size": 0}
    try:
        return {"state": state.decode("utf-8"), "state_encoding": "utf-8", "state_size": len(state)}
    except UnicodeDecodeError:
        return {"state": base64.b64encode(state).decode(), "state_encoding": "base64", "state_size": len(state)}


def run_show(args: argparse.Namespace, out: Output) -> int:
    _path(args.entity)
    with _clients.client(args) as c:
        receiver = _clients.receiver(c, args.entity, session_id=args.session_id, max_wait_time=1)
        try:
            with receiver:
                session = receiver.session
                state = session.get_state()
                available = session.available_count()
        except SessionCannotBeLockedError:
            out.warn(
                f"sbredis: session {args.session_id!r} of {args.entity} is held by another receiver "
                "(SessionCannotBeLockedError): its state can be read once it is let go of"
            )
            return ExitCode.ERROR
    row = {"session_id": args.session_id, "entity": args.entity, "available": available, **state_fields(state)}
    if out.json:
        out.emit(row)
    else:
        for key in SHOW_COLUMNS:
            value = row[key]
            out.say(f"{key + ':':<16}{'-' if value is None else value}")
    return ExitCode.OK
