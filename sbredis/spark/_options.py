"""The data source's options: what each means, its default, and the errors for bad values.

Options are strings (Spark passes them so); names are case-insensitive, as Spark's are.

=========================  =======================================================================
option                     meaning
=========================  =======================================================================
url                        the Redis URL (``redis://``, ``rediss://``, ``unix://``); required
entity (or queue, name)    a queue, a topic (write only) or a subscription path
                           ``<topic>/Subscriptions/<name>`` (read only); or give:
topic, subscription        ``topic`` alone names a topic (write: each row is published to its
                           subscriptions); with ``subscription`` it names that subscription (read)
subQueue                   ``deadletter`` reads the dead-letter subqueue (read only)
startingOffsets            ``earliest`` | ``latest`` | JSON per partition (batch default earliest,
                           streaming default latest)
endingOffsets              ``latest`` | JSON per partition (batch only; default latest)
partialEndingOffsets       ``error`` (default): an endingOffsets JSON must name every partition;
                           ``latest``: the partitions it leaves out are read to latest
filterPushdown             batch read: ``true`` pushes filters on partition, offset,
                           sequenceNumber and enqueuedTime into the read (needs the Spark SQL
                           conf spark.sql.python.filterPushdown.enabled=true)
mode                       streaming read: ``peek`` (default) or ``consume`` (_consume_stream)
maxMessagesPerTrigger      streaming read: at most this many offsets (peek) or messages (consume)
(or maxOffsetsPerTrigger)  per micro-batch
consumerTasks              consume: Spark tasks per micro-batch (default: one per
                           minOffsetsPerTask messages of its quota, at most partitions and 8)
receiveWaitSeconds         consume: how long a task waits for a first message (default 1)
maxLockRenewalSeconds      consume: how long a batch's locks are renewed at most (default 3600)
pageSize                   messages per peek call when reading (default 1000)
minOffsetsPerTask          peek reads: broker partitions are packed into one Spark task until it
                           covers at least this many offsets (default 100000 for a batch read,
                           50000 for a stream's micro-batch; 1: one task each); consume: the
                           default consumerTasks is one per this many messages (default 50000)
deliveryGuarantee          streaming write: ``exactlyOnce`` (default; the entity must have
                           duplicate detection) or ``atLeastOnce`` (any entity)
sendBatchSize              messages per send call when writing (default 500; also bounded by the
                           entity's maximum batch size in bytes)
rejectPath                 write: a directory; bad rows go there as JSON lines instead of failing
reportPath                 write: a file; the batch write's counts are written there as JSON
socketTimeout              seconds per Redis call (default 30)
=========================  =======================================================================

Offsets are partition-local sequence numbers: a partition's offset N is the message with local
sequence number N, and the JSON form maps partition numbers to offsets, Kafka-style:
``{"0": 17, "3": -2}`` (-2 earliest, -1 latest). Kafka's nesting under the entity name,
``{"orders": {"0": 17}}``, is accepted too. A starting offset is inclusive, an ending offset
exclusive; partitions missing from a startingOffsets JSON take the default, and an endingOffsets
JSON must name every partition unless ``partialEndingOffsets`` is ``latest``. Any other option
name is refused.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .._core.entity import check_name
from .._core.keys import SUBSCRIPTIONS, subscription_path
from .._core.protocol import Group
from .._core.topic_entity import check_subscription_name
from ..exceptions import InvalidArgumentError, InvalidOperationError

EARLIEST, LATEST = -2, -1


class UnsupportedEntityError(InvalidOperationError):
    """The entity cannot be used this way: reading a topic (it keeps no messages of its own; read
    a subscription) or writing to a subscription or a dead-letter subqueue."""


@dataclass(frozen=True)
class SourceOptions:
    """Parsed options (picklable: they travel to the executors)."""

    url: str = field(repr=False)  # may hold a password: never in a repr
    entity: str
    group: Group
    starting: str | None
    ending: str | None
    max_per_trigger: int | None
    page_size: int
    send_batch_size: int
    reject_path: str | None
    report_path: str | None
    socket_timeout: float
    mode: str = "peek"  # streaming read: 'peek' (a read-only view) or 'consume' (peek-lock, completed on commit)
    tasks: int | None = None  # consume mode: Spark tasks per micro-batch
    receive_wait: float = 1.0  # consume mode: seconds a task waits for the first message
    max_renewal: float = 3600.0  # consume mode: seconds a batch's locks are renewed at most
    partial_ending: bool = False  # endingOffsets may leave partitions out (they read to latest)
    filter_pushdown: bool = False  # batch read: push partition/offset/sequenceNumber/enqueuedTime filters
    at_least_once: bool = False  # streaming write: allowed on an entity without duplicate detection
    min_per_task: int = 50_000  # offsets (peek stream) or messages (consume) a Spark task takes at least
    # offsets a batch read's Spark task takes at least: a task costs Spark about 60 ms of CPU
    # (its Python worker's round and the JVM's), a tenth of a 100,000-message task's
    read_per_task: int = 100_000

    @property
    def dead_letter(self) -> bool:
        return self.group is Group.DEAD_LETTER


def _positive_int(name: str, raw: str | None, default: int | None, upper: int = 1 << 62) -> int | None:
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise InvalidArgumentError(f"option {name} must be a positive integer, not {raw!r}") from None
    if not 1 <= value <= upper:
        raise InvalidArgumentError(f"option {name} must be between 1 and {upper}, not {value}")
    return value


NAMES = (
    "url",
    "entity",
    "queue",
    "name",
    "topic",
    "subscription",
    "subQueue",
    "mode",
    "startingOffsets",
    "endingOffsets",
    "partialEndingOffsets",
    "filterPushdown",
    "deliveryGuarantee",
    "maxMessagesPerTrigger",
    "maxOffsetsPerTrigger",
    "consumerTasks",
    "receiveWaitSeconds",
    "maxLockRenewalSeconds",
    "pageSize",
    "minOffsetsPerTask",
    "sendBatchSize",
    "rejectPath",
    "reportPath",
    "socketTimeout",
)
KNOWN = frozenset(n.lower() for n in NAMES) | {
    "subscriptions",
    "checkpointlocation",
}  # Spark passes the latter to sinks


def _flag(name: str, raw: str | None) -> bool:
    value = (raw or "false").strip().lower()
    if value not in ("true", "false"):
        raise InvalidArgumentError(f"option {name} must be 'true' or 'false', not {raw!r}")
    return value == "true"


def _guarantee(raw: str | None) -> bool:
    value = (raw or "exactlyOnce").strip().lower().replace("_", "").replace("-", "")
    if value not in ("exactlyonce", "atleastonce"):
        raise InvalidArgumentError(f"option deliveryGuarantee must be 'exactlyOnce' or 'atLeastOnce', not {raw!r}")
    return value == "atleastonce"


def _partial(raw: str | None) -> bool:
    value = (raw or "error").strip().lower()
    if value not in ("error", "latest"):
        raise InvalidArgumentError(f"option partialEndingOffsets must be 'error' or 'latest', not {raw!r}")
    return value == "latest"


def _mode(raw: str | None) -> str:
    mode = (raw or "peek").strip().lower()
    if mode not in ("peek", "consume"):
        raise InvalidArgumentError(f"option mode must be 'peek' or 'consume', not {raw!r}")
    return mode


def _seconds(name: str, raw: str | None, default: float) -> float:
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise InvalidArgumentError(f"option {name} must be seconds, not {raw!r}") from None
    if not 0 < value < 1e9:
        raise InvalidArgumentError(f"option {name} must be positive, not {raw!r}")
    return value


def parse(options: Mapping[str, Any]) -> SourceOptions:
    """Check the options once, on the driver, so a mistake fails before any task runs.

    Raises:
        InvalidArgumentError: a missing or bad option.
    """
    opts = {str(k).lower(): None if v is None else str(v) for k, v in options.items()}
    unknown = sorted(k for k in opts if k not in KNOWN)
    if unknown:
        raise InvalidArgumentError(
            f"unknown option(s) {', '.join(unknown)}; the options of sbredis are {', '.join(NAMES)}"
        )
    url = opts.get("url")
    if not url:
        raise InvalidArgumentError("option 'url' is required (redis://host:port/db)")
    entity = entity_path(opts)
    sub = (opts.get("subqueue") or "").lower().replace("_", "").replace("-", "")
    if sub in ("", "none", "main"):
        group = Group.MAIN
    elif sub in ("deadletter", "dlq"):
        group = Group.DEAD_LETTER
    else:
        raise InvalidArgumentError(f"option subQueue must be 'deadletter' or unset, not {opts.get('subqueue')!r}")
    timeout_raw = opts.get("sockettimeout") or "30"
    try:
        timeout = float(timeout_raw)
    except ValueError:
        raise InvalidArgumentError(f"option socketTimeout must be seconds, not {timeout_raw!r}") from None
    if not timeout > 0:
        raise InvalidArgumentError("option socketTimeout must be positive")
    parsed = SourceOptions(
        url=url,
        entity=entity,
        group=group,
        starting=opts.get("startingoffsets"),
        ending=opts.get("endingoffsets"),
        max_per_trigger=_positive_int(
            "maxMessagesPerTrigger", opts.get("maxmessagespertrigger") or opts.get("maxoffsetspertrigger"), None
        ),
        page_size=_positive_int("pageSize", opts.get("pagesize"), 1000, 5000) or 1000,
        send_batch_size=_positive_int("sendBatchSize", opts.get("sendbatchsize"), 500, 1000) or 500,
        reject_path=opts.get("rejectpath") or None,
        report_path=opts.get("reportpath") or None,
        socket_timeout=timeout,
        mode=_mode(opts.get("mode")),
        tasks=_positive_int("consumerTasks", opts.get("consumertasks"), None, 1024),
        receive_wait=_seconds("receiveWaitSeconds", opts.get("receivewaitseconds"), 1.0),
        max_renewal=_seconds("maxLockRenewalSeconds", opts.get("maxlockrenewalseconds"), 3600.0),
        partial_ending=_partial(opts.get("partialendingoffsets")),
        filter_pushdown=_flag("filterPushdown", opts.get("filterpushdown")),
        at_least_once=_guarantee(opts.get("deliveryguarantee")),
        min_per_task=_positive_int("minOffsetsPerTask", opts.get("minoffsetspertask"), 50_000) or 50_000,
        read_per_task=_positive_int("minOffsetsPerTask", opts.get("minoffsetspertask"), 100_000) or 100_000,
    )
    for name, value in (("startingOffsets", parsed.starting), ("endingOffsets", parsed.ending)):
        if value is not None:
            offset_spec(name, value, parsed.entity)  # fail early on a bad spec
    return parsed


def entity_path(opts: Mapping[str, str | None]) -> str:
    """The entity path the (lower-cased) options name: a queue or topic name, or
    ``<topic>/Subscriptions/<subscription>`` (also given as options ``topic`` + ``subscription``).

    Raises:
        InvalidArgumentError: no entity, both forms at once, or a bad name.
    """
    entity = opts.get("entity") or opts.get("queue") or opts.get("name")
    topic = opts.get("topic")
    sub = opts.get("subscription") or opts.get("subscriptions")
    if entity and (topic or sub):
        raise InvalidArgumentError("give either option 'entity' or options 'topic' (and 'subscription'), not both")
    if sub and not topic:
        raise InvalidArgumentError("option 'subscription' needs option 'topic'")
    if not entity and not topic:
        raise InvalidArgumentError("option 'entity' (a queue, topic or subscription path) is required")
    if entity:
        i = entity.lower().find(SUBSCRIPTIONS.lower())
        if i < 0:
            return check_name(entity, "entity")
        topic, sub = entity[:i], entity[i + len(SUBSCRIPTIONS) :]
    assert topic is not None
    check_name(topic, "topic")
    return subscription_path(topic, check_subscription_name(sub)) if sub else topic


def offset_spec(name: str, raw: str, entity: str) -> int | dict[int, int]:
    """``earliest``/``latest`` as EARLIEST/LATEST, or the JSON form as {partition: offset}.

    Raises:
        InvalidArgumentError: neither form, or a bad partition or offset in the JSON.
    """
    text = raw.strip()
    if text.lower() == "earliest":
        return EARLIEST
    if text.lower() == "latest":
        return LATEST
    try:
        spec = json.loads(text)
    except ValueError:
        raise InvalidArgumentError(
            f"option {name} must be 'earliest', 'latest' or JSON such as {{\"0\": 5}}, not {raw!r}"
        ) from None
    if isinstance(spec, dict) and len(spec) == 1 and isinstance(spec.get(entity), dict):
        spec = spec[entity]  # Kafka's {"topic": {"0": 5}}
    if not isinstance(spec, dict):
        raise InvalidArgumentError(f"option {name}: the JSON must be an object of partition -> offset")
    out: dict[int, int] = {}
    for k, v in spec.items():
        try:
            p = int(k)
        except ValueError:
            raise InvalidArgumentError(f"option {name}: {k!r} is not a partition number") from None
        if p < 0 or isinstance(v, bool) or not isinstance(v, int) or v < EARLIEST:
            raise InvalidArgumentError(f"option {name}: partition {k}: offset {v!r} is not -2, -1 or >= 0")
        out[p] = v
    return out


def namespace(url: str) -> str:
    """The Redis server and database a URL names, without credentials: what a checkpoint records
    so that a query does not resume against another server."""
    from urllib.parse import parse_qs, urlsplit

    u = urlsplit(url)
    if u.scheme == "unix":
        db = parse_qs(u.query).get("db", ["0"])[0]
        return f"unix://{u.path}/{db}"
    db = (u.path or "/0").strip("/") or "0"
    return f"{u.hostname or 'localhost'}:{u.port or 6379}/{db}"
