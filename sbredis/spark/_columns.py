"""Columns: the read schema, a message as a row, and a row as a message to send.

The read columns follow the Kafka and Event Hubs connectors (body as binary, the broker's
position as partition/offset/sequenceNumber, the message's properties as columns). A row to
write needs ``body``; the other write columns are optional. Read-only columns (offset,
enqueuedTime, ...) are ignored on write, so a DataFrame read from one queue can be written to
another; any other column is refused when the write starts.
"""

from __future__ import annotations

import base64
import json
import math
import os
import uuid
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from .._core import codec
from .._core.protocol.peek import Fields
from .._message import MAX_ID_LENGTH, ServiceBusMessage, ServiceBusReceivedMessage
from ..exceptions import InvalidArgumentError, ServiceBusError

READ_FIELDS = (
    ("entity", "STRING"),
    ("partition", "INT"),
    ("offset", "BIGINT"),
    ("sequenceNumber", "BIGINT"),
    ("body", "BINARY"),
    ("messageId", "STRING"),
    ("enqueuedTime", "TIMESTAMP"),
    ("expiresAt", "TIMESTAMP"),
    ("sessionId", "STRING"),
    ("partitionKey", "STRING"),
    ("correlationId", "STRING"),
    ("subject", "STRING"),
    ("contentType", "STRING"),
    ("applicationProperties", "MAP<STRING, STRING>"),
    ("deliveryCount", "INT"),
    ("deadLetterReason", "STRING"),
    ("deadLetterErrorDescription", "STRING"),
    ("state", "STRING"),
)
READ_COLUMNS = tuple(name for name, _ in READ_FIELDS)
READ_SCHEMA = ", ".join(f"{name} {kind}" for name, kind in READ_FIELDS)

WRITE_COLUMNS = (
    "body",
    "messageId",
    "partitionKey",
    "sessionId",
    "applicationProperties",
    "timeToLive",
    "scheduledEnqueueTime",
    "contentType",
    "correlationId",
    "subject",
)
_STATES = ("active", "deferred", "scheduled")


def _prop_text(value: Any) -> str | None:
    """An application property as the text the map column holds."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode()
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, timedelta):
        return str(value.total_seconds())
    return str(value)


def to_row(m: ServiceBusReceivedMessage) -> tuple[Any, ...]:
    """A peeked message as a tuple in READ_SCHEMA's order."""
    props = m.sent_application_properties
    return (
        m.entity_name,
        m.partition_id,
        m.local_seq,
        m.sequence_number,
        m.body_bytes,
        m.id_text,
        m.enqueued_time_utc,
        m.expires_at_utc,
        m.session_id,
        m.partition_key,
        m.correlation_id,
        m.subject,
        m.content_type,
        None if props is None else {str(k): _prop_text(v) for k, v in props.items()},
        m.delivery_count,
        m.dead_letter_reason,
        m.dead_letter_error_description,
        _STATES[int(m.state)] if m.state is not None else None,
    )


def check_write_columns(names: list[str]) -> None:
    """Raises InvalidArgumentError when `body` is missing or a column is unknown."""
    if "body" not in names:
        raise InvalidArgumentError("a DataFrame written to sbredis needs a 'body' column")
    unknown = [n for n in names if n not in WRITE_COLUMNS and n not in READ_COLUMNS]
    if unknown:
        raise InvalidArgumentError(
            f"unknown column(s) {', '.join(unknown)}; the write columns are {', '.join(WRITE_COLUMNS)}"
        )


class RowError(ValueError):
    """A row that cannot become a message (the reason is the message)."""


def _ttl(value: Any) -> timedelta:
    if isinstance(value, timedelta):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0:
        return timedelta(seconds=value)
    raise RowError(f"timeToLive must be a positive number of seconds or an interval, not {value!r}")


def _when(value: Any) -> datetime | None:
    if value is None or isinstance(value, datetime):
        return value
    raise RowError(f"scheduledEnqueueTime must be a timestamp, not {value!r}")


