"""Purge: receive and delete a queue's or subscription's messages in batches, for ``sbredis purge``,
``sbredis dlq purge`` and the dashboard.

A session-enabled entity's active messages can only be received through a session, so they are
purged session by session (those listed when the purge starts); a session a receiver holds right
now is left as it is and named in the result. Dead-letter subqueues have no sessions. Each batch
is one receive-and-delete, atomic per partition as the library's receive is.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .. import ServiceBusClient, ServiceBusReceiveMode, ServiceBusSubQueue
from ..exceptions import SessionCannotBeLockedError
from ..management import ServiceBusAdministrationClient
from . import _clients


@dataclass
class Purged:
    purged: int = 0
    held: list[str] = field(default_factory=list)  # sessions a receiver held: their messages stay


def requires_session(admin: ServiceBusAdministrationClient, path: str) -> bool:
    """Whether the queue or subscription at `path` is session-enabled.

    Raises:
        MessagingEntityNotFoundError: no such entity.
    """
    topic, sub = _clients.split(path)
    if sub is None:
        return bool(admin.get_queue(topic).requires_session)
    return bool(admin.get_subscription(topic, sub).requires_session)


def purge(
    c: ServiceBusClient,
    path: str,
    limit: int,
    *,
    sub_queue: ServiceBusSubQueue | None = None,
    sessions: bool = False,
    batch: int = 100,
    max_wait_time: float = 1.0,
    on_progress: Callable[[int], Any] | None = None,
) -> Purged:
    """Delete up to `limit` messages of `path` (its active ones, or of `sub_queue`); `sessions`:
    the entity is session-enabled (its active messages are taken session by session).

    Raises:
        ServiceBusError: the entity is missing or cannot be read.
    """
    out = Purged()
    mode = ServiceBusReceiveMode.RECEIVE_AND_DELETE

    def drain(r: Any) -> None:
        while out.purged < limit:
            got = r.receive_messages(min(batch, limit - out.purged), max_wait_time=max_wait_time)
            if not got:
                return
            out.purged += len(got)
            if on_progress is not None:
                on_progress(len(got))

    if sub_queue is not None or not sessions:
        with _clients.receiver(c, path, sub_queue=sub_queue, receive_mode=mode) as r:
            drain(r)
        return out
    topic, sub = _clients.split(path)
    ids = c.list_queue_sessions(topic) if sub is None else c.list_subscription_sessions(topic, sub)
    for sid in ids:
        if out.purged >= limit:
            break
        try:
            with _clients.receiver(c, path, session_id=sid, receive_mode=mode, max_wait_time=max_wait_time) as r:
                drain(r)
        except SessionCannotBeLockedError:
            out.held.append(sid)
    return out
