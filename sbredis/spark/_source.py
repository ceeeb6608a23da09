"""The ``sbredis`` data source: batch and streaming reads by offset, batch and streaming writes.

Reads never lock or change a message: they use the read-only ``peek`` script per partition from
an offset (the partition-local sequence number), so a Spark task that fails or is retried leaves
the queue as it was, and a streaming query holds nothing across Spark's lazy commit. A read is a
snapshot of the messages still stored when the task runs: messages completed (or expired)
before that are gaps in the offsets.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    InputPartition,
)
from pyspark.sql.types import StructType

from .._core.protocol.peek import Fields
from ..exceptions import InvalidArgumentError, InvalidOperationError
from . import _broker, _columns
from ._options import EARLIEST, LATEST, SourceOptions, UnsupportedEntityError, namespace, offset_spec, parse

try:  # PySpark 4.2+: admission control (maxMessagesPerTrigger) and Trigger.AvailableNow
    from pyspark.sql.streaming.datasource import (
        ReadAllAvailable,
        ReadLimit,
        ReadMaxRows,
        SupportsTriggerAvailableNow,
    )

    HAS_READ_LIMITS = True
except ImportError:  # pragma: no cover - PySpark 4.0 and 4.1
    HAS_READ_LIMITS = False


class OffsetRange(InputPartition):
    """Offsets [start, end) of one or more broker partitions: one Spark partition (task).
    ``ranges`` is the list of (partition, start, end); ``partition``/``start``/``end`` are its
    first one's."""

    def __init__(self, partition: int, start: int, end: int, more: Sequence[tuple[int, int, int]] = ()) -> None:
        self.ranges = [(partition, start, end), *more]
        super().__init__(tuple(self.ranges))
        self.partition = partition
        self.start = start
        self.end = end


def pack(ranges: list[tuple[int, int, int]], min_per_task: int) -> list[OffsetRange]:
    """Broker partitions' (partition, start, end) ranges as Spark partitions, consecutive ones
    packed into one until it covers at least `min_per_task` offsets: every Spark task costs a
    Python worker's round of set-up and a Redis connection, which small ranges do not repay
    (as Spark packs small files into one partition). Empty ranges are left out; at least one
    Spark partition is returned."""
    out: list[OffsetRange] = []
    group: list[tuple[int, int, int]] = []
    size = 0
    for p, start, end in ranges:
        if end <= start:
            continue
        group.append((p, start, end))
        size += end - start
        if size >= min_per_task:
            out.append(OffsetRange(*group[0], group[1:]))
            group, size = [], 0
    if group:
        out.append(OffsetRange(*group[0], group[1:]))
    if not out:
        p, start, _ = ranges[0] if ranges else (0, 1, 1)
        out.append(OffsetRange(p, start, start))
    return out


def resolve(name: str, raw: str | None, default: int, entity: str, next_offsets: dict[int, int]) -> dict[int, int]:
    """Concrete offsets per partition from an option (earliest/latest/JSON).

    Raises:
        InvalidArgumentError: the JSON names a partition the entity does not have.
    """
    spec: int | dict[int, int] = default if raw is None else offset_spec(name, raw, entity)
    per = spec if isinstance(spec, dict) else {}
    fallback = spec if isinstance(spec, int) else default
    extra = sorted(set(per) - set(next_offsets))
    if extra:
        raise InvalidArgumentError(
            f"option {name} names partition(s) {extra} but '{entity}' has {len(next_offsets)} partition(s)"
        )
    out = {}
    for p, nxt in next_offsets.items():
        v = per.get(p, fallback)
        out[p] = 1 if v == EARLIEST else nxt if v == LATEST else max(v, 1)
    return out