def _props(value: Any) -> dict[str | bytes, Any]:
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, list):  # a map column through Arrow: [(key, value), ...]
        return {str(k): v for k, v in value}
    raise RowError(f"applicationProperties must be a map, not {type(value).__name__}")


def to_message(row: Mapping[str, Any]) -> ServiceBusMessage:
    """A row (column -> value) as a message.

    Raises:
        RowError: no body, or a value the message refuses (wrong type, too long, ...).
    """
    get = row.get
    body = get("body")
    if body is None:
        raise RowError("body is null")
    if not isinstance(body, (bytes, str)):
        if not isinstance(body, (bytearray, memoryview)):
            raise RowError(f"body must be binary or a string, not {type(body).__name__}")
        body = bytes(body)
    try:
        props, ttl, when = get("applicationProperties"), get("timeToLive"), get("scheduledEnqueueTime")
        return ServiceBusMessage(
            body,
            message_id=get("messageId"),
            partition_key=get("partitionKey"),
            session_id=get("sessionId"),
            application_properties=None if props is None else _props(props),
            time_to_live=None if ttl is None else _ttl(ttl),
            scheduled_enqueue_time_utc=None if when is None else _when(when),
            content_type=get("contentType"),
            correlation_id=get("correlationId"),
            subject=get("subject"),
        )
    except (ServiceBusError, InvalidArgumentError) as e:
        raise RowError(getattr(e, "message", str(e))) from None


def describe(index: int, spark_partition: int, row: Mapping[str, Any]) -> str:
    """How an error names a row: its index in the task's partition and its messageId if any."""
    mid = row.get("messageId")
    return f"row {index} of Spark partition {spark_partition}" + (f" (messageId={mid!r})" if mid else "")


def reject_record(index: int, spark_partition: int, row: Mapping[str, Any], reason: str) -> dict[str, Any]:
    """A bad row as a JSON-ready record for the reject output (binary as base64, times as ISO)."""

    def plain(v: Any) -> Any:
        if isinstance(v, (bytes, bytearray, memoryview)):
            return {"base64": base64.b64encode(bytes(v)).decode()}
        if isinstance(v, datetime):
            return v.astimezone(UTC).isoformat() if v.tzinfo else v.isoformat()
        if isinstance(v, timedelta):
            return v.total_seconds()
        if isinstance(v, uuid.UUID):
            return str(v)
        if isinstance(v, Mapping):
            return {str(k): plain(x) for k, x in v.items()}
        if isinstance(v, list):
            return [plain(x) for x in v]
        return v

    return {
        "sparkPartition": spark_partition,
        "row": index,
        "error": reason,
        "columns": {k: plain(v) for k, v in row.items()},
    }


def encoded_size(m: ServiceBusMessage) -> int:
    return len(m.encoded())


class Encoded:
    """A row already in its stored form, for the send planning (``send_plan.plan_send`` reads
    these members of a message): a row of a body and at most a messageId, which
    :func:`encoded_rows` encodes without building a ServiceBusMessage."""

    __slots__ = ("blob", "id_text")
    partition_key = None
    session_id = None
    ttl_ms = 0
    sched_ms = 0

    def __init__(self, blob: bytes, id_text: str) -> None:
        self.blob = blob
        self.id_text = id_text

    def encoded(self) -> bytes:
        return self.blob


_PLAIN_TYPES = ("binary", "large_binary", "string", "large_string")


