# Generated from sbredis/aio/_topic_sender.py by scripts/unasync.py: edit the async source, not this.
"""ServiceBusTopicSender: a ServiceBusSender whose sends fan out to the topic's subscriptions."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .._core import fanout, protocol, send_plan, validation
from .._core.meta import EntityMeta
from .._core.protocol import cancel_topic_scheduled
from .._core.protocol.publish import TopicSubs
from .._message import ServiceBusMessage
from ..exceptions import InvalidOperationError, MessagingEntityNotFoundError, ServiceBusError
from ._forwarder import run_publish
from ._sender import ServiceBusSender


class ServiceBusTopicSender(ServiceBusSender):
    """Sends to one topic: each send is one ``publish`` script call per topic partition, which
    stores a copy in every subscription whose rules match (all copies or none), so every
    ServiceBusSender method works the same. A partition with more subscriptions than one call's
    budget takes a split publish (docs/topics.md, "Wide fan-outs"): the same refusals before
    anything is written, and the send returns once every copy is stored. ``schedule_messages``
    returns the topic's sequence numbers; ``cancel_scheduled_messages`` takes them back out of
    every subscription."""

    _one_message_path = False

    def _topic(self) -> fanout.TopicMeta:
        meta = self._context.entity(self.entity_name)
        if not isinstance(meta, fanout.TopicMeta):
            raise self._not_a_topic(meta)
        return meta

    def _not_a_topic(self, meta: EntityMeta) -> InvalidOperationError:
        return InvalidOperationError(f"'{self.entity_name}' is a {meta.kind}, not a topic: use get_queue_sender")

    def _store_with(self, meta: EntityMeta, sched_ms: int, entries: list[list[ServiceBusMessage]]) -> list[Any]:
        """Publish entries (each one caller's messages); one outcome per entry, as ServiceBusSender."""
        if not isinstance(meta, fanout.TopicMeta):
            return [self._not_a_topic(meta)] * len(entries)
        outcomes: list[Any] = [None] * len(entries)
        stored: set[int] = set()

        def plan(messages: list[ServiceBusMessage]) -> tuple[list[Any], list[int]]:
            self._rr += 1
            return fanout.plan_publish(messages, meta, self._rr % meta.partition_count, sched_ms)

        todo, alone = list(range(len(entries))), False
        while todo:  # a second round only for the callers of calls refused for one caller's messages
            plans = send_plan.plan_entries(entries, todo, meta.max_message_bytes, plan, outcomes, alone)
            calls = protocol.stamped([c for _, group_calls, _ in plans for c in group_calls], meta.generation)
            replies = iter(run_publish(self._context.transport, meta, calls) if calls else [])
            todo, alone = [], True
            for group, group_calls, where in plans:
                seqs, errors = send_plan.send_replies(group_calls, replies)
                if any(isinstance(e, MessagingEntityNotFoundError) for e in errors.values()):
                    self._context.forget(self.entity_name)
                stored |= {c.partition for c in group_calls if c.partition not in errors}
                todo += send_plan.group_outcomes(entries, group, where, seqs, errors, outcomes)
        self._context.forwarder.drain_published(meta, stored)
        return outcomes

    def cancel_scheduled_messages(
        self, sequence_numbers: int | Iterable[int], *, timeout: float | None = None
    ) -> None:
        """Cancel scheduled topic messages not yet enqueued (every copy in every subscription).
        All numbers of one partition or none.

        Raises:
            InvalidArgumentError: not sequence numbers of this topic.
            MessageNotFoundError: a number is not a pending scheduled message.
        """
        validation.check_timeout(timeout)
        self._check_open()
        seqs = validation.sequence_numbers(sequence_numbers)
        meta = self._topic()
        groups: dict[int, list[int]] = {}
        for s in seqs:
            p, local = validation.split_sequence_number(s, meta.partition_count)
            groups.setdefault(p, []).append(local)
        calls = [
            cancel_topic_scheduled.call(meta.name, p, meta.subs.get(p) or TopicSubs(), v) for p, v in groups.items()
        ]
        for reply in run_publish(self._context.transport, meta, protocol.stamped(calls, meta.generation)):
            if isinstance(reply, ServiceBusError):
                raise reply

    def __repr__(self) -> str:
        return f"ServiceBusTopicSender(topic={self.entity_name!r})"
