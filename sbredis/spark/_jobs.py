"""What the Spark jobs share: the session, the summary line, handler loading and lock renewal
(``sbredis.AutoLockRenewer``)."""

from __future__ import annotations

import importlib
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .._message import ServiceBusReceivedMessage
from .._sync._renewer import AutoLockRenewer
from ..exceptions import InvalidArgumentError

log = logging.getLogger(__name__)


def session(app: str, master: str | None = None, remote: str | None = None) -> Any:
    """The job's SparkSession, with sbredis registered: classic (`master`, or spark-submit's), or
    Spark Connect with `remote` (``sc://host:port``, or ``local[2]`` for a local Connect server;
    the SPARK_REMOTE environment variable does the same)."""
    from pyspark.sql import SparkSession

    from . import register

    builder = SparkSession.builder.appName(app)
    if remote:
        builder = builder.remote(remote)
    else:
        builder = builder.config("spark.ui.showConsoleProgress", "true")
        use_this_python()
        if master:
            builder = builder.master(master)
    spark = builder.getOrCreate()
    register(spark)
    return spark


def is_connect(spark: Any) -> bool:
    """Whether `spark` is a Spark Connect session (no SparkContext, no JVM on this side)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def describe(spark: Any, text: str) -> None:
    """Name the next Spark jobs in the UI (classic sessions; Connect has no SparkContext)."""
    if not is_connect(spark):
        spark.sparkContext.setJobDescription(text)


def default_parallelism(spark: Any) -> int:
    """Spark's default parallelism (the conf on Spark Connect, where there is no SparkContext)."""
    if not is_connect(spark):
        return int(spark.sparkContext.defaultParallelism)
    value = spark.conf.get("spark.default.parallelism", None)
    return int(value) if value else 2


def run_tasks(spark: Any, work: list[Any], fn: Callable[[Any], dict[str, int]]) -> list[dict[str, int]]:
    """``fn(item)`` for each item of `work`, one Spark task each; the results. Built on
    DataFrames (``range`` + ``mapInArrow``), so it runs on classic and Spark Connect alike."""
    import json

    if not work:
        return []

    def run(batches: Any) -> Any:
        import pyarrow as pa  # type: ignore[import-untyped]

        for b in batches:
            out = [json.dumps(fn(work[i])) for i in b.column(0).to_pylist()]
            yield pa.RecordBatch.from_pydict({"counts": out})

    rows = spark.range(0, len(work), 1, len(work)).mapInArrow(run, "counts string").collect()
    return [json.loads(r["counts"]) for r in rows]


def use_this_python() -> None:
    """Make Spark's Python workers run this interpreter unless the user chose one: PySpark takes
    theirs from PYSPARK_PYTHON when the session starts (the SparkContext's ``pythonExec``, and the
    JVM's for its data source lookup), not from the Spark conf spark.pyspark.python; unset, they
    run ``python3`` from PATH, which may lack sbredis. spark-submit sets it from that conf."""
    import os
    import sys

    if not os.environ.get("PYSPARK_PYTHON"):
        os.environ["PYSPARK_PYTHON"] = sys.executable


@dataclass
class Summary:
    """A job's closing line: messages, seconds, msgs/s, and the job's own counts."""

    job: str
    messages: int
    seconds: float
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def rate(self) -> float:
        return self.messages / self.seconds if self.seconds > 0 else 0.0

    def line(self) -> str:
        extra = "".join(f", {k}={v}" for k, v in self.counts.items())
        return f"{self.job}: {self.messages} messages, {self.seconds:.2f} s, {self.rate:,.0f} msgs/s{extra}"


class Timer:
    def __init__(self) -> None:
        self.start = time.perf_counter()

    def seconds(self) -> float:
        return time.perf_counter() - self.start