def encoded_rows(batch: Any, limit: int) -> list[Encoded] | None:
    """An Arrow batch's rows in their stored form, column-wise, when the batch writes only a body
    (binary or string) and a messageId (string): the blobs :func:`to_message`'s messages encode
    to, without a message object and its checks per row (the bulk load's larger per-row cost).
    None when the batch has another write column, or a row that the per-row path must judge (a
    null body, an empty or too long messageId, a message over `limit` bytes): that path names
    or rejects the row."""
    names = batch.schema.names
    if "body" not in names or any(n in WRITE_COLUMNS and n not in ("body", "messageId") for n in names):
        return None
    body = batch.column(names.index("body"))
    if body.null_count or str(body.type) not in _PLAIN_TYPES:
        return None
    bodies = body.to_pylist()
    if str(body.type).endswith("string"):
        bodies = [b.encode() for b in bodies]
    if "messageId" in names:
        ids = batch.column(names.index("messageId"))
        if not str(ids.type).endswith("string"):
            return None
        mids = ids.to_pylist()
    else:
        mids = [None] * len(bodies)
    out = []
    for b, mid in zip(bodies, mids, strict=True):
        if mid is None:  # as ServiceBusMessage makes one
            mid = os.urandom(16).hex()
            blob = codec.encode_generated_id(mid, b)
        elif not mid or len(mid) > MAX_ID_LENGTH:
            return None
        else:
            blob = codec.encode({"id": mid}, b)
        if len(blob) > limit:
            return None
        out.append(Encoded(blob, mid))
    return out


def projection(schema: Any) -> tuple[int, ...]:
    """The READ_SCHEMA positions of a user's schema's fields (a subset of the read columns).

    Raises:
        InvalidArgumentError: a field that is not a read column.
    """
    names = list(schema.fieldNames())
    unknown = [n for n in names if n not in READ_COLUMNS]
    if unknown:
        raise InvalidArgumentError(
            f"unknown column(s) {', '.join(unknown)} in the schema; the read columns are {', '.join(READ_COLUMNS)}"
        )
    return tuple(READ_COLUMNS.index(n) for n in names)


def _arrow_types() -> dict[str, Any]:
    import pyarrow as pa  # type: ignore[import-untyped]

    return {
        "STRING": pa.string(),
        "INT": pa.int32(),
        "BIGINT": pa.int64(),
        "BINARY": pa.binary(),
        "TIMESTAMP": pa.timestamp("us", tz="UTC"),
        "MAP<STRING, STRING>": pa.map_(pa.string(), pa.string()),
    }


class ArrowBatches:
    """Rows (tuples in READ_SCHEMA order) to Arrow record batches of the projected columns."""

    def __init__(self, columns: tuple[int, ...], size: int = 2000) -> None:
        import pyarrow as pa

        types = _arrow_types()
        self.columns = columns
        self.size = size
        self.schema = pa.schema([(READ_FIELDS[i][0], types[READ_FIELDS[i][1]]) for i in columns])

    def batch(self, rows: list[tuple[Any, ...]]) -> Any:
        import pyarrow as pa

        arrays = []
        for field, i in zip(self.schema, self.columns, strict=True):
            values = [r[i] for r in rows]
            if READ_FIELDS[i][1].startswith("MAP"):
                values = [None if v is None else list(v.items()) for v in values]
            arrays.append(pa.array(values, type=field.type))
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)

    def of(self, rows: Iterator[tuple[Any, ...]]) -> Iterator[Any]:
        chunk: list[tuple[Any, ...]] = []
        for r in rows:
            chunk.append(r)
            if len(chunk) >= self.size:
                yield self.batch(chunk)
                chunk = []
        if chunk:
            yield self.batch(chunk)


# read columns taken from the stored header, and their header keys
_HEADER_KEYS = {
    "messageId": codec.FIELDS["message_id"],
    "sessionId": codec.FIELDS["session_id"],
    "correlationId": codec.FIELDS["correlation_id"],
    "subject": codec.FIELDS["subject"],
    "contentType": codec.FIELDS["content_type"],
}
_NEEDS_HEADER = {*_HEADER_KEYS, "partitionKey", "applicationProperties"}


def _tagged_text(value: Any) -> str | None:
    """A stored property value as the map column's text, a tagged one (bytes, datetime, ...) decoded."""
    if isinstance(value, dict):
        value = codec.decode_properties({"": value})[""]
    return _prop_text(value)


