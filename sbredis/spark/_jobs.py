"""What the Spark jobs share: the session, the summary line, handler loading and lock renewal."""

from __future__ import annotations

import importlib
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .._enums import ServiceBusSubQueue
from .._message import ServiceBusReceivedMessage
from ..exceptions import InvalidArgumentError, ServiceBusError
from . import _broker

log = logging.getLogger("sbredis.spark")


def session(app: str, master: str | None = None) -> Any:
    """The job's SparkSession, with Spark's console progress bar on and sbredis registered."""
    from pyspark.sql import SparkSession

    from . import register

    builder = SparkSession.builder.appName(app).config("spark.ui.showConsoleProgress", "true")
    if master:
        builder = builder.master(master)
    spark = builder.getOrCreate()
    register(spark)
    return spark


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


class LockKeeper:
    """Renews, from a thread, the locks of the messages a task holds, every `interval` seconds.

    It has its own connection, so renewals go on while the task's handler runs. A message whose
    lock is lost anyway is left alone: its settlement will report it and it is delivered again.
    """

    def __init__(self, url: str, entity: str, dead_letter: bool, interval: float) -> None:
        self._client = _broker.connect(url)
        sub = ServiceBusSubQueue.DEAD_LETTER if dead_letter else None
        self._receiver = self._client.get_queue_receiver(entity, sub_queue=sub)
        self._held: list[ServiceBusReceivedMessage] = []
        self._mutex = threading.Lock()
        self._stop = threading.Event()
        self.renewed = 0
        self._interval = max(interval, 0.05)
        self._thread = threading.Thread(target=self._run, name="sbredis-lock-keeper", daemon=True)
        self._thread.start()

    def hold(self, messages: list[ServiceBusReceivedMessage]) -> None:
        with self._mutex:
            self._held = self._held + messages

    def drop(self, messages: list[ServiceBusReceivedMessage]) -> None:
        gone = {id(m) for m in messages}
        with self._mutex:
            self._held = [m for m in self._held if id(m) not in gone]

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            with self._mutex:
                held = list(self._held)
            for m in held:
                if self._stop.is_set():
                    return
                if m._settled:
                    continue
                try:
                    self._receiver.renew_message_lock(m)
                    self.renewed += 1
                except ServiceBusError as e:
                    log.debug("lock renewal of %s failed: %s", m.sequence_number, e)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(10)
        self._receiver.close()
        self._client.close()

    def __enter__(self) -> LockKeeper:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def queue_settings(url: str, entity: str) -> tuple[int, float, int]:
    """(partition count, lock duration in seconds, max delivery count) of a queue.

    Raises:
        MessagingEntityNotFoundError: no such queue.
    """
    from ..management import ServiceBusAdministrationClient

    with ServiceBusAdministrationClient.from_connection_string(url) as admin:
        p = admin.get_queue(entity)
    return max(p.partition_count, 1), p.lock_duration.total_seconds(), p.max_delivery_count


def partition_slices(partitions: list[int], tasks: int | None) -> list[list[int]]:
    """Broker partitions dealt to `tasks` Spark tasks (None: one task per partition)."""
    n = len(partitions) if not tasks else max(1, min(tasks, len(partitions)))
    return [partitions[i::n] for i in range(n)]
