"""The report job: counts by entity, partition, subqueue, state, dead-letter reason and age.

It reads snapshots (nothing is locked or changed) of each queue or subscription and its dead-letter subqueue,
counts in Spark, prints the table, and writes it as CSV with a PNG chart (messages by state,
by age and by dead-letter reason, per entity). Locked messages show as active (a snapshot does
not see locks); expired messages not removed yet show too.
"""

from __future__ import annotations

import csv
import os
from collections import defaultdict
from typing import Any

from ._dlq import snapshot
from ._jobs import Summary, Timer, describe

COLUMNS = ("entity", "partition", "subqueue", "state", "deadLetterReason", "age", "count")
AGES = ("future", "<1m", "1-10m", "10m-1h", "1h-1d", ">1d")
_AGE_SQL = (
    "CASE WHEN age_s < 0 THEN 'future' WHEN age_s < 60 THEN '<1m' WHEN age_s < 600 THEN '1-10m' "
    "WHEN age_s < 3600 THEN '10m-1h' WHEN age_s < 86400 THEN '1h-1d' ELSE '>1d' END"
)


def all_entities(url: str) -> list[str]:
    """Every queue and every subscription (as ``<topic>/Subscriptions/<name>``), sorted."""
    from .._core.keys import subscription_path
    from ..management import ServiceBusAdministrationClient

    with ServiceBusAdministrationClient.from_connection_string(url) as admin:
        names = [q.name for q in admin.list_queues()]
        for t in admin.list_topics():
            names += [subscription_path(t.name, s.name) for s in admin.list_subscriptions(t.name)]
    return sorted(names)


def counts(spark: Any, url: str, entities: list[str]) -> list[dict[str, Any]]:
    """The grouped counts, one dict per (entity, partition, subqueue, state, reason, age)."""
    from pyspark.sql import functions as F  # noqa: N812

    frames = []
    for e in entities:
        for dead in (False, True):
            df = snapshot(spark, url, e, dead_letter=dead)
            frames.append(df.withColumn("subqueue", F.lit("deadletter" if dead else "main")))
    if not frames:
        return []
    df = frames[0]
    for f in frames[1:]:
        df = df.unionByName(f)
    df = df.withColumn(
        "age_s", F.unix_timestamp(F.current_timestamp()) - F.unix_timestamp(F.col("enqueuedTime"))
    ).withColumn("age", F.expr(_AGE_SQL))
    describe(spark, "sbredis report")
    rows = (
        df.groupBy("entity", "partition", "subqueue", "state", "deadLetterReason", "age")
        .count()
        .orderBy("entity", "partition", "subqueue", "state", "deadLetterReason", "age")
        .collect()
    )
    return [{c: r[c] for c in COLUMNS} for r in rows]


def table(rows: list[dict[str, Any]], limit: int | None = None) -> str:
    """The rows as a fixed-width text table (the first `limit` rows, with a note of the rest)."""
    shown = rows if limit is None else rows[:limit]
    cells = [[("" if r[c] is None else str(r[c])) for c in COLUMNS] for r in shown]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(COLUMNS)]
    lines = [" | ".join(c.ljust(w) for c, w in zip(COLUMNS, widths, strict=True))]
    lines.append("-+-".join("-" * w for w in widths))
    lines += [" | ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)) for row in cells]
    if len(rows) > len(shown):
        lines.append(f"... {len(rows) - len(shown)} more rows in the CSV")
    return "\n".join(lines)


def write_csv(rows: list[dict[str, Any]], path: str) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(rows)


def chart(rows: list[dict[str, Any]], path: str) -> None:
    """A PNG with three panels per entity: messages by state, by age, by dead-letter reason."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    entities = sorted({r["entity"] for r in rows}) or ["(none)"]
    by_state: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    by_age: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    by_reason: dict[str, int] = defaultdict(int)
    for r in rows:
        state = "dead-lettered" if r["subqueue"] == "deadletter" else r["state"]
        by_state[state][r["entity"]] += r["count"]
        by_age[r["age"]][r["entity"]] += r["count"]
        if r["subqueue"] == "deadletter":
            by_reason[f"{r['entity']}: {r['deadLetterReason'] or '(none)'}"] += r["count"]
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.8))
    for ax, groups, order, title in (
        (axes[0], by_state, ("active", "deferred", "scheduled", "dead-lettered"), "messages by state"),
        (axes[1], by_age, AGES, "messages by age (since enqueued)"),
    ):
        bottom = [0] * len(entities)
        for i, key in enumerate(order):
            values = [groups.get(key, {}).get(e, 0) for e in entities]
            if any(values):
                color = plt.get_cmap("viridis")(i / (len(order) - 1)) if order is AGES else None
                ax.bar(entities, values, bottom=bottom, label=key, color=color)
                bottom = [b + v for b, v in zip(bottom, values, strict=True)]
        ax.set_title(title)
        ax.set_ylabel("messages")
        ax.tick_params(axis="x", labelrotation=30)
        if any(bottom):
            ax.legend(fontsize="small")
    reasons = sorted(by_reason.items(), key=lambda kv: kv[1])
    axes[2].barh([k for k, _ in reasons] or ["(no dead letters)"], [v for _, v in reasons] or [0], color="tab:red")
    axes[2].set_title("dead letters by reason")
    axes[2].set_xlabel("messages")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def report(
    spark: Any, url: str, entities: list[str] | None, out_dir: str | None, print_rows: int | None = 200
) -> tuple[Summary, list[dict[str, Any]], str]:
    """Count, print-ready table, CSV and PNG (in `out_dir` when given); messages = counted."""
    timer = Timer()
    names = entities or all_entities(url)
    rows = counts(spark, url, names)
    text = table(rows, print_rows)
    if out_dir:
        os.makedirs(out_dir, exist_ok=True)
        write_csv(rows, os.path.join(out_dir, "report.csv"))
        chart(rows, os.path.join(out_dir, "report.png"))
    total = sum(int(r["count"]) for r in rows)
    return Summary("report", total, timer.seconds(), {"entities": len(names), "rows": len(rows)}), rows, text
