"""cancel_topic_scheduled.lua: cancel a topic's scheduled messages (publish's KEYS and stale answer)."""

from __future__ import annotations

from collections.abc import Sequence

from .. import scripts
from .base import Call
from .publish import TopicSubs, stale, topic_keys

NAME = "cancel_topic_scheduled"
ARGV = ("subv", "k")
__all__ = ["ARGV", "NAME", "call", "stale"]


def call(topic: str, partition: int, subs: TopicSubs, seqs: Sequence[int]) -> Call:
    args = (subs.version, len(subs.names), *subs.names, len(seqs), *seqs)
    return Call(scripts.load(NAME), topic_keys(topic, partition, subs.names), args, partition)
