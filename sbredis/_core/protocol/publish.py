"""publish.lua: fan messages out of one topic partition into its subscriptions' same partition.

The caller passes the subscription set it last saw (TopicSubs, with its version ``subv``); when
that is stale the script stores nothing and answers with the current set (:func:`stale`).
publish passes the 10 keys a fan-out writes per subscription (:func:`fan_keys`);
cancel_topic_scheduled passes all 24 (:func:`topic_keys`) and shares the stale answer.

A fan-out wider than one call's budget (:func:`splits`) is split (docs/topics.md, "Wide
fan-outs"): read-only :func:`check_calls` first, then :func:`start_call`, which records a journal
in the topic partition, then :func:`continue_call` per chunk until the journal is gone. While a
journal is pending, every call that would write the topic answers :func:`pending` instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..._message import PARTITION_SHIFT
from .. import keys, scripts
from .base import Call, text

NAME = "publish"
ARGV = ("subv", "k")
PER_MESSAGE = 7  # message_id, ttl_ms, scheduled_ms, hop count, expires_ms, outbox seq, blob
STALE = -1  # first element of a reply that carries the current subscription set
PENDING = -2  # first element of a reply that names a pending fan-out journal
CONTINUE = "+"  # ARGV[1] of a continuation call
BUDGET = 200  # a call's work: 2 per subscription, 1 per subscription x message (publish.lua's BUDGET)
BUDGET_BYTES = 65536  # and 1 per subscription x this many bytes of the messages (publish.lua's BUDGET_BYTES)


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
    """publish's KEYS: the topic partition's keys and its fan-out journal, then the keys a
    fan-out writes of the same partition of each subscription (keys.FAN_KEY_NAMES)."""
    ks: list[str] = [*keys.partition_keys(topic, partition), keys.journal_key(topic, partition)]
    for name in names:
        ks += keys.subscription_fan_keys(topic, name, partition)
    return tuple(ks)


def check_keys(topic: str, partition: int, names: Sequence[str]) -> tuple[str, ...]:
    """A check call's KEYS: the topic partition's keys and journal, then each subscription's cfg
    and st (keys.CHECK_KEY_NAMES: all a check reads)."""
    ks: list[str] = [*keys.partition_keys(topic, partition), keys.journal_key(topic, partition)]
    for name in names:
        ks += keys.subscription_keys(topic, name, partition)[: len(keys.CHECK_KEY_NAMES)]
    return tuple(ks)


def _publish_keys(topic: str, partition: int, names: Sequence[str], msg_args: Sequence[Any]) -> tuple[str, ...]:
    """A publish call's KEYS: a wide one (split: it never runs as one call) gets no
    subscription's, its calls get their chunk's."""
    n = len(msg_args) // PER_MESSAGE
    nbytes = sum(len(blob) for blob in msg_args[PER_MESSAGE - 1 :: PER_MESSAGE])
    return fan_keys(topic, partition, () if len(names) > chunk_size(n, nbytes) else names)


def call(topic: str, partition: int, subs: TopicSubs, source: str, msg_args: Sequence[Any]) -> Call:
    """`msg_args`: PER_MESSAGE per message; `source` '' for a send, else the forwarding source."""
    n = len(msg_args) // PER_MESSAGE
    args = (subs.version, len(subs.names), *subs.names, source, n, *msg_args)
    return Call(scripts.load(NAME), _publish_keys(topic, partition, subs.names, msg_args), args, partition)


def rebuild(c: Call, topic: str, subs: TopicSubs) -> Call:
    """The same publish or cancel_topic_scheduled call for a fresh subscription set."""
    k = int(c.args[1])
    rest = c.args[2 + k :]
    if c.script.name == NAME:
        ks = _publish_keys(topic, c.partition, subs.names, rest[2 : 2 + PER_MESSAGE * int(rest[1])])
    else:
        ks = topic_keys(topic, c.partition, subs.names)
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
    return [base | int(s) if int(s) else 0 for s in reply[1 : 1 + messages_of(c)]]


# ------------------------------------------------------------------------------ wide fan-outs
@dataclass(frozen=True)
class Journal:
    """A pending fan-out journal: its id, how many of its subscriptions are done, and the names
    of the next chunk (the KEYS of the continuation call that writes it)."""

    jid: str
    cursor: int
    names: tuple[str, ...]


def chunk_size(n: int, nbytes: int = 0) -> int:
    """How many subscriptions one call writes for `n` messages of `nbytes` (publish.lua's chunk_of)."""
    return max(1, BUDGET // (2 + n + nbytes // BUDGET_BYTES))


def bytes_of(c: Call) -> int:
    """The bytes of the messages' blobs a publish call carries."""
    k = int(c.args[1])
    n = int(c.args[3 + k])
    first = 4 + k + PER_MESSAGE - 1  # the first message's blob
    return sum(len(c.args[first + PER_MESSAGE * i]) for i in range(n))


def messages_of(c: Call) -> int:
    """The number of messages a publish call carries."""
    k = int(c.args[1])
    return int(c.args[3 + k])


def splits(c: Call) -> bool:
    """Whether a publish call is too wide for one call: its subscriptions x messages go over the
    budget (it then runs as check_calls, start_call and continuations)."""
    if c.script.name != NAME or c.args[0] == CONTINUE:
        return False
    k = int(c.args[1])
    return k > chunk_size(int(c.args[3 + k]), bytes_of(c))


def check_calls(c: Call, topic: str) -> list[Call]:
    """Read-only calls that refuse a wide publish as its one call would (NOTFOUND, DISABLED, SIZE,
    QUOTA, NOSESSION), each over one chunk of its subscriptions, naming only those."""
    k, size = int(c.args[1]), chunk_size(messages_of(c), bytes_of(c))
    rest = c.args[2 + k :]
    out = []
    for a in range(0, k, size):
        names = c.args[2 + a : 2 + min(k, a + size)]
        args = (c.args[0], len(names), *names, *rest, "check", 0)
        out.append(Call(c.script, check_keys(topic, c.partition, names), args, c.partition, c.gen))
    return out


def start_call(c: Call, topic: str) -> Call:
    """The first writing call of a wide publish: the topic's side of it (sequence numbers,
    duplicate detection, scheduled copy maps) and the journal, which records every name (ARGV
    has them all); no subscription's keys: handling 2,000 names is this call's work."""
    return Call(c.script, fan_keys(topic, c.partition, ()), (*c.args, "start", 0), c.partition, c.gen)


def continue_call(topic: str, partition: int, journal: Journal, gen: str = "") -> Call:
    """The continuation that writes the journal's next chunk (a no-op answering the journal's state
    when its id or cursor is not the caller's; with no names, a probe of the state)."""
    ks = fan_keys(topic, partition, journal.names)
    return Call(scripts.load(NAME), ks, (CONTINUE, journal.jid, journal.cursor), partition, gen)


def probe(topic: str, partition: int, gen: str = "") -> Call:
    """A continuation naming no journal: it answers the pending journal's state, or {0}."""
    return continue_call(topic, partition, Journal("", -1, ()), gen)


def pending(reply: Any) -> Journal | None:
    """The pending journal a reply names (a continuation's or a refused publish's), else None."""
    if not isinstance(reply, list) or len(reply) < 3 or int(reply[0]) != PENDING:
        return None
    return Journal(text(reply[1]), int(reply[2]), tuple(text(x) for x in reply[3:]))


def started(c: Call, reply: list[Any]) -> tuple[list[Any], Journal | None]:
    """A start call's reply: the usual {now, seqs...} and the journal it recorded (None: all done)."""
    n = messages_of(c)
    rest = reply[1 + n :]
    if not rest:
        return reply[: 1 + n], None
    return reply[: 1 + n], Journal(text(rest[0]), int(rest[1]), tuple(text(x) for x in rest[2:]))
