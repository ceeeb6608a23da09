"""EntityMeta: what a sender or receiver needs to know about its entity (read once from the registry)."""

from __future__ import annotations

from dataclasses import dataclass

from .entity import QueueProperties


@dataclass(frozen=True)
class EntityMeta:
    """What a sender or receiver needs to know about its entity (read once from the registry)."""

    name: str
    partition_count: int
    dedup: bool
    max_message_bytes: int
    kind: str = "queue"  # or "topic", "subscription"
    forwards: bool = False  # forward_to is set: what is stored moves on (see aio/_forwarder.py)
    sessions: bool = False  # requires_session: every message needs a session_id (see session.py)
    # which create of the entity this describes (entity.new_generation; '' before generations): its
    # script calls carry it, and a partition of another generation answers STALE
    generation: str = ""

    @classmethod
    def from_properties(cls, p: QueueProperties) -> EntityMeta:
        forwards = bool(p.forward_to)
        return cls(
            p.name,
            p.partition_count,
            p.requires_duplicate_detection,
            p.max_message_size_in_kilobytes * 1024,
            "queue",
            forwards,
            p.requires_session,
        )
