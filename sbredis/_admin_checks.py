"""Checks the administration clients run before they change an entity (sync and async alike: pure
functions over what the client read)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any, TypeVar

from ._core.entity import forward_address
from .exceptions import MessagingEntityNotFoundError

_P = TypeVar("_P")


def addressed(p: _P, namespace: str) -> _P:
    """`p` (QueueProperties or SubscriptionProperties) with its forwarding destinations as the SDK
    returns them, ``sb://<namespace>/<name>`` (update_* takes either form back)."""
    to, dead = p.forward_to, p.forward_dead_lettered_messages_to  # type: ignore[attr-defined]
    if not to and not dead:
        return p
    return replace(  # type: ignore[type-var]
        p, forward_to=forward_address(namespace, to), forward_dead_lettered_messages_to=forward_address(namespace, dead)
    )


def forward_targets(p: Any) -> list[str]:
    """The entities `p` (QueueProperties or SubscriptionProperties) forwards to, each once."""
    names = (p.forward_to, p.forward_dead_lettered_messages_to)
    return list(dict.fromkeys(n for n in names if n))


def check_forward_targets(targets: Sequence[str], records: Sequence[Any]) -> None:
    """Refuse forwarding to an entity that does not exist, as Service Bus does at creation
    (`records`: each target's registry entry, None when there is none). An entity deleted later
    is a runtime matter: what it should have received goes to the transfer dead-letter subqueue.

    Raises:
        MessagingEntityNotFoundError: a target does not exist.
    """
    for name, record in zip(targets, records, strict=True):
        if record is None:
            raise MessagingEntityNotFoundError(
                f"The messaging entity '{name}' to forward to was not found: create it first."
            )
