"""Every entity's counts in one read: the registry (one HGETALL), then one short read-only script
(lua/dashboard_counts.lua, built by sbredis/_core/protocol/dashboard_counts.py) on every partition
of every queue, topic and subscription, which reads the partition and its transfer queue together,
pipelined per node by the transport's ``run_many``: the overview costs one round trip per node
whatever the number of entities and partitions. ``Rates`` turns two reads into per-second rates.

A topic stores no message of its own (a send, scheduled or not, stores its copies in the
subscriptions at once), so a topic's row is folded from its subscriptions': partition by
partition, their counts and sizes summed (copies: a message two subscriptions took counts twice;
the size is the admin client's topic ``size_in_bytes``), with the topic's own sequence counter
(what was sent to it). A subscription's quota is its topic's
``max_size_in_megabytes`` per partition, which the publish script enforces on each subscription
partition.

Internals used (as the Prometheus exporter, observability/exporter.py): the sync ``Transport``
(``run_many``, ``node_names``), the registry module and the script's protocol module. The public
admin client reads one entity per round trip, which at a thousand entities is a second.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .._core import registry
from .._core.keys import subscription_path, subscriptions_index
from .._core.protocol import Call
from .._core.protocol import dashboard_counts as script
from .._sync._transport import Transport
from ..exceptions import ServiceBusError

ROW, WIDTH = script.ROW, script.WIDTH

COUNTS = ("active", "locked", "deferred", "scheduled", "dead_letter", "transfer", "transfer_dead_letter", "size")
_AT = {name: ROW.index(name) for name in (*COUNTS, "seq", "dseq")}
# a folded topic row takes these columns from the topic's own partition, the rest from its subscriptions'
_OWN = {ROW.index(k) for k in ("found", "seq")}
MB = 1024 * 1024


@dataclass
class Partition:
    partition_id: int
    node: str
    counts: dict[str, int]
    reachable: bool = True


@dataclass
class Entity:
    """One queue, topic or subscription with its counts summed and per partition."""

    name: str
    kind: str  # queue, topic, subscription
    status: str
    partition_count: int
    max_size_bytes: int
    topic: str | None = None
    requires_session: bool = False
    # dashboard_counts.lua's rows of the partitions, flattened (WIDTH values each; zeros for an unreachable one)
    rows: list[int] = field(default_factory=list)
    nodes: list[str] = field(default_factory=list)
    unreachable: list[int] = field(default_factory=list)
    subscriptions: list[str] = field(default_factory=list)  # a topic's, by path, once folded
    fullest: float = 0.0  # a topic's: the largest share of its quota one of its subscriptions holds

    def total(self, name: str) -> int:
        """A count (COUNTS), or "seq"/"dseq" (messages ever stored / dead-lettered), summed."""
        return sum(self.rows[_AT[name] :: WIDTH])

    @property
    def fill(self) -> float:
        """The share of its quota the entity holds, 0.0 to 1.0 (a topic: its fullest subscription's,
        since each subscription has the whole quota of its own)."""
        if self.kind == "topic":
            return self.fullest
        return min(1.0, self.total("size") / self.max_size_bytes) if self.max_size_bytes else 0.0

    @property
    def counts(self) -> dict[str, int]:
        return {k: self.total(k) for k in COUNTS}

    @property
    def partitions(self) -> list[Partition]:
        out = []
        for i in range(self.partition_count):
            row = self.rows[i * WIDTH : (i + 1) * WIDTH]
            counts = {k: row[_AT[k]] for k in COUNTS} if row else dict.fromkeys(COUNTS, 0)
            node = self.nodes[i] if i < len(self.nodes) else ""
            out.append(Partition(i, node, counts, i not in self.unreachable))
        return out

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "status": self.status,
            "partition_count": self.partition_count,
            "max_size_bytes": self.max_size_bytes,
            "fill": round(self.fill, 4),
            "counts": self.counts,
            "unreachable_partitions": self.unreachable,
        }

    def partitions_json(self) -> list[dict[str, Any]]:
        return [{"id": p.partition_id, "node": p.node, "reachable": p.reachable, **p.counts} for p in self.partitions]


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _megabytes(rec: dict[str, Any] | None) -> int:
    return int((rec or {}).get("max_size_in_megabytes") or 1024)


def _entity(name: str, rec: dict[str, Any], topics: dict[str, dict[str, Any]]) -> Entity | None:
    """`topics`: the topics' records by name (a subscription's quota is its topic's)."""
    kind = str(rec.get("kind", "queue"))  # records written before topics existed have no kind
    if kind not in ("queue", "topic", "subscription"):
        return None
    if kind == "subscription":
        count, topic = int(rec.get("_pc", 1)), str(rec.get("_t", name.split("/", 1)[0]))
        megabytes = _megabytes(topics.get(topic))
    else:
        count, topic, megabytes = int(rec.get("partition_count") or 1), None, _megabytes(rec)
    return Entity(
        name=name,
        kind=kind,
        status=str(rec.get("status", "Active")),
        partition_count=count,
        max_size_bytes=megabytes * MB * count,  # each partition holds up to max_size_in_megabytes
        topic=topic,
        requires_session=bool(rec.get("requires_session")),
    )


