"""The consuming stream's ledger: which locks each micro-batch's tasks took, kept in Redis.

Executors receive with peek-lock; the driver renews those locks while the batch runs and
completes them when Spark commits the batch. The two meet here, in plain Redis keys beside the
entity (same database as the ``url`` option), named after the query's id (a random id kept in the
checkpoint's offsets, so a restarted query finds its own ledger):

``sbredis-spark:<query>:batches``
    set of the micro-batch numbers that have a ledger.
``sbredis-spark:<query>:<batch>``
    set of the task slots (input partition numbers) of that batch that recorded locks.
``sbredis-spark:<query>:<batch>:<slot>``
    string: one line per receive call, ``<locked-until ms> <partition>:<lock nonce>:<seq>,<seq>,...``
    (one such group per broker partition, separated by spaces; ``seq`` the partition-local
    sequence numbers: a lock token is the nonce and the global sequence number, which these
    make without the token's text), appended by the task as it receives, so the driver can renew
    locks before the task ends; then a line ``done`` when the task took its whole share (or found
    no more messages).

Every key expires after :data:`KEEP_SECONDS`: a ledger a dead query left behind goes away by
itself, and its locks elapse anyway.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import redis

from .._core.packer import driver_options

PREFIX = "sbredis-spark:"
KEEP_SECONDS = 7 * 24 * 3600


@dataclass(frozen=True)
class Locks:
    """The locks one receive call took on one broker partition: the call's lock nonce (16 hex
    digits) and the messages' partition-local sequence numbers."""

    partition: int
    nonce: str
    seqs: tuple[int, ...]


@dataclass(frozen=True)
class Entry:
    """One receive call's locks: when they end (server ms), per partition."""

    locked_until_ms: int
    locks: tuple[Locks, ...]


DONE = "done"


def parse(text: bytes) -> list[Entry]:
    out = []
    for line in text.decode().splitlines():
        if line == DONE:
            continue
        until, *groups = line.split(" ")
        locks = []
        for g in filter(None, groups):  # none: the call's messages held no lock
            partition, nonce, seqs = g.split(":")
            locks.append(Locks(int(partition), nonce, tuple(map(int, seqs.split(",")))))
        if locks:
            out.append(Entry(int(until), tuple(locks)))
    return out


class Ledger:
    """The ledger of one query (see the module docstring); one Redis connection."""

    def __init__(self, url: str, query: str, socket_timeout: float = 30.0) -> None:
        self.query = query
        self._r = redis.Redis.from_url(url, socket_timeout=socket_timeout, **driver_options())

    def close(self) -> None:
        self._r.close()

    def _batches(self) -> str:
        return f"{PREFIX}{self.query}:batches"

    def _slots(self, batch: int) -> str:
        return f"{PREFIX}{self.query}:{batch}"

    def _slot(self, batch: int, slot: int) -> str:
        return f"{PREFIX}{self.query}:{batch}:{slot}"

    def record(self, batch: int, slot: int, locked_until_ms: int, locks: Iterable[Locks]) -> None:
        """Append one receive call's locks (a task, before it hands the rows to Spark)."""
        groups = " ".join(f"{g.partition}:{g.nonce}:{','.join(map(str, g.seqs))}" for g in locks)
        line = f"{locked_until_ms} {groups}\n"
        p = self._r.pipeline(transaction=False)
        p.sadd(self._batches(), batch)
        p.sadd(self._slots(batch), slot)
        p.append(self._slot(batch, slot), line)
        for key in (self._batches(), self._slots(batch), self._slot(batch, slot)):
            p.expire(key, KEEP_SECONDS)
        p.execute()

    def finish(self, batch: int, slot: int) -> None:
        """Mark the slot complete: a later read of it takes nothing new."""
        self._r.append(self._slot(batch, slot), DONE + "\n")

    def slot(self, batch: int, slot: int) -> tuple[list[Entry], bool]:
        """What an earlier read of this slot recorded, and whether it finished."""
        text: bytes | None = self._r.get(self._slot(batch, slot))  # type: ignore[assignment]
        if not text:
            return [], False
        return parse(text), text.endswith(DONE.encode() + b"\n")

    def batches(self) -> list[int]:
        return sorted(int(b) for b in self._r.smembers(self._batches()))

    def read(self, batch: int, seen: dict[int, int]) -> list[Entry]:
        """The entries of `batch` recorded since the last call (`seen`: slot -> bytes read)."""
        slots = [int(s) for s in self._r.smembers(self._slots(batch))]
        if not slots:
            return []
        p = self._r.pipeline(transaction=False)
        for s in slots:
            p.getrange(self._slot(batch, s), seen.get(s, 0), -1)
        out: list[Entry] = []
        for s, text in zip(slots, p.execute(), strict=True):
            if text:
                end = text.rfind(b"\n") + 1  # a line still being appended is read next time
                seen[s] = seen.get(s, 0) + end
                out.extend(parse(text[:end]))
        return out

    def drop(self, batch: int) -> None:
        slots = [int(s) for s in self._r.smembers(self._slots(batch))]
        p = self._r.pipeline(transaction=False)
        p.delete(self._slots(batch), *(self._slot(batch, s) for s in slots))
        p.srem(self._batches(), batch)
        p.execute()