def _read_range(
    opts: SourceOptions, r: OffsetRange, columns: tuple[int, ...], window: tuple[int, int] | None = None
) -> Iterator[Any]:
    """Arrow record batches of the projected columns, one per page read; with `window`, only the
    messages whose enqueued time (ms) is in [window[0], window[1])."""
    ranges = [x for x in r.ranges if x[2] > x[1]]
    if not ranges:
        return
    pages = _columns.ArrowPages(columns)
    client = _broker.connect(opts.url, opts.socket_timeout)
    try:
        # Pages are joined into batches of at least BATCH_ROWS rows: the JVM pays per Arrow batch
        # as well as per row (a 200k-row stream into the noop sink took half the time with pages
        # of 5000 than of 1000), while a peek call of 1000 keeps each script call short.
        held: list[tuple[int, Any]] = []
        rows = 0
        state = pages.shows_state  # else the rows need no lock records, counts or marks read
        for p, f in _broker.peek_pages_many(client, opts.entity, opts.group, ranges, opts.page_size, state):
            if window is not None:
                f = enqueued_within(f, *window)
                if not f.raw:
                    continue
            held.append((p, f))
            rows += len(f.raw)
            if rows >= _columns.BATCH_ROWS:
                yield _batch(pages, opts.entity, held)
                held, rows = [], 0
        if held:
            yield _batch(pages, opts.entity, held)
    finally:
        client.close()


def enqueued_within(f: Fields, lo: int, hi: int) -> Fields:
    """The messages of page `f` enqueued in [lo, hi) ms, by each one's own enqueued time: it is not
    monotone in the offset (a scheduled message is logged when sent, with its activation time as
    its enqueued time, and clocks step), so no offset range stands for a time range."""
    keep = [i for i, e in enumerate(f.enqueued_ms) if lo <= e < hi]
    if len(keep) == len(f.raw):
        return f
    return f.pick(keep)


def _batch(pages: _columns.ArrowPages, entity: str, held: list[tuple[int, Any]]) -> Any:
    """joined_batch with the cyclic collector paused: a batch's parsed headers are a dict per row,
    which would push older objects into full collections over PySpark's and pyarrow's objects."""
    with _broker.collector_paused():
        return _columns.joined_batch(pages, entity, held)


_SHIFT = 40  # sequenceNumber = partition << 40 | offset
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_US = timedelta(microseconds=1)


def _micros(value: Any) -> int | None:
    """A pushed timestamp literal as microseconds since the epoch. PySpark hands a TIMESTAMP literal
    over as an aware datetime (its exact microseconds, in UTC whatever the session time zone); a
    naive one (TIMESTAMP_NTZ) or anything else gives None: the filter stays with Spark."""
    if isinstance(value, datetime) and value.tzinfo is not None and value.utcoffset() is not None:
        return (value - _EPOCH) // _US
    return None