def load_handler(spec: str) -> Callable[[ServiceBusReceivedMessage], Any]:
    """``package.module:function`` as the function.

    Raises:
        InvalidArgumentError: not that form, or the module or function cannot be found.
    """
    module, sep, name = spec.partition(":")
    if not sep or not module or not name:
        raise InvalidArgumentError(f"a handler is 'module:function', not {spec!r}")
    try:
        obj: Any = importlib.import_module(module)
    except ImportError as e:
        raise InvalidArgumentError(f"cannot import the handler module {module!r}: {e}") from None
    for part in name.split("."):
        if not hasattr(obj, part):
            raise InvalidArgumentError(f"the handler module {module!r} has no {name!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise InvalidArgumentError(f"the handler {spec!r} is not callable")
    return obj  # type: ignore[no-any-return]


def renewer(max_seconds: float) -> AutoLockRenewer:
    """The task's lock renewer: it renews every registered message's lock when a third of its
    duration is left, from one thread, until the message is settled (at most `max_seconds`)."""
    return AutoLockRenewer(max_lock_renewal_duration=max_seconds)


def hold(renew: AutoLockRenewer, receiver: Any, now_ms: int, msgs: list[ServiceBusReceivedMessage]) -> None:
    """Register `msgs` (received with the partition-level receive, whose reply said the server's
    time was `now_ms`) for renewal through `receiver`, which settles them."""
    receiver.saw_server_time(now_ms)  # the renewer times locks by the server's clock
    for m in msgs:
        renew.register(receiver, m)


class LateHold:
    """Registers a batch's locks for renewal only once the batch has been held for a quarter of
    the lock duration: most batches are settled well before that, and registering every message
    cost the consume job more CPU than receiving it. A daemon thread watches the current batch;
    use as a context manager around the task's loop, with ``start`` after a receive and ``stop``
    before the batch is settled."""

    def __init__(self, renew: AutoLockRenewer, lock_seconds: float) -> None:
        self.renew = renew
        self.after = max(lock_seconds / 4, 0.0)
        self._cv = threading.Condition()
        self._batch: tuple[float, Any, int, list[ServiceBusReceivedMessage]] | None = None
        self._closed = False
        self._thread = threading.Thread(target=self._watch, name="sbredis-spark-late-hold", daemon=True)

    def __enter__(self) -> LateHold:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        with self._cv:
            self._closed = True
            self._cv.notify()
        self._thread.join()

    def start(self, receiver: Any, now_ms: int, msgs: list[ServiceBusReceivedMessage]) -> None:
        with self._cv:
            self._batch = (time.monotonic() + self.after, receiver, now_ms, msgs)
            self._cv.notify()

    def stop(self) -> None:
        """The batch is done with: settling it next needs no renewal (registered ones stop by
        themselves once settled)."""
        with self._cv:
            self._batch = None

    def _watch(self) -> None:
        with self._cv:
            while not self._closed:
                if self._batch is None:
                    self._cv.wait()
                    continue
                due, receiver, now_ms, msgs = self._batch
                wait = due - time.monotonic()
                if wait > 0:
                    self._cv.wait(wait)
                    continue
                self._batch = None
                try:
                    hold(self.renew, receiver, now_ms, [m for m in msgs if not m.settled])
                except Exception:  # the locks elapse and the messages come back: at least once
                    log.exception("registering a batch's locks for renewal failed")


def queue_settings(url: str, entity: str) -> tuple[int, float, int]:
    """(partition count, lock duration in seconds, max delivery count) of a queue or of a
    subscription path ``<topic>/Subscriptions/<name>``.

    Raises:
        MessagingEntityNotFoundError: no such queue or subscription.
    """
    from .._core.keys import SUBSCRIPTIONS
    from ..management import ServiceBusAdministrationClient

    topic, sep, sub = entity.partition(SUBSCRIPTIONS)
    with ServiceBusAdministrationClient.from_connection_string(url) as admin:
        if sep:
            s = admin.get_subscription(topic, sub)
            count = admin.get_topic(topic).partition_count
            return max(count, 1), s.lock_duration.total_seconds(), s.max_delivery_count
        p = admin.get_queue(entity)
    return max(p.partition_count, 1), p.lock_duration.total_seconds(), p.max_delivery_count


def partition_slices(partitions: list[int], tasks: int | None) -> list[list[int]]:
    """Broker partitions dealt to `tasks` Spark tasks (None: one task per partition)."""
    n = len(partitions) if not tasks else max(1, min(tasks, len(partitions)))
    return [partitions[i::n] for i in range(n)]
