"""What resubmitting dead letters decides without I/O: where the copies go, which received messages
to move, and the result. The I/O is ``resubmit_dead_letters`` (sbredis/aio/_resubmit.py and its
generated sync twin), which the CLI's ``dlq resubmit`` and the dashboard both call."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from .._enums import ServiceBusSubQueue
from ..exceptions import InvalidArgumentError
from .keys import SUBSCRIPTIONS, subscription_path

# Copies are "scheduled" this far in the past: stored at once, and the reply says which copies
# duplicate detection dropped (sequence number 0), which send_messages does not.
LONG_AGO = datetime(2000, 1, 1, tzinfo=UTC)
MAX_BATCH = 5000


@dataclass
class ResubmitResult:
    """What ``resubmit_dead_letters`` did.

    resubmitted: copies stored at the target whose dead letters were completed (or, see
    lock_lost, meant to be). kept_as_duplicates: copies the target's duplicate detection dropped;
    their dead letters stay where they were. lock_lost: copies stored whose dead letters could not
    be completed (their lock elapsed): those dead letters are still there too. not_found: selected
    sequence numbers that were not in the subqueue.
    """

    entity: str
    to: str
    resubmitted: int = 0
    kept_as_duplicates: int = 0
    lock_lost: int = 0
    not_found: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class Target:
    """Where copies go: a queue or topic (`subscription` None; a topic fans out to every
    subscription whose rules match), or one subscription of a topic (its rules bypassed)."""

    name: str
    subscription: str | None = None

    @property
    def path(self) -> str:
        """The entity path: ``NAME`` or ``TOPIC/Subscriptions/SUB``."""
        return self.name if self.subscription is None else subscription_path(self.name, self.subscription)


def split_path(path: str) -> tuple[str, str | None]:
    """(queue or topic, None), or (topic, subscription) for ``TOPIC/Subscriptions/SUB`` or
    ``TOPIC:SUB`` (entity names contain neither ':' nor '/Subscriptions/').

    Raises:
        InvalidArgumentError: not a string, empty, or an empty topic or subscription name.
    """
    if not isinstance(path, str) or not path:
        raise InvalidArgumentError(f"an entity path is a non-empty string, not {path!r}")
    if ":" in path:
        topic, _, sub = path.partition(":")
    else:
        i = path.lower().find(SUBSCRIPTIONS.lower())
        if i < 0:
            return path, None
        topic, sub = path[:i], path[i + len(SUBSCRIPTIONS) :]
    if not topic or not sub:
        raise InvalidArgumentError(f"{path!r} is not QUEUE, TOPIC, TOPIC/Subscriptions/SUB or TOPIC:SUB")
    return topic, sub


def target_of(entity: str, to: str | None) -> Target:
    """The target for dead letters of `entity` (`to` None: back to the queue itself).

    Raises:
        InvalidArgumentError: `to` is None for a subscription (its origin is a choice: the topic, to
            every subscription whose rules match, or the subscription alone), or a bad path.
    """
    topic, sub = split_path(entity)
    if to is None:
        if sub is not None:
            raise InvalidArgumentError(
                f"{entity} is a subscription: name a target, its topic {topic!r} (every subscription whose rules "
                f"match gets a copy) or '{topic}/Subscriptions/{sub}' (this subscription only)"
            )
        return Target(topic)
    name, subscription = split_path(to)
    return Target(name, subscription)


def check_options(
    sub_queue: Any, sequence_numbers: Iterable[int] | None, max_message_count: int | None, batch_size: int
) -> tuple[ServiceBusSubQueue, set[int] | None]:
    """The subqueue and the selection, checked before anything is received.

    Raises:
        InvalidArgumentError: not a dead-letter subqueue, an empty or non-integer selection, a
            count below 1 or a batch size outside 1..5000.
    """
    try:
        sq = ServiceBusSubQueue(sub_queue)
    except ValueError:
        raise InvalidArgumentError(f"unknown sub_queue {sub_queue!r}") from None
    wanted: set[int] | None = None
    if sequence_numbers is not None:
        wanted = set()
        for s in sequence_numbers:
            if isinstance(s, bool) or not isinstance(s, int) or s < 0:
                raise InvalidArgumentError(f"a sequence number is a non-negative int, not {s!r}")
            wanted.add(s)
        if not wanted:
            raise InvalidArgumentError("sequence_numbers is empty: select at least one message, or pass None for all")
    if max_message_count is not None and (
        isinstance(max_message_count, bool) or not isinstance(max_message_count, int) or max_message_count < 1
    ):
        raise InvalidArgumentError(f"max_message_count must be an int of at least 1, not {max_message_count!r}")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or not 1 <= batch_size <= MAX_BATCH:
        raise InvalidArgumentError(f"batch_size must be an int from 1 to {MAX_BATCH}, not {batch_size!r}")
    return sq, wanted


def dead_letter_count(runtime: Any, sub_queue: ServiceBusSubQueue) -> int:
    """The messages in `sub_queue` from a queue's or subscription's runtime properties."""
    if sub_queue is ServiceBusSubQueue.TRANSFER_DEAD_LETTER:
        return int(runtime.transfer_dead_letter_message_count)
    return int(runtime.dead_letter_message_count)


def sort_batch(got: Sequence[Any], seen: set[int], wanted: set[int] | None) -> tuple[list[Any], list[Any]]:
    """(to move, to give back) of one received batch; adds the new sequence numbers to `seen`.
    A message seen before (its lock elapsed and it came back) is given back, not moved twice."""
    move: list[Any] = []
    back: list[Any] = []
    for m in got:
        if m.sequence_number in seen:
            back.append(m)
            continue
        seen.add(m.sequence_number)
        (move if wanted is None or m.sequence_number in wanted else back).append(m)
    return move, back
