# Generated from sbredis/aio/_resubmit.py by scripts/unasync.py: edit the async source, not this.
"""resubmit_dead_letters: copies of dead-lettered messages to a queue, a topic or one subscription
of a topic; each original completed once its copy is stored."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from .._core import resubmit
from .._core.resubmit import LONG_AGO, ResubmitResult, Target
from .._enums import ServiceBusSubQueue
from .._message import ServiceBusReceivedMessage, copy_for_resend
from ..exceptions import MessageLockLostError, MessagingEntityNotFoundError
from ._sender import ServiceBusSender

if TYPE_CHECKING:
    from ._admin import ServiceBusAdministrationClient
    from ._client import ServiceBusClient


def resubmit_dead_letters(
    client: ServiceBusClient,
    admin: ServiceBusAdministrationClient,
    entity: str,
    to: str | None = None,
    *,
    sub_queue: ServiceBusSubQueue | str = ServiceBusSubQueue.DEAD_LETTER,
    sequence_numbers: Iterable[int] | None = None,
    max_message_count: int | None = None,
    new_message_ids: bool = False,
    batch_size: int = 100,
    on_progress: Callable[[int], Any] | None = None,
) -> ResubmitResult:
    """Send copies (body, properties, message id) of the dead letters of `entity` (a queue, or a
    subscription as ``TOPIC/Subscriptions/SUB`` or ``TOPIC:SUB``) to `to`, and complete each
    dead letter once its copy is stored. sbredis's own, not the Azure SDK's.

    `to`: a queue; a topic (every subscription whose rules match gets a copy); or one subscription
    of a topic as ``TOPIC/Subscriptions/SUB`` or ``TOPIC:SUB`` (only it gets the copies, its topic's
    rules and the other subscriptions are bypassed). None: back to the queue itself (a
    subscription's dead letters need a target). `sub_queue`: the dead-letter subqueue, or
    ``TRANSFER_DEAD_LETTER`` for messages that could not be forwarded. `sequence_numbers`: only
    these (else every message there when the call starts, at most `max_message_count`).
    `new_message_ids`: give each copy a new message id (else a target with duplicate detection
    drops a copy whose id it saw within its window, and that dead letter stays). `on_progress` is
    called with the number of messages handled after each batch of `batch_size`.

    Atomic per partition as the library's own calls are: the copies of one batch for one target
    partition are stored all or none, and a dead letter is completed only after its copy was
    stored. An interruption loses nothing; a dead letter whose copy was stored but that was not
    completed (interrupted in between, lock lost: counted in ``lock_lost``) is there still and a
    second run copies it again. Dead letters received but not to be moved are given back
    (abandoned) at the end.

    Raises:
        InvalidArgumentError: a bad path, subqueue, selection, count or batch size, or no target
            for a subscription's dead letters (nothing is received or sent).
        MessagingEntityNotFoundError: `entity` or the target does not exist (nothing is received).
        As the receivers' and senders' calls otherwise.
    """
    sq, wanted = resubmit.check_options(sub_queue, sequence_numbers, max_message_count, batch_size)
    target = resubmit.target_of(entity, to)
    topic, sub = resubmit.split_path(entity)
    if sub is None:
        runtime: Any = admin.get_queue_runtime_properties(topic)
    else:
        runtime = admin.get_subscription_runtime_properties(topic, sub)
    there = resubmit.dead_letter_count(runtime, sq)
    limit = min(there, max_message_count or there)
    out = ResubmitResult(entity=entity, to=target.path)
    sender = _sender_for(client, admin, target)
    if sub is None:
        dlq = client.get_queue_receiver(topic, sub_queue=sq)
    else:
        dlq = client.get_subscription_receiver(topic, sub, sub_queue=sq)
    # received, not moved: given back at the end; by sequence number, as a held dead letter whose
    # lock elapsed comes back under a new lock (the one to give back)
    held: dict[int, ServiceBusReceivedMessage] = {}
    seen: set[int] = set()
    with sender, dlq:
        try:
            # `limit` counts distinct dead letters (a held one that came back is not a new one);
            # batches that bring only such returns are bounded by `limit` too
            taken = returns = 0
            while taken < limit and returns < limit and (wanted is None or wanted - seen):
                got = dlq.receive_messages(min(batch_size, limit - taken), max_wait_time=1)
                if not got:
                    break
                before = len(seen)
                move, back = resubmit.sort_batch(got, seen, wanted)
                new = len(seen) - before
                taken += new
                if not new:
                    returns += 1
                held.update((m.sequence_number, m) for m in back)
                if move:
                    seqs = sender.schedule_messages([copy_for_resend(m, new_message_ids) for m in move], LONG_AGO)
                    stored = [m for m, s in zip(move, seqs, strict=True) if s]
                    dropped = [m for m, s in zip(move, seqs, strict=True) if not s]
                    held.update((m.sequence_number, m) for m in dropped)
                    out.kept_as_duplicates += len(dropped)
                    if stored:
                        try:
                            dlq.complete_messages(stored)
                        except MessageLockLostError:
                            out.lock_lost += len(stored)
                    out.resubmitted += len(stored)
                if on_progress is not None:
                    on_progress(new)
        finally:
            for m in held.values():
                try:
                    dlq.abandon_message(m)
                except MessageLockLostError:
                    pass  # it elapsed: available again anyway
    if wanted is not None:
        out.not_found = sorted(wanted - seen)
    return out


def _sender_for(client: ServiceBusClient, admin: ServiceBusAdministrationClient, target: Target) -> Any:
    """A sender for the target, which must exist (checked here, before anything is received).

    Raises:
        MessagingEntityNotFoundError: no such queue, topic or subscription.
    """
    if target.subscription is not None:
        admin.get_subscription(target.name, target.subscription)
        # The subscription's partitions have a queue's keys: send.lua stores there directly,
        # without the topic's publish (no fan-out, no rules).
        return ServiceBusSender(client.handler_context, target.path, into_subscription=True)
    try:
        admin.get_queue(target.name)
        return client.get_queue_sender(target.name)
    except MessagingEntityNotFoundError:
        admin.get_topic(target.name)
        return client.get_topic_sender(target.name)