class Pushed:
    """Filters on partition, offset and sequenceNumber, as per-partition offset bounds, and on
    enqueuedTime, as a window of enqueued ms (``enq``, [lo, hi)) each row read is tested
    against."""

    def __init__(self) -> None:
        self.partitions: set[int] | None = None
        self.lo = 0  # offsets, inclusive
        self.hi = 1 << 62  # exclusive
        self.seq_lo = 0
        self.seq_hi = 1 << 62
        self.enq: tuple[int, int] | None = None  # enqueued ms, [lo, hi)

    def take(self, f: Any) -> bool:
        """Record `f` when it can be applied exactly; False leaves it to Spark."""
        from pyspark.sql.datasource import (
            EqualTo,
            GreaterThan,
            GreaterThanOrEqual,
            In,
            IsNotNull,
            LessThan,
            LessThanOrEqual,
        )

        attribute: tuple[str, ...] = getattr(f, "attribute", ())  # Not(...) has a child instead
        col = attribute[0] if len(attribute) == 1 else None
        if col not in ("partition", "offset", "sequenceNumber", "enqueuedTime"):
            return False
        if isinstance(f, IsNotNull):
            return True  # these columns are never null
        if col == "enqueuedTime":
            return self._take_time(f)
        if isinstance(f, In):
            values = list(f.value)
        elif isinstance(f, EqualTo | GreaterThan | GreaterThanOrEqual | LessThan | LessThanOrEqual):
            values = [f.value]
        else:
            return False
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            return False
        if col == "partition":
            if isinstance(f, In | EqualTo):
                keep = set(values)
                self.partitions = keep if self.partitions is None else self.partitions & keep
                return True
            return False
        if isinstance(f, In):
            return False
        v = values[0]
        lo, hi = {
            EqualTo: (v, v + 1),
            GreaterThan: (v + 1, 1 << 62),
            GreaterThanOrEqual: (v, 1 << 62),
            LessThan: (0, v),
            LessThanOrEqual: (0, v + 1),
        }[type(f)]
        if col == "offset":
            self.lo, self.hi = max(self.lo, lo), min(self.hi, hi)
        else:
            self.seq_lo, self.seq_hi = max(self.seq_lo, lo), min(self.seq_hi, hi)
        return True

    def _take_time(self, f: Any) -> bool:
        """An enqueuedTime comparison as a window of whole ms: a row's time is its ms times 1000 us,
        so ``> v`` keeps ms above floor(v / 1000), ``>= v`` from ceil(v / 1000), and ``= v``
        nothing unless v is a whole ms."""
        from pyspark.sql.datasource import EqualTo, GreaterThan, GreaterThanOrEqual, LessThan, LessThanOrEqual

        if not isinstance(f, EqualTo | GreaterThan | GreaterThanOrEqual | LessThan | LessThanOrEqual):
            return False
        us = _micros(f.value)
        if us is None:
            return False
        floor, ceil = us // 1000, -(-us // 1000)
        lo, hi = {
            EqualTo: (ceil, floor + 1),
            GreaterThan: (floor + 1, None),
            GreaterThanOrEqual: (ceil, None),
            LessThan: (None, ceil),
            LessThanOrEqual: (None, floor + 1),
        }[type(f)]
        was_lo, was_hi = self.enq if self.enq is not None else (-(1 << 62), 1 << 62)
        self.enq = (was_lo if lo is None else max(was_lo, lo), was_hi if hi is None else min(was_hi, hi))
        return True

    def bound(self, p: int, start: int, end: int) -> tuple[int, int]:
        """[start, end) of partition `p` narrowed by the pushed filters (empty when excluded). An
        empty enqueuedTime window excludes everything; any other window does not narrow the
        offsets (see enqueued_within)."""
        excluded = self.partitions is not None and p not in self.partitions
        if excluded or (self.enq is not None and self.enq[0] >= self.enq[1]):
            return start, start
        base = p << _SHIFT
        lo = max(start, self.lo, self.seq_lo - base)
        hi = min(end, self.hi, max(self.seq_hi - base, 0))
        return lo, max(lo, hi)


def _next_offsets(opts: SourceOptions, client: Any = None) -> dict[int, int]:
    """Per partition, the offset the next message will get; over `client`, or a client of its own."""
    if client is not None:  # the entity's record is read every time: it may have been deleted
        meta = _broker.readable(_broker.meta(client, opts.entity))
        return _broker.next_offsets(client, opts.entity, opts.group, meta.partition_count)
    client = _broker.connect(opts.url, opts.socket_timeout)
    try:
        return _next_offsets(opts, client)
    finally:
        client.close()


class BatchReader(DataSourceReader):
    """A snapshot: per partition, the messages with offsets in [startingOffsets, endingOffsets)."""

    def __init__(self, opts: SourceOptions, columns: tuple[int, ...]) -> None:
        self.opts = opts
        self.columns = columns
        self.pushed = Pushed()

    def partitions(self) -> Sequence[InputPartition]:
        o = self.opts
        nxt = _next_offsets(o)
        start = resolve("startingOffsets", o.starting, EARLIEST, o.entity, nxt)
        end = resolve("endingOffsets", o.ending, LATEST, o.entity, nxt)
        if o.ending is not None and not o.partial_ending:
            spec = offset_spec("endingOffsets", o.ending, o.entity)
            missing = sorted(set(nxt) - set(spec)) if isinstance(spec, dict) else []
            if missing:
                raise InvalidArgumentError(
                    f"option endingOffsets leaves out partition(s) {missing} of '{o.entity}'; name every "
                    "partition, or set option partialEndingOffsets to 'latest' to read those to the end"
                )
        if o.ending is not None and offset_spec("endingOffsets", o.ending, o.entity) == EARLIEST:
            raise InvalidArgumentError("endingOffsets cannot be 'earliest'")
        return pack([(p, *self.pushed.bound(p, start[p], end[p])) for p in sorted(nxt)], o.read_per_task)

    def read(self, partition: InputPartition) -> Iterator[Any]:
        assert isinstance(partition, OffsetRange)
        return _read_range(self.opts, partition, self.columns, self.pushed.enq)


