"""Dead-letter jobs: export a dead-letter subqueue, and resubmit selected messages to their queue.

Resubmission selects on a snapshot (the data source's columns: deadLetterReason, enqueuedTime,
any Spark SQL condition), then each Spark task takes a dead-letter partition: it receives with
peek-lock from the lowest sequence number on, sends a copy of each selected message to the
queue, and completes the dead-lettered one only after the send was stored (a copy dropped as a
duplicate, by duplicate detection, is not stored, so its original stays). Messages it received
but did not select are given back uncounted at the end. A task that dies leaves every message it
did not complete where it was (its locks elapse).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from .._core.keys import SUBSCRIPTIONS
from .._core.protocol import Group
from .._enums import ServiceBusSubQueue
from .._message import ServiceBusReceivedMessage
from .._message import copy_for_resend as copy_of
from ..exceptions import MessageLockLostError
from . import _broker, _columns
from ._jobs import Summary, Timer, describe, hold, renewer, run_tasks
from ._options import UnsupportedEntityError


def snapshot(spark: Any, url: str, entity: str, dead_letter: bool = True) -> Any:
    """The (dead-letter) subqueue as a DataFrame, its end offsets fixed now so that every action on
    it sees the same messages (less those removed meanwhile)."""
    client = _broker.connect(url)
    try:
        meta = _broker.meta(client, entity)
        ends = _broker.next_offsets(
            client, entity, Group.DEAD_LETTER if dead_letter else Group.MAIN, meta.partition_count
        )
    finally:
        client.close()
    r = spark.read.format("sbredis").option("url", url).option("entity", entity)
    if dead_letter:
        r = r.option("subQueue", "deadletter")
    return r.option("startingOffsets", "earliest").option("endingOffsets", _json(ends)).load()


def _json(offsets: dict[int, int]) -> str:
    import json

    return json.dumps({str(p): v for p, v in offsets.items()})


def export(
    spark: Any, url: str, entity: str, out: str, *, mode: str = "errorifexists", where: str | None = None
) -> Summary:
    """Write the dead-letter subqueue of `entity` (rows matching `where`) to Parquet at `out`."""
    timer = Timer()
    df = snapshot(spark, url, entity)
    if where:
        df = df.where(where)
    describe(spark, f"sbredis dlq_export {entity}")
    before = _count(spark, out) if mode == "append" else 0
    df.write.mode("error" if mode == "errorifexists" else mode).parquet(out)  # Connect knows only "error"
    n = spark.read.parquet(out).count() - before
    return Summary("dlq_export", n, timer.seconds(), {})


def _count(spark: Any, path: str) -> int:
    """Rows of the Parquet data at `path`, 0 when there is none yet."""
    from pyspark.errors import AnalysisException

    try:
        return int(spark.read.parquet(path).count())
    except AnalysisException:
        return 0


def select(
    spark: Any, url: str, entity: str, *, reason: str | None, older_than: float | None, where: str | None
) -> dict[int, list[int]]:
    """Per dead-letter partition, the offsets of the messages to resubmit."""
    from pyspark.sql import functions as F  # noqa: N812

    df = snapshot(spark, url, entity)
    if reason is not None:
        df = df.where(F.col("deadLetterReason") == reason)
    if older_than is not None:
        df = df.where(F.col("enqueuedTime") < F.current_timestamp() - F.expr(f"INTERVAL {float(older_than)} SECONDS"))
    if where:
        df = df.where(where)
    rows = df.groupBy("partition").agg(F.sort_array(F.collect_list("offset")).alias("offsets")).collect()
    return {int(r["partition"]): [int(o) for o in r["offsets"]] for r in rows}


def resubmit_partition(
    url: str, entity: str, partition: int, offsets: list[int], batch_size: int, new_ids: bool, max_renewal: float
) -> dict[str, int]:
    """Resubmit the selected messages of one dead-letter partition (runs in a Spark task)."""
    counts: Counter[str] = Counter()
    want = set(offsets)
    top = max(offsets)
    client = _broker.connect(url)
    dlq = client.get_queue_receiver(entity, sub_queue=ServiceBusSubQueue.DEAD_LETTER)
    held: list[ServiceBusReceivedMessage] = []
    meta = _broker.meta(client, entity)
    try:
        with renewer(max_renewal) as renew:
            while want:
                now_ms, msgs = _broker.receive(client, entity, partition, Group.DEAD_LETTER, batch_size)
                if not msgs:
                    break
                hold(renew, dlq, now_ms, msgs)
                pick = [m for m in msgs if m.local_seq in want]
                held += [m for m in msgs if m.local_seq not in want]
                want -= {m.local_seq for m in pick}
                for chunk in _broker.size_chunks(pick, _columns.encoded_size, meta.max_message_bytes, 500):
                    copies = [copy_of(m, new_ids) for m in chunk]
                    seqs = _broker.send(client, meta, copies, partition)
                    stored = [m for m, s in zip(chunk, seqs, strict=True) if s]
                    dropped = [m for m, s in zip(chunk, seqs, strict=True) if not s]
                    counts["duplicates_kept_in_dlq"] += len(dropped)
                    held += dropped
                    lost = 0
                    if stored:
                        try:
                            dlq.complete_messages(stored)
                        except MessageLockLostError as e:
                            lost = len(e.messages) or len(stored)
                    counts["resubmitted"] += len(stored)
                    counts["dlq_lock_lost"] += lost
                if msgs[-1].local_seq >= top:
                    break  # receives go up by sequence number: nothing selected lies beyond
    finally:
        _broker.release(client, entity, Group.DEAD_LETTER, held)
        dlq.close()
        client.close()
    counts["not_found"] += len(want)
    return dict(counts)


def resubmit(
    spark: Any,
    url: str,
    entity: str,
    *,
    reason: str | None = None,
    older_than: float | None = None,
    where: str | None = None,
    new_message_id: bool = False,
    batch_size: int = 100,
    dry_run: bool = False,
    max_renewal: float = 3600.0,
) -> Summary:
    """Resubmit the selected dead-lettered messages of `entity` (a queue) to it; messages = resubmitted.

    Raises:
        UnsupportedEntityError: `entity` is a subscription: a copy could only be published to the
            topic, which would reach every other matching subscription again.
    """
    if SUBSCRIPTIONS in entity:
        raise UnsupportedEntityError(
            f"cannot resubmit the dead letters of the subscription '{entity}': a message can only be sent to "
            "its topic, which would reach every matching subscription again; export them with dlq_export instead"
        )
    timer = Timer()
    selected = select(spark, url, entity, reason=reason, older_than=older_than, where=where)
    n_selected = sum(len(v) for v in selected.values())
    if dry_run or not selected:
        return Summary("dlq_resubmit", 0, timer.seconds(), {"selected": n_selected})
    work = sorted(selected.items())

    def task(item: tuple[int, list[int]]) -> dict[str, int]:
        p, offs = item
        return resubmit_partition(url, entity, p, offs, batch_size, new_message_id, max_renewal)

    describe(spark, f"sbredis dlq_resubmit {entity}")
    total: Counter[str] = Counter()
    for r in run_tasks(spark, work, task):
        total.update(r)
    keys = ("resubmitted", "duplicates_kept_in_dlq", "not_found", "dlq_lock_lost")
    return Summary(
        "dlq_resubmit", total["resubmitted"], timer.seconds(), {"selected": n_selected} | {k: total[k] for k in keys}
    )
