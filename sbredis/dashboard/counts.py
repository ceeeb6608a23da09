"""Every entity's counts in one read: the registry (one HGETALL), then one short read-only script
(lua/dashboard_counts.lua, built by sbredis/_core/protocol/dashboard_counts.py) on every partition
of every queue, topic and subscription, which reads the partition and its transfer queue together,
pipelined per node by the transport's ``run_many``: the overview costs one round trip per node
whatever the number of entities and partitions. ``Rates`` turns two reads into per-second rates.

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
from .._core.protocol import Call
from .._core.protocol import dashboard_counts as script
from .._sync._transport import Transport
from ..exceptions import ServiceBusError

ROW, WIDTH = script.ROW, script.WIDTH

COUNTS = ("active", "locked", "deferred", "scheduled", "dead_letter", "transfer", "transfer_dead_letter", "size")
_AT = {name: ROW.index(name) for name in (*COUNTS, "seq", "dseq")}


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

    def total(self, name: str) -> int:
        """A count (COUNTS), or "seq"/"dseq" (messages ever stored / dead-lettered), summed."""
        return sum(self.rows[_AT[name] :: WIDTH])

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
            "counts": self.counts,
            "unreachable_partitions": self.unreachable,
        }

    def partitions_json(self) -> list[dict[str, Any]]:
        return [{"id": p.partition_id, "node": p.node, "reachable": p.reachable, **p.counts} for p in self.partitions]


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _entity(name: str, rec: dict[str, Any]) -> Entity | None:
    kind = str(rec.get("kind", "queue"))  # records written before topics existed have no kind
    if kind not in ("queue", "topic", "subscription"):
        return None
    if kind == "subscription":
        count, topic = int(rec.get("_pc", 1)), str(rec.get("_t", name.split("/", 1)[0]))
    else:
        count, topic = int(rec.get("partition_count") or 1), None
    size = int(rec.get("max_size_in_megabytes") or 1024) * 1024 * 1024
    return Entity(
        name=name,
        kind=kind,
        status=str(rec.get("status", "Active")),
        partition_count=count,
        max_size_bytes=size * (count if kind != "subscription" else 1),
        topic=topic,
        requires_session=bool(rec.get("requires_session")),
    )


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
        found = [e for k, v in raw.items() if (e := _entity(_text(k), json.loads(v))) is not None]
        return sorted((e.name, e.kind) for e in found)

    def read(self, only: str | Sequence[str] | None = None) -> list[Entity]:
        """Every queue, topic and subscription (or only those named in `only`), sorted by name (a
        subscription after its topic), with its counts. A partition whose node does not answer is
        marked unreachable and left out of the sums.

        Raises:
            ServiceBusError: the registry cannot be read.
        """
        cluster = getattr(self.transport, "cluster", None) is not None
        if only is not None:
            names = [only] if isinstance(only, str) else list(only)
            values = self.transport.execute(*registry.get_many(names)) if names else []
            entities = [
                e for n, v in zip(names, values, strict=True) if v is not None and (e := _entity(n, json.loads(v)))
            ]
            calls = script.calls([(e.name, i) for e in entities for i in range(e.partition_count)], cluster)
        else:
            raw = self.transport.execute(*registry.get_all()) or {}
            entities = [e for k, v in raw.items() if (e := _entity(_text(k), json.loads(v))) is not None]
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
        return entities


class Rates:
    """Sent, completed and dead-lettered messages per second per entity, from successive reads
    (the partitions' sequence counters; completed: what left the entity other than by
    dead-lettering). Each entity keeps its own last reading, so reading one entity (its page)
    does not disturb the others' rates. Thread-safe: the server serves requests on threads."""

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
            for e in entities:
                sent, dead, held = e.total("seq"), e.total("dseq"), e.total("active") + e.total("scheduled")
                old = self._last.get(e.name)
                if old is None:
                    self._last[e.name] = (now, sent, dead, held)
                elif now - old[0] >= self.MIN_GAP:
                    seconds = now - old[0]
                    d_sent, d_dead = max(sent - old[1], 0), max(dead - old[2], 0)
                    completed = max(d_sent - (held - old[3]) - d_dead, 0)
                    self._rates[e.name] = {
                        "sent": round(d_sent / seconds, 1),
                        "completed": round(completed / seconds, 1),
                        "dead_lettered": round(d_dead / seconds, 1),
                    }
                    self._last[e.name] = (now, sent, dead, held)
                if e.name in self._rates:
                    out[e.name] = dict(self._rates[e.name])
        return out