def _props_column(props: list[dict[str, Any] | None], kind: Any) -> Any:
    """The stored application properties of a page's rows as one Arrow map array: the keys and
    values of every row end to end with their offsets (MapArray.from_arrays), which costs a
    quarter of building the array from a list of (key, text) pairs per row, the map column
    being the priciest of the read."""
    import pyarrow as pa

    offsets = [0]
    keys: list[str] = []
    values: list[Any] = []
    nulls = 0
    for ap in props:
        if ap is None:
            nulls += 1
        else:
            keys.extend(ap)
            values.extend(ap.values())
        offsets.append(len(keys))
    if nulls == len(props):
        return pa.nulls(nulls, kind)
    if set(map(type, values)) - {str}:  # numbers, booleans, nulls and tagged types as text
        values = [v if type(v) is str else _tagged_text(v) for v in values]
    mask = pa.array([ap is None for ap in props], pa.bool_()) if nulls else None
    return pa.MapArray.from_arrays(
        pa.array(offsets, pa.int32()), pa.array(keys, pa.string()), pa.array(values, pa.string()), kind, mask=mask
    )


class ArrowPages:
    """Pages of a peek reply to Arrow record batches of the projected columns, column by column
    and without building message objects: the batch read's per-row cost is a header parse, and
    none when no projected column needs the header."""

    def __init__(self, columns: tuple[int, ...]) -> None:
        import pyarrow as pa

        types = _arrow_types()
        self.names = [READ_FIELDS[i][0] for i in columns]
        self.schema = pa.schema([(READ_FIELDS[i][0], types[READ_FIELDS[i][1]]) for i in columns])
        self.header = bool(_NEEDS_HEADER.intersection(self.names))
        self.shows_state = bool({"deliveryCount", "state"}.intersection(self.names))

    def batch(self, entity: str, partition: int | list[int], f: Fields) -> Any:
        """`partition`: the page's partition, or each row's (a page of several partitions).

        Raises:
            ValueError: a stored value that sbredis did not write."""
        import pyarrow as pa
        import pyarrow.compute as pc  # type: ignore[import-untyped]

        n = len(f.raw)
        ends = [5 + int.from_bytes(b[1:5], "big") for b in f.raw]
        if any(b[:1] != codec.VERSION for b in f.raw):
            where = f"partition {partition}" if isinstance(partition, int) else "a partition"
            raise ValueError(f"{where} of '{entity}' holds a value that is not an sbredis message")
        each = None if isinstance(partition, int) else partition
        # every header of the page in one json.loads: a third cheaper than one decode call each
        headers: list[dict[str, Any]] = (
            json.loads(b"[" + b",".join([b[5:e] for b, e in zip(f.raw, ends, strict=True)]) + b"]")
            if self.header and n
            else []
        )
        # Constant, absent and numeric columns are made by Arrow, not a Python value per row: the
        # keys no header of the page has (most messages set few properties) are null columns.
        present: set[str] = set().union(*headers) if headers else set()
        ts = pa.timestamp("us", tz="UTC")
        arrays = []
        for name, field in zip(self.names, self.schema, strict=True):
            if name == "entity":
                a = pa.repeat(pa.scalar(entity, field.type), n)
            elif name == "partition":
                a = pa.repeat(pa.scalar(partition, field.type), n) if each is None else pa.array(each, field.type)
            elif name == "offset":
                a = pa.array(f.local_seq, field.type)
            elif name == "sequenceNumber":
                if isinstance(partition, int):
                    high = pa.scalar(partition << 40, pa.int64())
                else:
                    high = pc.shift_left(pa.array(partition, pa.int64()), 40)
                a = pc.bit_wise_or(pa.array(f.local_seq, pa.int64()), high)
            elif name == "body":
                a = pa.array([b[e:] for b, e in zip(f.raw, ends, strict=True)], field.type)
            elif name in _HEADER_KEYS:
                key = _HEADER_KEYS[name]
                a = pa.array([h.get(key) for h in headers], field.type) if key in present else pa.nulls(n, field.type)
            elif name == "partitionKey":
                pk, sid = codec.FIELDS["partition_key"], codec.FIELDS["session_id"]
                if pk in present or sid in present:
                    a = pa.array([h.get(pk, h.get(sid)) for h in headers], field.type)
                else:
                    a = pa.nulls(n, field.type)
            elif name == "applicationProperties":
                a = (
                    _props_column([h.get("ap") for h in headers], field.type)
                    if "ap" in present
                    else pa.nulls(n, field.type)
                )
            elif name == "enqueuedTime":
                a = pc.multiply(pa.array(f.enqueued_ms, pa.int64()), 1000).cast(ts)
            elif name == "expiresAt":  # 0: never expires
                ms = pa.array(f.expires_ms, pa.int64())
                a = pc.if_else(pc.equal(ms, 0), pa.scalar(None, pa.int64()), pc.multiply(ms, 1000)).cast(ts)
            elif name == "deliveryCount":
                a = pa.array(f.delivery_count, field.type)
            elif name == "deadLetterReason":
                a = pa.array(f.dead_letter_reason, field.type)
            elif name == "deadLetterErrorDescription":
                a = pa.array(f.dead_letter_error_description, field.type)
            elif any(f.state):  # state
                a = pa.array([_STATES[s] for s in f.state], field.type)
            else:
                a = pa.repeat(pa.scalar(_STATES[0], field.type), n)
            arrays.append(a)
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)


