"""cancel_topic_scheduled.lua: cancel a topic's scheduled messages (publish's KEYS and stale answer).

A cancel of more copies than one call removes (:func:`splits`) runs as :func:`start_call`, which
takes the numbers and records a journal in the topic partition's fan-out journal key (id
``c<n>``), then :func:`continue_call` per chunk, as a wide publish (publish.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .. import scripts
from .base import Call, text
from .publish import CONTINUE, Journal, TopicSubs, fan_keys, stale, topic_keys

NAME = "cancel_topic_scheduled"
ARGV = ("subv", "k")
START = "*"  # ARGV[1] of a start call
CHUNK = 200  # copies a call removes (cancel_topic_scheduled.lua's CHUNK)
JOURNAL_PREFIX = "c"  # a cancel's journal id starts so; a publish's is a number
__all__ = ["ARGV", "NAME", "call", "continue_call", "splits", "start_call", "started", "stale"]


def call(topic: str, partition: int, subs: TopicSubs, seqs: Sequence[int]) -> Call:
    args = (subs.version, len(subs.names), *subs.names, len(seqs), *seqs)
    return Call(scripts.load(NAME), topic_keys(topic, partition, subs.names), args, partition)


def splits(c: Call) -> bool:
    """Whether a cancel call removes more copies than one call should (one a subscription and
    message: the copies of rules with actions are few more): it then runs as start_call and
    continuations."""
    if c.script.name != NAME or c.args[0] in (START, CONTINUE):
        return False
    k = int(c.args[1])
    return k * int(c.args[2 + k]) > CHUNK


def start_call(c: Call, topic: str) -> Call:
    """The call that takes a wide cancel's numbers and records its journal (no subscription's keys)."""
    k = int(c.args[1])
    seqs = c.args[3 + k :]
    return Call(c.script, fan_keys(topic, c.partition, ()), (START, len(seqs), *seqs), c.partition, c.gen)


def started(reply: Any) -> Journal | None:
    """The journal a start call recorded (None: there was nothing to remove, or the reply is
    another's pending journal or an error)."""
    if not isinstance(reply, list) or len(reply) < 3 or int(reply[0]) != 0:
        return None
    return Journal(text(reply[1]), int(reply[2]), tuple(text(x) for x in reply[3:]))


def continue_call(topic: str, partition: int, journal: Journal, gen: str = "") -> Call:
    """The continuation that removes the cancel journal's next chunk of copies."""
    ks = fan_keys(topic, partition, journal.names)
    return Call(scripts.load(NAME), ks, (CONTINUE, journal.jid, journal.cursor), partition, gen)


def is_cancel(journal: Journal) -> bool:
    return journal.jid.startswith(JOURNAL_PREFIX)