def _entities(records: dict[str, dict[str, Any]]) -> list[Entity]:
    topics = {k: v for k, v in records.items() if v.get("kind") == "topic"}
    return [e for k, v in records.items() if (e := _entity(k, v, topics)) is not None]


def fold_topics(entities: Sequence[Entity]) -> None:
    """Give each topic among `entities` its subscriptions' counts (those among `entities`), partition
    by partition; the topic keeps its own sequence counter."""
    subs: dict[str, list[Entity]] = {}
    for e in entities:
        if e.kind == "subscription" and e.topic is not None:
            subs.setdefault(e.topic, []).append(e)
    for t in entities:
        if t.kind != "topic":
            continue
        mine = [s for s in subs.get(t.name, []) if len(s.rows) == len(t.rows)]
        rows = list(t.rows)
        for i in range(len(rows)):
            if i % WIDTH not in _OWN:
                rows[i] = sum(s.rows[i] for s in mine)
        t.rows = rows
        t.unreachable = sorted(set(t.unreachable).union(*(s.unreachable for s in mine)))
        t.subscriptions = [s.name for s in mine]
        t.fullest = max((s.fill for s in mine), default=0.0)


class Reader:
    """Reads every entity's counts; the script calls are built again only when the registry changed
    (building 16,000 key lists costs more than running them)."""

    def __init__(self, transport: Transport) -> None:
        self.transport = transport
        self._lock = threading.Lock()
        self._registry: dict[Any, Any] | None = None
        self._calls: list[Call] = []

    def names(self) -> list[tuple[str, str]]:
        """(name, kind) of every queue, topic and subscription, sorted; no counts (one HGETALL)."""
        raw = self.transport.execute(*registry.get_all()) or {}
        found = _entities({_text(k): json.loads(v) for k, v in raw.items()})
        return sorted((e.name, e.kind) for e in found)

    def _records(self, names: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The records of `names` and of what their counts need: a topic's subscriptions (its
        counts are theirs) and a subscription's topic (its quota is the topic's). Three reads at most."""
        names = list(dict.fromkeys(names))
        values = self.transport.execute(*registry.get_many(names)) if names else []
        records = {n: json.loads(v) for n, v in zip(names, values, strict=True) if v is not None}
        more: list[str] = []
        topics = [n for n, r in records.items() if r.get("kind") == "topic"]
        for t in topics:
            more += [
                subscription_path(t, _text(s)) for s in self.transport.execute("HKEYS", subscriptions_index(t)) or ()
            ]
        more += [str(r.get("_t")) for r in records.values() if r.get("kind") == "subscription" and r.get("_t")]
        more = [n for n in dict.fromkeys(more) if n not in records]
        if more:
            values = self.transport.execute(*registry.get_many(more))
            records.update({n: json.loads(v) for n, v in zip(more, values, strict=True) if v is not None})
        return records

    def read(self, only: str | Sequence[str] | None = None, *, helpers: bool = False) -> list[Entity]:
        """Every queue, topic and subscription (or only those named in `only`, in that order), sorted
        by name (a subscription after its topic), with its counts. A partition whose node does not
        answer is marked unreachable and left out of the sums. `helpers`: with `only`, the
        subscriptions read for a topic's counts come after the entities named (their rates make
        the topic's).

        Raises:
            ServiceBusError: the registry cannot be read.
        """
        cluster = getattr(self.transport, "cluster", None) is not None
        wanted: list[str] | None = None
        if only is not None:
            wanted = [only] if isinstance(only, str) else list(only)
            records, asked = self._records(wanted), set(wanted)
            # a subscription's topic is read for its quota only: counting it would need all its subscriptions
            entities = [
                e for e in _entities(records) if e.name in asked or (e.kind == "subscription" and e.topic in asked)
            ]
            calls = script.calls([(e.name, i) for e in entities for i in range(e.partition_count)], cluster)
        else:
            raw = self.transport.execute(*registry.get_all()) or {}
            entities = _entities({_text(k): json.loads(v) for k, v in raw.items()})
            entities.sort(key=lambda e: e.name)
            with self._lock:
                if raw != self._registry:
                    parts = [(e.name, i) for e in entities for i in range(e.partition_count)]
                    self._calls = script.calls(parts, cluster)
                    self._registry = raw
                calls = self._calls
        replies = self.transport.run_many(calls, retry="all") if calls else []
        nodes = self.transport.node_names([c.keys[0] for c in calls]) if calls else []
        flat: list[int] = []  # every partition's row, in entity then partition order
        where: list[str] = []  # the node of each partition
        failed: set[int] = set()  # partitions whose node did not answer
        for call, reply, node in zip(calls, replies, nodes, strict=True):
            n = script.partitions_of(call)
            if isinstance(reply, ServiceBusError):
                failed.update(range(len(where), len(where) + n))
                flat += [0] * (WIDTH * n)
            else:
                flat += script.parse(reply)
            where += [node] * n
        at = 0
        for e in entities:
            e.rows = flat[at * WIDTH : (at + e.partition_count) * WIDTH]
            e.nodes = where[at : at + e.partition_count]
            e.unreachable = [i - at for i in range(at, at + e.partition_count) if i in failed]
            at += e.partition_count
        fold_topics(entities)
        if wanted is not None:
            order = {n: i for i, n in enumerate(dict.fromkeys(wanted))}
            named = sorted((e for e in entities if e.name in order), key=lambda e: order[e.name])
            entities = named + [e for e in entities if e.name not in order] if helpers else named
        return entities


class Rates:
    """Sent, completed and dead-lettered messages per second per entity, from successive reads
    (the partitions' sequence counters; completed: what left the entity other than by
    dead-lettering). A topic's *sent* is what was sent to it, its completed and dead-lettered
    its subscriptions' sums. Each entity keeps its own last reading, so reading one entity (its
    page) does not disturb the others' rates. Thread-safe: the server serves requests on threads."""

    MIN_GAP = 0.2  # seconds between two readings that make a rate (closer ones keep the last rate)

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last: dict[str, tuple[float, int, int, int]] = {}
        self._rates: dict[str, dict[str, float]] = {}

    def update(self, entities: list[Entity], now: float | None = None) -> dict[str, dict[str, float]]:
        """The rates of `entities` after this reading of them (an entity seen once has none yet)."""
        now = time.monotonic() if now is None else now
        out: dict[str, dict[str, float]] = {}
        with self._lock:
            for e in sorted(entities, key=lambda e: e.kind == "topic"):  # a topic after its subscriptions
                sent, dead, held = e.total("seq"), e.total("dseq"), e.total("active") + e.total("scheduled")
                old = self._last.get(e.name)
                if old is None:
                    self._last[e.name] = (now, sent, dead, held)
                elif now - old[0] >= self.MIN_GAP:
                    seconds = now - old[0]
                    d_sent, d_dead = max(sent - old[1], 0), max(dead - old[2], 0)
                    completed = max(d_sent - (held - old[3]) - d_dead, 0) / seconds
                    dead_lettered = d_dead / seconds
                    if e.kind == "topic":  # its copies live in its subscriptions: one send may be several
                        subs = [self._rates[s] for s in e.subscriptions if s in self._rates]
                        completed = sum(r["completed"] for r in subs)
                        dead_lettered = sum(r["dead_lettered"] for r in subs)
                    self._rates[e.name] = {
                        "sent": round(d_sent / seconds, 1),
                        "completed": round(completed, 1),
                        "dead_lettered": round(dead_lettered, 1),
                    }
                    self._last[e.name] = (now, sent, dead, held)
                if e.name in self._rates:
                    out[e.name] = dict(self._rates[e.name])
        return out


def totals(entities: Sequence[Entity], rates: dict[str, dict[str, float]]) -> dict[str, float]:
    """The namespace's rates: sent to queues and topics (a subscription's copies are not sends),
    completed and dead-lettered in queues and subscriptions (a topic's are its subscriptions')."""
    kinds = {
        "sent": ("queue", "topic"),
        "completed": ("queue", "subscription"),
        "dead_lettered": ("queue", "subscription"),
    }
    return {
        k: round(sum(rates.get(e.name, {}).get(k, 0.0) for e in entities if e.kind in of), 1) for k, of in kinds.items()
    }