def fields_of(msgs: list[ServiceBusReceivedMessage]) -> Fields:
    """Received messages of one partition as the columns of a peek page, for ArrowPages: the
    consuming source's rows are built column-wise from the stored values, as the peek reads'
    are, rather than through each message's properties."""
    enqueued = [m.enqueued_time_utc for m in msgs]
    expires = [m.expires_at_utc for m in msgs]
    return Fields(
        [m.local_seq for m in msgs],
        [m.delivery_count for m in msgs],
        [int(m.state) if m.state is not None else 0 for m in msgs],
        [m.encoded() for m in msgs],
        [codec.to_ms(t) for t in enqueued],
        [codec.to_ms(t) if t is not None else 0 for t in expires],
        [m.dead_letter_reason for m in msgs],
        [m.dead_letter_error_description for m in msgs],
    )


def received_batches(pages: ArrowPages, msgs: list[ServiceBusReceivedMessage]) -> Iterator[Any]:
    """Arrow record batches of received messages, one per partition among them, in order."""
    by_partition: dict[int, list[ServiceBusReceivedMessage]] = {}
    for m in msgs:
        by_partition.setdefault(m.partition_id, []).append(m)
    for p, group in by_partition.items():
        yield pages.batch(group[0].entity_name, p, fields_of(group))


def joined(pages: list[tuple[int, Fields]]) -> tuple[list[int], Fields]:
    """Pages of several partitions as one: each row's partition, and the columns end to end (one
    Arrow batch per receive round rather than one per partition: every batch costs the worker and
    the JVM a fixed amount)."""
    partitions = [p for p, f in pages for _ in f.raw]
    fields = zip(*(f for _, f in pages), strict=True)  # per column, its list on each page
    columns: list[list[Any]] = [[x for page in field for x in page] for field in fields]
    return partitions, Fields(*columns)


BATCH_ROWS = 8192  # rows of an Arrow batch a read yields, at least (but for the last)


def joined_batch(pages: ArrowPages, entity: str, held: list[tuple[int, Fields]]) -> Any:
    """One Arrow batch of the pages `held` (partition, page), of one partition or several."""
    if len(held) == 1:
        return pages.batch(entity, *held[0])
    rows, fields = joined(held)
    return pages.batch(entity, rows, fields)