class PushdownBatchReader(BatchReader):
    """BatchReader with filter pushdown (option filterPushdown=true). A separate class because
    PySpark refuses a reader that has pushFilters while spark.sql.python.filterPushdown.enabled
    is false, its default."""

    def pushFilters(self, filters: list[Any]) -> Iterator[Any]:  # noqa: N802
        """Partition (=, IN), offset and sequenceNumber (=, <, <=, >, >=) filters narrow the offsets
        read; enqueuedTime (=, <, <=, >, >=) filters drop the rows outside their window as they are
        read, before any column is built; the others stay with Spark."""
        for f in filters:
            if not self.pushed.take(f):
                yield f


def _as_offsets(d: dict[str, Any]) -> dict[int, int]:
    return {int(k): int(v) for k, v in d.items()}


def _as_json(d: dict[int, int]) -> dict[str, int]:
    return {str(p): v for p, v in sorted(d.items())}


class Checkpoint:
    """The offset JSON of a streaming query in mode peek: where it reads, and the next offset per
    partition, ``{"namespace", "entity", "subQueue", "partitions": {"<partition>": <offset>}}``."""

    def __init__(self, opts: SourceOptions) -> None:
        self.where = {
            "namespace": namespace(opts.url),
            "entity": opts.entity,
            "subQueue": "deadletter" if opts.dead_letter else "",
        }

    def wrap(self, offsets: dict[int, int]) -> dict[str, Any]:
        return {**self.where, "partitions": _as_json(offsets)}

    def unwrap(self, offset: dict[str, Any]) -> dict[int, int]:
        """The offsets, after checking the checkpoint is this query's entity's.

        Raises:
            InvalidOperationError: the checkpoint was written for another entity, subqueue or server,
                or by a consuming query.
        """
        if "partitions" not in offset:
            if "query" in offset:
                raise InvalidOperationError(
                    "this checkpoint was written by a query in mode 'consume'; use a new checkpointLocation"
                )
            return _as_offsets(offset)  # written before checkpoints named their entity
        there = {k: offset.get(k) for k in self.where}
        if there != self.where:
            raise InvalidOperationError(
                f"this checkpoint belongs to entity '{there['entity']}' (subQueue '{there['subQueue']}') on "
                f"{there['namespace']}, not '{self.where['entity']}' (subQueue '{self.where['subQueue']}') on "
                f"{self.where['namespace']}; use a new checkpointLocation for another entity"
            )
        return _as_offsets(offset["partitions"])


