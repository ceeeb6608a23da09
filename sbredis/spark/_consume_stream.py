"""``readStream.option("mode", "consume")``: a streaming source that consumes, at least once.

Offsets are micro-batch numbers, not message positions: the checkpoint's offset is
``{"namespace", "entity", "subQueue", "query", "batch", "quota"}``, where ``query`` is a random id
made when the query first starts (kept by the checkpoint, so a restart finds its ledger) and
``quota`` the most messages that batch may take.

* Driver, ``latestOffset(start)``: Spark asks for it only once the batch ending at ``start`` is
  in its commit log, so it completes the locks of the batches up to ``start`` (see ``commit``);
  then, when the entity has active messages besides those, the next batch is ``batch + 1`` with a
  quota of min(active messages, maxMessagesPerTrigger or 10,000). The completion runs on a
  thread while Spark runs that next batch; when there is no next batch, latestOffset waits for
  it, so a query that stops has completed what it committed.
* Driver, ``partitions``: the quota split over ``consumerTasks`` input partitions (default: one
  per ``minOffsetsPerTask`` messages of the quota, at most the entity's partition count and 8);
  the driver starts watching the batch's ledger.
* Executor, ``read``: a public peek-lock receiver takes up to the task's quota (competing with
  any other receiver of the entity), records each receive call's locks in the ledger
  (:mod:`._ledger`) and only then yields the rows. A retried task first abandons what its
  earlier attempt recorded.
* Driver, a thread: reads new ledger lines every quarter of the lock duration (at most 5 s)
  and, once a third of the lock duration may have passed since they were taken, registers the
  locks with an ``AutoLockRenewer``, so they stay held while Spark processes the batch and until
  it commits.
* Driver, ``commit(end)``: completes every recorded lock of the batches up to ``end``, one
  script call per broker partition and lock nonce, and drops their ledger. Spark calls it only
  when it plans the batch after the next one, so ``latestOffset`` has mostly started it already;
  an AvailableNow query needs no extra, empty, batch to complete its last one.

A batch that fails, or a query that dies, completes nothing: the renewals stop, the locks elapse
and the messages are delivered again with their delivery count one higher, to this query's next
batch or to any other receiver; past the entity's maximum delivery count they are dead-lettered.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadMaxRows, SupportsTriggerAvailableNow

from .._enums import ServiceBusSubQueue
from .._message import ServiceBusReceivedMessage
from .._sync._renewer import AutoLockRenewer
from ..exceptions import InvalidOperationError
from . import _broker, _columns
from ._jobs import queue_settings
from ._ledger import Entry, Ledger, Locks
from ._options import SourceOptions, namespace

DEFAULT_QUOTA = 10_000
_PAGE = 1000
_ROUND = 8000  # messages a task's pipelined receive round asks for at most (one Arrow batch)
_LOCAL = (1 << 40) - 1  # the partition-local part of a sequence number


class Lease(InputPartition):
    """One task of a consuming micro-batch: take up to `quota` messages, record them in slot `slot`."""

    def __init__(self, query: str, batch: int, slot: int, quota: int) -> None:
        super().__init__((query, batch, slot, quota))
        self.query = query
        self.batch = batch
        self.slot = slot
        self.quota = quota


def _sub_queue(opts: SourceOptions) -> ServiceBusSubQueue | None:
    return ServiceBusSubQueue.DEAD_LETTER if opts.dead_letter else None


def _ms(m: ServiceBusReceivedMessage) -> int:
    return m.locked_until_ms


def _again(
    client: Any, receiver: Any, opts: SourceOptions, entries: list[Entry]
) -> Iterator[ServiceBusReceivedMessage]:
    """The messages an earlier read of the slot took whose locks are still ours (renewed now)."""
    handles = _handles(receiver.entity_name, opts.group, entries)
    held = [h for h, ok in zip(handles, _broker.renew_all(receiver, handles), strict=True) if ok]
    by_partition: dict[int, set[int]] = {}
    for h in held:
        by_partition.setdefault(h.partition_id, set()).add(h.sequence_number)
    for p, seqs in sorted(by_partition.items()):
        lo, hi = min(seqs) & _LOCAL, (max(seqs) & _LOCAL) + 1
        for m in _broker.peek_range(client, opts.entity, p, opts.group, lo, hi, _PAGE):
            if m.sequence_number in seqs:
                yield m


def received_locks(msgs: list[ServiceBusReceivedMessage]) -> list[Locks]:
    """The locks of received messages for the ledger, per partition and lock nonce (a message
    that holds none left out)."""
    groups: dict[tuple[int, str], list[int]] = {}
    for m in msgs:
        if m.lock_ref.nonce:
            groups.setdefault((m.partition_id, m.lock_ref.nonce), []).append(m.local_seq)
    return [Locks(p, nonce, tuple(seqs)) for (p, nonce), seqs in groups.items()]


def read_lease(opts: SourceOptions, lease: Lease, columns: tuple[int, ...]) -> Iterator[Any]:
    """The executor's side: receive with peek-lock up to the lease's quota, record, yield Arrow
    record batches of the projected columns.

    Reading a slot again (Spark retried the task, ran a second action on the batch, or replays the
    batch after a restart) yields first the messages the earlier read took that are still locked
    by this query, then, unless that read finished, receives up to the rest of the quota.
    """
    pages = _columns.ArrowPages(columns)
    ledger = Ledger(opts.url, lease.query, opts.socket_timeout)
    client = _broker.connect(opts.url, opts.socket_timeout)
    receiver = _broker.receiver(client, opts.entity, _sub_queue(opts))
    try:
        left = lease.quota
        earlier, finished = ledger.slot(lease.batch, lease.slot)
        if earlier:
            again = list(_again(client, receiver, opts, earlier))
            left -= len(again)
            yield from _columns.received_batches(pages, again)
        meta = None if finished else _broker.meta(client, opts.entity)
        # the receiver's own paths for what the rounds leave out: sessions, forwarding, a topic's refusal
        fast = meta is not None and meta.kind != "topic" and not meta.sessions and not meta.forwards
        asked: list[int] = [] if meta is None else list(range(meta.partition_count))
        while left > 0 and not finished:
            if fast and asked:
                # the common case, many messages available: one pipelined receive call per
                # partition, parsed as columns into one Arrow batch (no message objects)
                took, error = _broker.receive_round(client, opts.entity, meta, opts.group, _quotas(left, asked))  # type: ignore[arg-type]
                took = [t for t in took if t.fields.raw]
                if took:
                    locked = min(t.locked_until_ms for t in took)
                    ledger.record(lease.batch, lease.slot, locked, _broker.taken_locks(took))
                    rows, fields = _columns.joined([(t.partition, t.fields) for t in took])
                    yield pages.batch(opts.entity, rows, fields)
                    left -= len(rows)
                # ask again only the partitions that may have more; the others, and any error,
                # go through the receiver below (it waits, probes and retries)
                asked = [t.partition for t in took if t.more] if error is None else []
                fast = error is None
                continue
            wait = opts.receive_wait  # 0: one look, without waiting
            msgs = receiver.receive_messages(
                min(left, _PAGE), max_wait_time=wait if wait != 0 else None, wait=wait != 0
            )
            if not msgs:
                break
            ledger.record(lease.batch, lease.slot, min(_ms(m) for m in msgs), received_locks(msgs))
            yield from _columns.received_batches(pages, msgs)
            left -= len(msgs)
            asked = list(range(meta.partition_count)) if meta is not None else []  # more may have come
        if not finished:
            ledger.finish(lease.batch, lease.slot)
    finally:
        receiver.close()
        client.close()
        ledger.close()


def _quotas(left: int, partitions: list[int]) -> dict[int, int]:
    """A receive round's quotas: up to _ROUND messages of `left`, shared over `partitions`."""
    n = min(left, _ROUND)
    k = min(len(partitions), max(1, n // 100))
    return {p: n // k + (1 if i < n % k else 0) for i, p in enumerate(partitions[:k])}


def _handles(entity: str, group: str, entries: list[Entry]) -> list[ServiceBusReceivedMessage]:
    return [
        _broker.held(entity, group, g.partition, g.nonce, seq, e.locked_until_ms)
        for e in entries
        for g in e.locks
        for seq in g.seqs
    ]


def _batch(offset: dict[str, Any]) -> int:
    return int(offset.get("batch", 0))


class ConsumeStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """The driver's side of consume mode (see the module docstring)."""

    def __init__(self, opts: SourceOptions, columns: tuple[int, ...]) -> None:
        self.opts = opts
        self.columns = columns
        self._ns = namespace(opts.url)
        self._guard = threading.Lock()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._client: Any = None
        self._receiver: Any = None
        self._renewer: AutoLockRenewer | None = None
        self._ledger: Ledger | None = None
        self._query: str | None = None
        self._watch: dict[int, dict[int, int]] = {}  # batch -> slot -> ledger bytes read
        self._held: dict[int, list[Entry]] = {}  # batch -> its locks
        self._renewing: dict[int, list[ServiceBusReceivedMessage]] = {}  # batch -> locks being renewed
        # batch -> (when first seen, locks) not yet registered for renewal
        self._unrenewed: dict[int, list[tuple[float, list[Entry]]]] = {}
        self._completing: set[int] = set()  # batches whose completion has started
        self._completions = ThreadPoolExecutor(1, thread_name_prefix="sbredis-spark-complete")
        self._completion: Future[None] | None = None
        self._completer: Any = None  # the completion thread's client
        self._generation = ""
        self._last: dict[str, Any] | None = None
        self._lock_seconds = 0.0
        self._partitions = 1
        self._target: int | None = None  # Trigger.AvailableNow: take at most this many in all
        self._planned = 0
        self.completed = 0
        self.lock_lost = 0
        self.backlog = 0

    def __getstate__(self) -> dict[str, Any]:
        # the executors need the options only; locks and threads stay here
        return {"opts": self.opts, "columns": self.columns}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["opts"], state["columns"])  # type: ignore[misc]

    # -- offsets
    def initialOffset(self) -> dict[str, Any]:  # noqa: N802
        return {
            "namespace": self._ns,
            "entity": self.opts.entity,
            "subQueue": "deadletter" if self.opts.dead_letter else "",
            "query": uuid.uuid4().hex,
            "batch": 0,
            "quota": 0,
        }

    def _check(self, offset: dict[str, Any]) -> None:
        """Raises InvalidOperationError when the checkpoint belongs to another entity or server."""
        here = (self._ns, self.opts.entity)
        there = (offset.get("namespace"), offset.get("entity"))
        if "query" not in offset:
            raise InvalidOperationError(
                "this checkpoint was written by a query in mode 'peek'; a consuming query needs its own "
                "checkpointLocation"
            )
        if there != here:
            raise InvalidOperationError(
                f"this checkpoint belongs to entity '{there[1]}' on {there[0]}, not '{here[1]}' on {here[0]}; "
                "use a new checkpointLocation for another entity"
            )

    def _connect(self) -> None:
        """The driver's one client (and receiver, renewer) for the reader's life: every offset,
        count and settlement call of the query goes over it."""
        if self._client is None:
            count, lock, _ = queue_settings(self.opts.url, self.opts.entity)
            self._partitions, self._lock_seconds = count, lock
            self._client = _broker.connect(self.opts.url, self.opts.socket_timeout)
            self._receiver = _broker.receiver(self._client, self.opts.entity, _sub_queue(self.opts))
            self._generation = _broker.meta(self._client, self.opts.entity).generation
            self._renewer = AutoLockRenewer(max_lock_renewal_duration=self.opts.max_renewal)

    def _open(self, query: str) -> Ledger:
        if self._ledger is None or self._query != query:
            if self._ledger is not None:
                self._ledger.close()
            self._query = query
            self._ledger = Ledger(self.opts.url, query, self.opts.socket_timeout)
        self._connect()
        return self._ledger

    def _active(self) -> int:
        self._connect()
        return _broker.active_count(self._client, self.opts.entity, self._partitions, self.opts.dead_letter)

    def latestOffset(self, start: dict[str, Any] | None = None, limit: Any = None) -> dict[str, Any]:  # noqa: N802
        start = start if start is not None else self._last
        if start is None:
            start = self.initialOffset()
        self._check(start)
        # Spark asks for the offsets after `start` only once the batch ending there is in its
        # commit log (a restarted query first runs again a batch that is not): its sink has the
        # rows, so its locks are completed from here, without waiting for Spark's commit() call,
        # which comes only when a further batch is planned (an AvailableNow query would need
        # one more, empty, batch for it).
        # Their completion runs beside the next batch. Locks count as active until completed:
        # the count is taken before it starts and leaves them out; when that leaves nothing, the
        # count is taken again once they are completed (some may have elapsed, their messages
        # active again).
        ledger = self._open(str(start["query"]))
        self._finish_completion()
        work = self._take(ledger, _batch(start))
        available = max(0, self._active() - sum(len(g.seqs) for _, locks, _ in work for g in locks))
        self._complete_later(ledger, work)
        if not available and work:
            self._finish_completion()
            available = self._active()
        self.backlog = available
        budget = _limit(limit, self.opts.max_per_trigger)
        if self._target is not None:
            budget = max(0, min(budget, self._target - self._planned))
        if not available or not budget:
            self._finish_completion()  # no batch to run beside it: the query may stop now
            self._last = start
            return start
        end = {**start, "batch": _batch(start) + 1, "quota": min(available, budget)}
        self._planned += int(end["quota"])
        self._last = end
        return end

    def reportLatestOffset(self) -> dict[str, Any] | None:  # noqa: N802
        """Progress' latestOffset: the last batch planned and the entity's active messages then (the lag)."""
        if self._last is None:
            return None
        return {**self._last, "activeMessages": self.backlog}

    def getDefaultReadLimit(self) -> Any:  # noqa: N802
        return ReadMaxRows(self.opts.max_per_trigger or DEFAULT_QUOTA)

    def prepareForTriggerAvailableNow(self) -> None:  # noqa: N802
        """Trigger.AvailableNow: take no more than the messages active now, then stop."""
        self._target = self._active()
        self._planned = 0

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        self._check(end)
        self._open(str(end["query"]))
        batch, quota = _batch(end), int(end.get("quota", 0))
        if batch == _batch(start) or quota <= 0:
            return []
        with self._guard:
            self._watch.setdefault(batch, {})
        self._start_watching()
        # Like the peek reads' packing: a task per minOffsetsPerTask messages of the quota (every
        # task costs a worker round and connections), at most one per partition and 8.
        default = min(self._partitions, 8, -(-quota // self.opts.min_per_task))
        tasks = max(1, min(self.opts.tasks or default, quota))
        shares = [quota // tasks + (1 if i < quota % tasks else 0) for i in range(tasks)]
        return [Lease(str(end["query"]), batch, i, n) for i, n in enumerate(shares)]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        assert isinstance(partition, Lease)
        return read_lease(self.opts, partition, self.columns)

    # -- locks
    def _start_watching(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._watch_loop, name="sbredis-spark-ledger", daemon=True)
            self._thread.start()

    def _poll(self, batch: int, renew: bool = True) -> list[Entry]:
        """Read `batch`'s new ledger lines (and start renewing their locks), caller holds _guard."""
        assert self._ledger is not None and self._renewer is not None
        seen = self._watch.setdefault(batch, {})
        entries = self._ledger.read(batch, seen)
        # Locks are registered for renewal only once a third of the lock duration may have
        # passed since they were taken (they were taken at most one watch round before they were
        # first seen): most batches commit before that, and registering every lock cost more
        # than taking it. The renewer renews when a third is left, so it still has a third.
        now = time.monotonic()
        waiting = self._unrenewed.pop(batch, [])
        if renew:
            due_after = max(self._lock_seconds / 3 - self._pause(), 0.0)
            keep = []
            for seen_at, late in waiting:
                if now - seen_at < due_after:
                    keep.append((seen_at, late))
                    continue
                handles = _handles(self._receiver.entity_name, self.opts.group, late)
                for h in handles:
                    self._renewer.register(self._receiver, h)
                self._renewing.setdefault(batch, []).extend(handles)
            if entries:
                keep.append((now, entries))
            if keep:
                self._unrenewed[batch] = keep
        self._held.setdefault(batch, []).extend(entries)
        return entries

    def _pause(self) -> float:
        """Seconds between two watch rounds."""
        return max(0.05, min(self._lock_seconds / 4, 5.0))

    def _watch_loop(self) -> None:
        pause = self._pause()
        while not self._stopping.wait(pause):
            with self._guard:
                try:
                    for batch in list(self._watch):
                        self._poll(batch)
                except Exception:  # Redis away for a moment: the next round tries again
                    continue

    def commit(self, end: dict[str, Any]) -> None:
        """Complete the locks of every batch up to `end` (Spark has stored its results); mostly
        started already, by the latestOffset that planned the batch after `end`."""
        self._check(end)
        ledger = self._open(str(end["query"]))
        self._complete(ledger, self._take(ledger, _batch(end)), self._client)

    def _take(self, ledger: Ledger, upto: int) -> list[tuple[int, list[Locks], list[ServiceBusReceivedMessage]]]:
        """The batches up to `upto` whose completion has not started: (batch, its locks, the
        handles being renewed); they are no longer watched."""
        work = []
        with self._guard:
            for batch in ledger.batches():
                if batch > upto or batch in self._completing:
                    continue
                self._poll(batch, renew=False)  # about to be completed
                locks = [g for e in self._held.pop(batch, []) for g in e.locks]
                work.append((batch, locks, self._renewing.pop(batch, [])))
                self._completing.add(batch)
                self._watch.pop(batch, None)
        return work

    def _complete(
        self, ledger: Ledger, work: list[tuple[int, list[Locks], list[ServiceBusReceivedMessage]]], client: Any
    ) -> None:
        """Complete the taken batches' locks over `client` and drop their ledger."""
        for batch, locks, renewing in work:
            lost = _broker.complete_locks(client, self.opts.entity, self.opts.group, self._generation, locks)
            for h in renewing:
                h.settled = True  # the renewer stops renewing it
            ledger.drop(batch)
            with self._guard:
                self.completed += sum(len(g.seqs) for g in locks) - lost
                self.lock_lost += lost
                self._completing.discard(batch)

    def _complete_later(
        self, ledger: Ledger, work: list[tuple[int, list[Locks], list[ServiceBusReceivedMessage]]]
    ) -> None:
        """_complete on a thread, while Spark runs the next batch (one completion at a time, over
        a client of its own: the offset calls go on over the reader's)."""
        if work:
            if self._completer is None:
                self._completer = _broker.connect(self.opts.url, self.opts.socket_timeout)
            self._completion = self._completions.submit(self._complete, ledger, work, self._completer)

    def _finish_completion(self) -> None:
        """Wait for the completion started by an earlier latestOffset.

        Raises:
            ServiceBusError: it failed (its messages come back when their locks elapse).
        """
        done, self._completion = self._completion, None
        if done is not None:
            done.result()

    def stop(self) -> None:
        """Stop renewing: what was not committed comes back when its locks elapse."""
        self._completions.shutdown(wait=True)  # committed batches: their completion finishes
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self._renewer is not None:
            self._renewer.close()
        if self._receiver is not None:
            self._receiver.close()
            self._client.close()
        if self._completer is not None:
            self._completer.close()
        if self._ledger is not None:
            self._ledger.close()


def _limit(limit: Any, default: int | None) -> int:
    rows = getattr(limit, "max_rows", None)
    if rows is not None:
        return int(rows)
    return default or DEFAULT_QUOTA
