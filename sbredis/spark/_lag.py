"""Lag of a streaming query, from its progress, under the Kafka source's metric names.

PySpark's Python streaming sources cannot add metrics to a progress' ``sources[].metrics``: in
PySpark 4.3 the JVM side (PythonMicroBatchStream and its admission-control and AvailableNow
variants) implements no ReportsSourceMetrics, and the Python source runner's protocol has no
call for metrics (only initialOffset, latestOffset, partitions, commit, the read limit,
prepareForTriggerAvailableNow and reportLatestOffset). Spark Connect runs the same classes. So
the figures are derived from what the source does report: each batch's ``endOffset`` and the
entity's ``latestOffset`` when the batch was planned.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from ..exceptions import InvalidArgumentError


def _doc(value: Any) -> Mapping[str, Any] | None:
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    return value if isinstance(value, Mapping) else None


def _sources(progress: Any) -> list[Any]:
    if isinstance(progress, str):
        progress = json.loads(progress)
    if isinstance(progress, Mapping):
        return list(progress.get("sources") or [])
    sources = getattr(progress, "sources", None)
    if sources is None:
        raise InvalidArgumentError(
            f"expected a StreamingQueryProgress, its dict or JSON, not {type(progress).__name__}"
        )
    return list(sources)


def _field(source: Any, name: str) -> Any:
    return source.get(name) if isinstance(source, Mapping) else getattr(source, name, None)


def source_lag(source: Any) -> dict[str, Any] | None:
    """One source's lag, or None when it is not an sbredis source or has no latest offset yet.

    mode peek: ``minOffsetsBehindLatest``, ``maxOffsetsBehindLatest``, ``avgOffsetsBehindLatest``
    (over the partitions: the latest next offset minus the batch's end offset) and
    ``offsetsBehindLatest`` (their sum). mode consume: ``activeMessagesBehindLatest``, the entity's
    active messages when the batch was planned, less those the query holds.
    """
    latest, end = _doc(_field(source, "latestOffset")), _doc(_field(source, "endOffset"))
    if latest is None or "entity" not in latest:
        return None
    out: dict[str, Any] = {"entity": latest["entity"]}
    if "activeMessages" in latest:
        out["activeMessagesBehindLatest"] = int(latest["activeMessages"])
        return out
    if end is None or not isinstance(latest.get("partitions"), Mapping):
        return None
    done = end.get("partitions") or {}
    behind = [max(0, int(v) - int(done.get(p, v))) for p, v in latest["partitions"].items()]
    if not behind:
        return None
    out.update(
        minOffsetsBehindLatest=min(behind),
        maxOffsetsBehindLatest=max(behind),
        avgOffsetsBehindLatest=sum(behind) / len(behind),
        offsetsBehindLatest=sum(behind),
    )
    return out


def lag(progress: Any) -> list[dict[str, Any]]:
    """The lag of each sbredis source of a query progress (``query.lastProgress``, an item of
    ``query.recentProgress``, a listener's ``event.progress``, or their JSON).

    Raises:
        InvalidArgumentError: `progress` is not a query progress.
    """
    return [lagged for s in _sources(progress) if (lagged := source_lag(s)) is not None]


def lag_listener(on_lag: Callable[[Any, list[dict[str, Any]]], None]) -> Any:
    """A ``StreamingQueryListener`` that calls ``on_lag(progress, lag(progress))`` after every
    micro-batch of a query that reads sbredis (queries without an sbredis source are skipped).
    Add it with ``spark.streams.addListener``; `on_lag` runs on Spark's listener thread, so it
    should be quick (export a gauge, log a line).

    Raises:
        InvalidArgumentError: `on_lag` is not callable.
    """
    from pyspark.sql.streaming.listener import StreamingQueryListener

    if not callable(on_lag):
        raise InvalidArgumentError(f"on_lag must be callable, not {type(on_lag).__name__}")

    class LagListener(StreamingQueryListener):  # type: ignore[misc]
        def onQueryStarted(self, event: Any) -> None:  # noqa: N802
            pass

        def onQueryProgress(self, event: Any) -> None:  # noqa: N802
            figures = lag(event.progress)
            if figures:
                on_lag(event.progress, figures)

        def onQueryIdle(self, event: Any) -> None:  # noqa: N802
            pass

        def onQueryTerminated(self, event: Any) -> None:  # noqa: N802
            pass

    return LagListener()
