"""``sbredis metrics``: a Prometheus endpoint with per-entity gauges and this process's client metrics.

Each refresh reads the registry entries of the entities (one HGETALL of ``sb:entities``, or an
HMGET of the named ones) and runs the read-only ``stats`` script once per partition, pipelined per
node; it never scans the keyspace. A scrape within ``max_age`` seconds of the last refresh is
served from it, so many scrapers cost one refresh per interval. Gauges (label ``entity``: a queue
or a ``<topic>/Subscriptions/<subscription>`` path):

* ``sbredis_entity_active_messages`` (available, locked and deferred, as Service Bus counts them),
  ``sbredis_entity_locked_messages``, ``sbredis_entity_deferred_messages``,
  ``sbredis_entity_scheduled_messages``, ``sbredis_entity_dead_lettered_messages``,
  ``sbredis_entity_size_bytes``, ``sbredis_entity_partitions``;
* ``sbredis_entity_partitions_unreachable``: partitions whose node did not answer (their counts
  are missing from the sums);
* ``sbredis_up``: 1 when the last refresh could read the registry, else 0 (then no entity gauges).
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from prometheus_client import REGISTRY, CollectorRegistry, start_http_server
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from .._core import protocol
from .._core.fanout import meta_from_record
from .._core.protocol import stats
from .._core.retry import RetryPolicy
from .._core.topic_entity import kind_of
from .._sync._registry import Registry
from .._sync._transport import Transport
from ..exceptions import ServiceBusError
from . import prometheus

log = logging.getLogger("sbredis.metrics")

# gauge name, help, how to read it from a stats reply {ready, locked, deferred, scheduled, dlq_ready,
# dlq_locked, dlq_deferred, size_bytes, ...} (lua/stats.lua)
GAUGES: list[tuple[str, str, Any]] = [
    ("sbredis_entity_active_messages", "Active messages (available, locked, deferred)", lambda r: r[0] + r[1] + r[2]),
    ("sbredis_entity_locked_messages", "Messages locked by a receiver", lambda r: r[1]),
    ("sbredis_entity_deferred_messages", "Deferred messages", lambda r: r[2]),
    ("sbredis_entity_scheduled_messages", "Scheduled messages not enqueued yet", lambda r: r[3]),
    ("sbredis_entity_dead_lettered_messages", "Messages in the dead-letter subqueue", lambda r: r[4] + r[5] + r[6]),
    ("sbredis_entity_size_bytes", "Bytes stored for the entity's messages", lambda r: r[7]),
]


class EntityCollector(Collector):
    """Per-entity gauges read at most once per `max_age` seconds (thread-safe: the HTTP server
    serves scrapes on threads)."""

    def __init__(self, transport: Transport, entities: Sequence[str] | None = None, max_age: float = 5.0) -> None:
        self.transport = transport
        self.registry = Registry(transport)
        self.entities = list(entities) if entities else None
        self.max_age = max_age
        self._lock = threading.Lock()
        self._read_at = float("-inf")
        self._families: list[Metric] = []

    def describe(self) -> Iterable[Metric]:
        return []  # dynamic: registering must not read Redis

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            if time.monotonic() - self._read_at >= self.max_age:
                self._families = self.read()
                self._read_at = time.monotonic()
            families = list(self._families)
        yield from families

    def _records(self) -> dict[str, dict[str, Any]]:
        """Registry records of the queues and subscriptions to report."""
        if self.entities is None:
            records = self.registry.all()
            return {k: v for k, v in sorted(records.items()) if kind_of(v) in ("queue", "subscription")}
        values = self.registry.get_many(self.entities)
        out = {}
        for name, value in zip(self.entities, values, strict=True):
            if value is None:
                log.warning("no entity %r: not reported", name)
            else:
                out[name] = value
        return out

    def read(self) -> list[Metric]:
        """One refresh: the gauges now (sbredis_up 0 and nothing else when Redis cannot be read)."""
        up = GaugeMetricFamily("sbredis_up", "1 when the last refresh could read the entity registry")
        try:
            records = self._records()
        except ServiceBusError as e:
            log.warning("cannot read the entity registry: %s", e.message)
            up.add_metric([], 0)
            return [up]
        up.add_metric([], 1)
        calls: list[protocol.Call] = []
        owners: list[str] = []
        partitions: dict[str, int] = {}
        for name, record in records.items():
            count = meta_from_record(name, record).partition_count
            partitions[name] = count
            calls += [stats.call(name, p) for p in range(count)]
            owners += [name] * count
        replies = self.transport.run_many(calls, retry="all") if calls else []
        sums = {name: [0] * len(GAUGES) for name in records}
        missing = dict.fromkeys(records, 0)
        for name, reply in zip(owners, replies, strict=True):
            if isinstance(reply, ServiceBusError):
                missing[name] += 1
                continue
            counts = list(stats.parse(reply)[:8])
            for i, (_, _, read) in enumerate(GAUGES):
                sums[name][i] += read(counts)
        families: list[Metric] = [up]
        for i, (metric, help_text, _) in enumerate(GAUGES):
            family = GaugeMetricFamily(metric, help_text, labels=["entity"])
            for name in records:
                if missing[name] < partitions[name]:
                    family.add_metric([name], sums[name][i])
            families.append(family)
        for metric, help_text, values in (
            ("sbredis_entity_partitions", "Partitions of the entity", partitions),
            ("sbredis_entity_partitions_unreachable", "Partitions whose node did not answer", missing),
        ):
            family = GaugeMetricFamily(metric, help_text, labels=["entity"])
            for name, value in values.items():
                family.add_metric([name], value)
            families.append(family)
        return families


class MetricsServer:
    """A running exporter (see :func:`serve_metrics`); ``close()`` stops it."""

    def __init__(
        self, httpd: Any, thread: threading.Thread, collector: EntityCollector, registry: Any, own_sink: bool
    ) -> None:
        self.httpd = httpd
        self.thread = thread
        self.collector = collector
        self.registry = registry
        self.port: int = httpd.server_port
        self._own_sink = own_sink

    def close(self) -> None:
        """Stop serving; the client metrics stop too unless they were enabled before."""
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)
        self.registry.unregister(self.collector)
        self.collector.transport.close()
        if self._own_sink:
            prometheus.disable()


def serve_metrics(
    url: str,
    port: int,
    *,
    entities: Sequence[str] | None = None,
    host: str = "127.0.0.1",
    max_age: float = 5.0,
    registry: CollectorRegistry | None = None,
) -> MetricsServer:
    """Serve ``/metrics`` on `host`:`port` (0: any free port) in background threads: the entity
    gauges of `entities` (default: every queue and subscription) and the client metrics of this
    process (``sbredis.observability.prometheus``, enabled here). Returns the running server.

    Raises:
        InvalidArgumentError: a bad URL.
        OSError: the port cannot be bound.
    """
    registry = REGISTRY if registry is None else registry
    transport = Transport(url, retry_policy=RetryPolicy(retry_total=1, retry_backoff_factor=0.2), socket_timeout=5.0)
    collector = EntityCollector(transport, entities, max_age)
    own_sink = prometheus.installed_for() is not registry
    prometheus.enable(registry)
    registry.register(collector)
    try:
        httpd, thread = start_http_server(port, addr=host, registry=registry)
    except BaseException:
        registry.unregister(collector)
        transport.close()
        if own_sink:
            prometheus.disable()
        raise
    return MetricsServer(httpd, thread, collector, registry, own_sink)


def serve_until_stopped(
    url: str,
    port: int,
    *,
    entities: Sequence[str] | None = None,
    host: str = "127.0.0.1",
    max_age: float = 5.0,
    on_start: Callable[[MetricsServer], None] | None = None,
) -> MetricsServer:
    """Serve (as serve_metrics) until SIGTERM or SIGINT (main thread only); `on_start` is called
    once the port is bound. Returns the stopped server.

    Raises:
        InvalidArgumentError: a bad URL.  OSError: the port cannot be bound.
    """
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        server = serve_metrics(url, port, entities=entities, host=host, max_age=max_age)
        log.info("serving http://%s:%d/metrics", host, server.port)
        if on_start is not None:
            on_start(server)
        try:
            stop.wait()
        finally:
            server.close()
        return server
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
