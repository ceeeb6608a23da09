"""publish.lua: fan messages out of one topic partition into its subscriptions' same partition.

The caller passes the subscription set it last saw (TopicSubs, with its version ``subv``); when
that is stale the script stores nothing and answers with the current set (:func:`stale`).
publish passes the 10 keys a fan-out writes per subscription (:func:`fan_keys`);
cancel_topic_scheduled passes all 24 (:func:`topic_keys`) and shares the stale answer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..._message import PARTITION_SHIFT
from .. import keys, scripts
from .base import Call, text

NAME = "publish"
ARGV = ("subv", "k")
PER_MESSAGE = 7  # message_id, ttl_ms, scheduled_ms, hop count, expires_ms, outbox seq, blob
STALE = -1  # first element of a reply that carries the current subscription set


@dataclass
class TopicSubs:
    """One topic partition's subscription set as last seen: its version, the names, and which of
    them forward (whose partitions a drain should visit after a publish)."""

    version: str = "-1"
    names: tuple[str, ...] = ()
    forwarding: tuple[str, ...] = ()


def topic_keys(topic: str, partition: int, names: Sequence[str]) -> tuple[str, ...]:
    """The topic partition's keys, then the same partition's keys of each subscription (the
    layout of cancel_topic_scheduled)."""
    ks: list[str] = list(keys.partition_keys(topic, partition))
    for name in names:
        ks += keys.subscription_keys(topic, name, partition)
    return tuple(ks)


def fan_keys(topic: str, partition: int, names: Sequence[str]) -> tuple[str, ...]:
    """publish's KEYS: the topic partition's keys, then the keys a fan-out writes of the same
    partition of each subscription (keys.FAN_KEY_NAMES)."""
    ks: list[str] = list(keys.partition_keys(topic, partition))
    for name in names:
        ks += keys.subscription_fan_keys(topic, name, partition)
    return tuple(ks)


def _keys_for(script: str) -> Callable[[str, int, Sequence[str]], tuple[str, ...]]:
    return fan_keys if script == NAME else topic_keys


def call(topic: str, partition: int, subs: TopicSubs, source: str, msg_args: Sequence[Any]) -> Call:
    """`msg_args`: PER_MESSAGE per message; `source` '' for a send, else the forwarding source."""
    args = (subs.version, len(subs.names), *subs.names, source, len(msg_args) // PER_MESSAGE, *msg_args)
    return Call(scripts.load(NAME), fan_keys(topic, partition, subs.names), args, partition)


def rebuild(c: Call, topic: str, subs: TopicSubs) -> Call:
    """The same publish or cancel_topic_scheduled call for a fresh subscription set."""
    k = int(c.args[1])
    rest = c.args[2 + k :]
    ks = _keys_for(c.script.name)(topic, c.partition, subs.names)
    return Call(c.script, ks, (subs.version, len(subs.names), *subs.names, *rest), c.partition, c.gen)


def stale(reply: Any) -> TopicSubs | None:
    """The current subscription set when a publish/cancel reply says the caller's was stale."""
    if not isinstance(reply, list) or not reply or int(reply[0]) != STALE:
        return None
    version = text(reply[1])
    names, forwarding = [], []
    for i in range(2, len(reply), 2):
        name = text(reply[i])
        names.append(name)
        if text(reply[i + 1]) == "1":
            forwarding.append(name)
    return TopicSubs(version, tuple(sorted(names)), tuple(sorted(forwarding)))


def parse(c: Call, reply: list[Any]) -> list[int]:
    """The topic's global sequence numbers, 0 for a message dropped as a duplicate."""
    base = c.partition << PARTITION_SHIFT
    return [base | int(s) if int(s) else 0 for s in reply[1:]]