def allocate(backlog: dict[int, int], budget: int) -> dict[int, int]:
    """Split `budget` offsets over partitions with these backlogs, fairly (water-filling: small
    backlogs are taken whole, the rest is shared), at least one each while the budget lasts."""
    out = dict.fromkeys(backlog, 0)
    items = sorted((b, p) for p, b in backlog.items() if b > 0)
    for i, (b, p) in enumerate(items):
        share = max(budget // (len(items) - i), 1 if budget > 0 else 0)
        take = min(b, share)
        out[p] = take
        budget -= take
    return out


class StreamReader(DataSourceStreamReader):
    """Micro-batches by offset: each batch reads, per partition, the offsets since the last one.

    The offset JSON in the checkpoint is ``{"<partition>": <next offset>}``. With
    maxMessagesPerTrigger a batch covers at most that many offsets (fewer messages when some were
    removed meanwhile), shared fairly over the partitions with a backlog.
    """

    def __init__(self, opts: SourceOptions, columns: tuple[int, ...]) -> None:
        self.opts = opts
        self.columns = columns
        self._target: dict[int, int] | None = None  # Trigger.AvailableNow: stop here
        self._last: dict[int, int] | None = None  # PySpark 4.0/4.1 call latestOffset() without start
        self._ckpt = Checkpoint(opts)
        self._latest: dict[int, int] | None = None  # what the last latestOffset() saw
        self._client: Any = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_client": None}  # a connection stays in its process

    def _next_offsets(self) -> dict[int, int]:
        """The entity's next offsets, over the reader's one client: Spark asks for offsets several
        times per micro-batch, and a client per call cost a connection each time."""
        if self._client is None:
            self._client = _broker.connect(self.opts.url, self.opts.socket_timeout)
        return _next_offsets(self.opts, self._client)

    def initialOffset(self) -> dict[str, Any]:  # noqa: N802
        o = self.opts
        return self._ckpt.wrap(resolve("startingOffsets", o.starting, LATEST, o.entity, self._next_offsets()))

    def reportLatestOffset(self) -> dict[str, Any] | None:  # noqa: N802
        """The offsets the entity had when the last micro-batch was planned (progress' latestOffset)."""
        return None if self._latest is None else self._ckpt.wrap(self._latest)

    def _limit(self, limit: Any) -> int | None:
        if limit is None:
            return self.opts.max_per_trigger
        if HAS_READ_LIMITS and isinstance(limit, ReadMaxRows):
            return int(limit.max_rows)
        return None

    def latestOffset(self, start: dict[str, Any] | None = None, limit: Any = None) -> dict[str, Any]:  # noqa: N802
        begin = self._ckpt.unwrap(start) if start is not None else self._last
        latest = self._next_offsets()
        self._latest = latest
        if self._target is not None:
            latest = {p: min(v, self._target.get(p, v)) for p, v in latest.items()}
        if begin is None:  # no start known (PySpark 4.0/4.1 right after a restart): no limit
            self._last = latest
            return self._ckpt.wrap(latest)
        latest = {p: max(v, begin.get(p, 1)) for p, v in latest.items()}
        budget = self._limit(limit)
        if budget is not None:
            backlog = {p: latest[p] - begin.get(p, 1) for p in latest}
            take = allocate(backlog, budget)
            latest = {p: begin.get(p, 1) + take[p] for p in latest}
        self._last = latest
        return self._ckpt.wrap(latest)

    def getDefaultReadLimit(self) -> ReadLimit:  # noqa: N802
        n = self.opts.max_per_trigger
        return ReadMaxRows(n) if n else ReadAllAvailable()

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        s, e = self._ckpt.unwrap(start), self._ckpt.unwrap(end)
        ranges = [(p, s.get(p, 1), e[p]) for p in sorted(e) if e[p] > s.get(p, 1)]
        return pack(ranges, self.opts.min_per_task) if ranges else []

    def read(self, partition: InputPartition) -> Iterator[Any]:
        assert isinstance(partition, OffsetRange)
        return _read_range(self.opts, partition, self.columns)

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to release: the reads held no locks."""

    def stop(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


if HAS_READ_LIMITS:

    class AvailableNowStreamReader(StreamReader, SupportsTriggerAvailableNow):
        """Trigger.AvailableNow: read up to the offsets there were when the query started."""

        def prepareForTriggerAvailableNow(self) -> None:  # noqa: N802
            self._target = self._next_offsets()


class SbRedisDataSource(DataSource):
    """``spark.read.format("sbredis")`` / ``df.write.format("sbredis")`` (see sbredis.spark)."""

    @classmethod
    def name(cls) -> str:
        return "sbredis"

    def schema(self) -> str:
        self._opts()  # a bad option fails at load(), before any job runs
        return _columns.READ_SCHEMA

    def _opts(self) -> SourceOptions:
        return parse(self.options)

    def reader(self, schema: StructType) -> DataSourceReader:
        opts = self._opts()
        cls = PushdownBatchReader if opts.filter_pushdown else BatchReader
        return cls(opts, _columns.projection(schema))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:  # noqa: N802
        opts = self._opts()
        columns = _columns.projection(schema)
        if opts.mode == "consume":
            from ._consume_stream import ConsumeStreamReader

            return ConsumeStreamReader(opts, columns)
        return AvailableNowStreamReader(opts, columns) if HAS_READ_LIMITS else StreamReader(opts, columns)

    def _write_opts(self, schema: StructType, overwrite: bool) -> SourceOptions:
        opts = self._opts()
        if opts.dead_letter:
            raise UnsupportedEntityError("cannot write to a dead-letter subqueue; write to the queue or topic")
        if overwrite:
            raise InvalidOperationError("an entity cannot be overwritten; use mode('append')")
        _columns.check_write_columns(list(schema.fieldNames()))
        return opts

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from ._sink import BatchWriter

        return BatchWriter(self._write_opts(schema, overwrite))

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:  # noqa: N802
        from ._sink import StreamWriter, check_exactly_once

        opts = self._write_opts(schema, overwrite)
        check_exactly_once(opts)
        return StreamWriter(opts)
