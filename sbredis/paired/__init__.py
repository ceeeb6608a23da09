"""Paired namespaces (docs/paired-namespaces.md): the options, the metrics, the names a backlog
message carries, and ``run_syphon`` (what ``sbredis syphon`` runs).

Pair a client with ``ServiceBusClient.from_connection_string(primary_url,
paired_namespace=SendAvailabilityPairedNamespaceOptions(secondary=secondary_url))``.

The whole feature lives in this package: ``_core`` decides (options, failover state, property
moves), ``_aio`` runs it for the async client and ``_sync`` (generated from ``_aio`` by
scripts/unasync.py) for the sync one, ``_background`` holds their loops (tasks and threads side by
side), ``_run`` is the standalone syphon. A client reaches it only when made with
``paired_namespace=...``.
"""

from __future__ import annotations

from ._core import (
    BACKLOG_PREFIX,
    PATH,
    PING_CONTENT_TYPE,
    SCHEDULED_ENQUEUE_TIME,
    SESSION_ID,
    TIME_TO_LIVE,
    PairedNamespaceMetrics,
    SendAvailabilityPairedNamespaceOptions,
    backlog_name,
)
from ._run import run_syphon

__all__ = [
    "BACKLOG_PREFIX",
    "PATH",
    "PING_CONTENT_TYPE",
    "SCHEDULED_ENQUEUE_TIME",
    "SESSION_ID",
    "TIME_TO_LIVE",
    "PairedNamespaceMetrics",
    "SendAvailabilityPairedNamespaceOptions",
    "backlog_name",
    "run_syphon",
]
