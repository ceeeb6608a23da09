"""The batch consumer: Spark tasks own broker partitions and drain them with peek-lock.

Each task receives up to ``batch_size`` messages at a time from each of its partitions (one
pipelined round trip for all of them), calls the handler on each, completes the batch's
successes in one round trip, abandons the failures (and dead-letters a failure on its last
allowed delivery with reason ``HandlerError``), and renews the batch's locks with
``sbredis.AutoLockRenewer`` while the handler works (up to ``max_renewal`` seconds per message),
registering them once the batch has been held a quarter of the lock duration (``LateHold``). A
task stops when none of its partitions gave anything for ``idle_seconds``. A task or executor
that dies loses nothing: its locks elapse and the messages are delivered again (with the
delivery count one higher).
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

from .._core.protocol import Group
from ..exceptions import MessageLockLostError
from . import _broker
from ._jobs import (
    LateHold,
    Summary,
    Timer,
    default_parallelism,
    describe,
    load_handler,
    partition_slices,
    queue_settings,
    renewer,
    run_tasks,
)

_DESCRIPTION_MAX = 1024


_COUNTED_AS = {
    "complete_messages": "completed",
    "abandon_messages": "abandoned",
    "dead_letter_messages": "dead_lettered",
}


def _settle(receiver: Any, what: str, msgs: list[Any], counts: Counter[str], *args: Any) -> None:
    """Settle `msgs`; a lost lock is counted (the message comes back by itself), not raised."""
    if not msgs:
        return
    lost = 0
    try:
        getattr(receiver, what)(msgs, *args)
    except MessageLockLostError as e:
        lost = len(e.messages) or len(msgs)
    counts["lock_lost"] += lost
    counts[_COUNTED_AS[what]] += len(msgs) - lost


def _handle(
    msgs: list[Any], handler: Any, receiver: Any, max_deliveries: int, counts: Counter[str], late: LateHold
) -> None:
    """Call the handler on each message of a batch, then settle the batch."""
    counts["received"] += len(msgs)
    done, retry, dead = [], [], []
    for m in msgs:
        try:
            handler(m)
            done.append(m)
        except Exception as e:
            counts["handler_errors"] += 1
            if m.delivery_count + 1 >= max_deliveries:  # this delivery and those before it
                dead.append((m, f"{type(e).__name__}: {e}"[:_DESCRIPTION_MAX]))
            else:
                retry.append(m)
    late.stop()
    _settle(receiver, "complete_messages", done, counts)
    _settle(receiver, "abandon_messages", retry, counts)
    for m, why in dead:
        _settle(receiver, "dead_letter_messages", [m], counts, "HandlerError", why)


def consume_partitions(
    partitions: list[int],
    url: str,
    entity: str,
    handler_spec: str,
    batch_size: int,
    idle_seconds: float,
    max_deliveries: int,
    max_renewal: float,
    lock_seconds: float = 0.0,
) -> dict[str, int]:
    """Drain the given partitions (runs in a Spark task); returns the task's counts. A batch's locks
    are renewed once it has been held for a quarter of `lock_seconds` (0: from the start)."""
    handler = load_handler(handler_spec)
    counts: Counter[str] = Counter()
    client = _broker.connect(url)
    receiver = _broker.receiver(client, entity)
    try:
        with renewer(max_renewal) as renew, LateHold(renew, lock_seconds) as late:
            idle_until: float | None = None
            pause = 0.01
            while True:
                # every partition of the task in one round trip (and their completes in one):
                # a round trip per partition and batch cost the task more than the client's
                now_ms, msgs = _broker.receive_many(client, entity, Group.MAIN, dict.fromkeys(partitions, batch_size))
                got = bool(msgs)
                if got:
                    late.start(receiver, now_ms, msgs)
                    _handle(msgs, handler, receiver, max_deliveries, counts, late)
                if got:
                    idle_until, pause = None, 0.01
                    continue
                now = time.monotonic()
                idle_until = idle_until or now + idle_seconds
                if now >= idle_until:
                    break
                time.sleep(min(pause, idle_until - now))
                pause = min(pause * 2, 0.2)
    finally:
        receiver.close()
        client.close()
    return dict(counts)


def consume(
    spark: Any,
    url: str,
    entity: str,
    handler: str,
    *,
    batch_size: int = 100,
    idle_seconds: float = 2.0,
    max_deliveries: int | None = None,
    tasks: int | None = None,
    max_renewal: float = 3600.0,
) -> Summary:
    """Run the consumer over every partition of `entity`; returns the summary (messages = completed).

    Raises:
        InvalidArgumentError: a bad handler spec (checked on the driver first).
        MessagingEntityNotFoundError: no such queue.
    """
    load_handler(handler)
    timer = Timer()
    count, lock_seconds, max_dc = queue_settings(url, entity)
    limit = max_deliveries or max_dc
    slices = partition_slices(list(range(count)), tasks or default_parallelism(spark))

    def task(parts: list[int]) -> dict[str, int]:
        return consume_partitions(
            parts, url, entity, handler, batch_size, idle_seconds, limit, max_renewal, lock_seconds
        )

    describe(spark, f"sbredis consume {entity}")
    results = run_tasks(spark, slices, task)
    total: Counter[str] = Counter()
    for r in results:
        total.update(r)
    keys = ("received", "completed", "abandoned", "dead_lettered", "handler_errors", "lock_lost")
    return Summary("consume", total["completed"], timer.seconds(), {k: total[k] for k in keys})
