"""Model-based test: a hypothesis state machine drives one queue through sends, schedules,
receives (peek-lock and receive-and-delete), settlements, deferral, dead-lettering, renewals, the
passing of time and restarts of redis-server, and compares the keyspace with an in-memory model of
the semantics after every step.

The server's clock stands still (libfaketime, tests/reliability/clock.py) and only the test moves
it, so the model knows every lock, expiry and schedule time to the millisecond and can step onto
the exact boundaries. Redis runs with ``appendfsync always``; a restart is SIGKILL and start on the
same data directory.

After every step: each message is in exactly one place of the keyspace (one of ready, locked,
deferred, scheduled or the dead-letter group's sets, or gone), the state that place means at the
server's time is the model's (elapsed locks and expiries are applied lazily by the scripts, so the
keyspace is read through the same rules), delivery counts match the model and never decrease,
every sorted set and hash points only at stored messages, the stored-bytes counter matches the
stored blobs, and the runtime counts match the keyspace. A locked message is never handed to
another receiver (a receive may only return messages the model holds available).

``SBREDIS_MODEL_EXAMPLES`` (default 300) and ``SBREDIS_MODEL_STEPS`` (default 40) size the run;
docs/reliability.md gives the longer run.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
import redis
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from sbredis import ServiceBusClient, ServiceBusMessage, ServiceBusReceiveMode, ServiceBusSubQueue
from sbredis._core import codec
from sbredis._core.keys import PARTITION_KEY_NAMES, partition_keys
from sbredis._message import PARTITION_SHIFT
from sbredis.exceptions import (
    InvalidOperationError,
    MessageAlreadySettled,
    MessageLockLostError,
    MessageNotFoundError,
)
from sbredis.management import ServiceBusAdministrationClient
from tests.redis_server import RedisServer
from tests.reliability.clock import ServerClock

pytestmark = [pytest.mark.integration, pytest.mark.reliability]

LOCK_MS = 10_000
DEDUP_MS = 30_000
MAX_DC = 3

ACTIVE, SCHEDULED, LOCKED, DEFERRED, GONE = "active", "scheduled", "locked", "deferred", "gone"
DLQ, DLQ_LOCKED, DLQ_DEFERRED = "dead-lettered", "dead-lettered+locked", "dead-lettered+deferred"
MAX_DC_REASON = "MaxDeliveryCountExceeded"
TTL_REASON = "TTLExpiredException"


@dataclass
class Msg:
    """The model of one stored message."""

    key: str  # its body
    state: str
    enq: int
    exp: int  # 0: never
    dc: int = 0
    seq: int = 0  # global sequence number, once known
    dseq: int = 0  # the dead-letter subqueue's own sequence number, once stored there
    dseq_received: int = 0  # the one a dead-letter receiver reported before the model saw it stored
    holder: Any = None  # the received message object whose lock holds it
    until: int = 0  # locked until (server ms)
    home: str = ACTIVE  # where a released lock returns it
    reason: str | None = None  # dead-letter reason
    place: str = ""  # where the keyspace held it at the last look (ready, locked, deferred, sched)
    max_dc_seen: int = 0  # the highest delivery count seen


@dataclass
class Seen:
    """One message as the keyspace shows it, read through the scripts' rules at the server's time."""

    state: str
    dc: int
    seq: int
    until: int = 0
    nonce: str = ""
    reason: str | None = None
    place: str = ""
    dseq: int = 0  # the dead-letter subqueue's sequence number (0: not stored there)


def _lock_fields(rec: str, until: Any) -> tuple[str, str, str]:
    """nonce, home and delivery count of a lock record (includes/messages.lua's lock_record); a
    record that carries its lock's end carries the locked set's score."""
    parts = rec.split("|")
    if parts[1].isdigit():
        assert int(parts[1]) == int(until), f"lock record {rec!r} ends its lock at another time than {until}"
        del parts[1]
    return parts[0], parts[1], parts[4]


class QueueModel(RuleBasedStateMachine):
    def __init__(self, server: RedisServer, clock: ServerClock) -> None:
        super().__init__()
        self.server = server
        self.clock = clock
        self.raw = redis.Redis.from_url(server.url)
        self.msgs: dict[str, Msg] = {}
        self.never: set[str] = set()  # duplicates: accepted and dropped
        self.windows: dict[str, int] = {}  # message_id -> end of its duplicate-detection window
        self.ids: list[str] = []
        self.handles: list[tuple[str, Any]] = []  # (receiver name, received message)
        self.scheduled_seqs: list[int] = []
        self.last_dseq: dict[int, int] = {}  # partition -> the highest dead-letter sequence number seen
        self.counter = 0
        self.closers: list[Any] = []

    # -- set-up
    @initialize(
        partitions=st.sampled_from([1, 2]),
        dl_exp=st.booleans(),
        dedup=st.booleans(),
        default_ttl=st.sampled_from([0, 20_000]),
    )
    def create(self, partitions: int, dl_exp: bool, dedup: bool, default_ttl: int) -> None:
        self.partitions, self.dl_exp, self.dedup, self.default_ttl = partitions, dl_exp, dedup, default_ttl
        self.name = "model-" + uuid.uuid4().hex[:10]
        self.admin = ServiceBusAdministrationClient.from_connection_string(
            self.server.url, retry_total=5, retry_backoff_factor=0.05, retry_backoff_max=0.5
        )
        self.closers.append(self.admin)
        kwargs: dict[str, Any] = {}
        if default_ttl:
            kwargs["default_message_time_to_live"] = timedelta(milliseconds=default_ttl)
        self.admin.create_queue(
            self.name,
            enable_partitioning=partitions > 1,
            partition_count=partitions,
            lock_duration=timedelta(milliseconds=LOCK_MS),
            max_delivery_count=MAX_DC,
            dead_lettering_on_message_expiration=dl_exp,
            requires_duplicate_detection=dedup,
            duplicate_detection_history_time_window=timedelta(milliseconds=DEDUP_MS),
            **kwargs,
        )
        self.client = ServiceBusClient.from_connection_string(
            self.server.url, retry_total=5, retry_backoff_factor=0.05, retry_backoff_max=0.5
        )
        self.closers.insert(0, self.client)
        self.sender = self.client.get_queue_sender(self.name)
        self.receivers = {
            "a": self.client.get_queue_receiver(self.name),
            "b": self.client.get_queue_receiver(self.name),
            "rd": self.client.get_queue_receiver(self.name, receive_mode=ServiceBusReceiveMode.RECEIVE_AND_DELETE),
            "dlq": self.client.get_queue_receiver(self.name, sub_queue=ServiceBusSubQueue.DEAD_LETTER),
        }

    def teardown(self) -> None:
        for r in getattr(self, "receivers", {}).values():
            r.close()
        if hasattr(self, "admin"):
            self.admin.delete_queue(self.name)
        for c in self.closers:
            c.close()
        self.raw.close()

    @property
    def now(self) -> int:
        return self.clock.now_ms

    # -- the model's rules for time
    def _to_dlq(self, m: Msg, reason: str) -> None:
        m.state, m.reason, m.holder, m.home = DLQ, reason, None, ACTIVE

    def _expire(self, m: Msg) -> None:
        if self.dl_exp:
            self._to_dlq(m, TTL_REASON)
        else:
            m.state, m.holder = GONE, None

    def _release(self, m: Msg) -> None:
        """A main-queue lock ends without settlement (abandon or elapse)."""
        m.holder = None
        if m.dc >= MAX_DC:
            self._to_dlq(m, MAX_DC_REASON)
        elif m.exp and m.exp <= self.now:
            self._expire(m)
        else:
            m.state = m.home

    def _apply_clock(self) -> None:
        now = self.now
        for m in self.msgs.values():
            if m.state == SCHEDULED and m.enq <= now:
                m.state = ACTIVE
            if m.state == LOCKED and m.until < now:
                self._release(m)
            if m.state in (ACTIVE, DEFERRED) and m.exp and m.exp <= now:
                self._expire(m)
            if m.state == DLQ_LOCKED and m.until < now:
                m.state, m.holder = (DLQ_DEFERRED if m.home == DEFERRED else DLQ), None

    def _ttl(self, ttl: int) -> int:
        if ttl == 0 or (self.default_ttl and ttl > self.default_ttl):
            return self.default_ttl
        return ttl

    def _new_key(self) -> str:
        self.counter += 1
        return f"k{self.counter}"

    def _message(self, key: str, reuse: int | None, ttl: int) -> tuple[ServiceBusMessage, str]:
        if reuse is not None and self.ids:
            mid = self.ids[reuse % len(self.ids)]
        else:
            mid = "id-" + key
            self.ids.append(mid)
        msg = ServiceBusMessage(key, message_id=mid)
        if ttl:
            msg.time_to_live = timedelta(milliseconds=ttl)
        return msg, mid

    def _accept(self, mid: str, batch_ids: set[str]) -> bool:
        """Duplicate detection: is a message with this id stored (True) or dropped?"""
        if not self.dedup:
            return True
        if mid in batch_ids or self.windows.get(mid, 0) > self.now:
            return False
        batch_ids.add(mid)
        self.windows[mid] = self.now + DEDUP_MS
        return True

    # -- rules: sending
    @rule(
        items=st.lists(
            st.tuples(st.one_of(st.none(), st.integers(0, 50)), st.sampled_from([0, 1, 5_000, 20_000, 40_000])),
            min_size=1,
            max_size=3,
        )
    )
    def send(self, items: list[tuple[int | None, int]]) -> None:
        batch, batch_ids, now = [], set[str](), self.now
        for reuse, ttl in items:
            key = self._new_key()
            msg, mid = self._message(key, reuse, ttl)
            batch.append(msg)
            if self._accept(mid, batch_ids):
                eff = self._ttl(ttl)
                self.msgs[key] = Msg(key, ACTIVE, now, now + eff if eff else 0)
            else:
                self.never.add(key)
        self.sender.send_messages(batch)

    @rule(
        delta=st.sampled_from([-1_000, 0, 1, 1_000, 5_000, 15_000]),
        ttl=st.sampled_from([0, 1, 5_000, 20_000]),
        reuse=st.one_of(st.none(), st.integers(0, 50)),
    )
    def schedule(self, delta: int, ttl: int, reuse: int | None) -> None:
        key = self._new_key()
        msg, mid = self._message(key, reuse, ttl)
        at = self.now + delta
        stored = self._accept(mid, set())
        (seq,) = self.sender.schedule_messages(msg, codec.from_ms(at))
        if not stored:
            self.never.add(key)
            assert seq == 0, "a duplicate was scheduled"
            return
        enq = max(at, self.now)
        eff = self._ttl(ttl)
        self.msgs[key] = Msg(key, SCHEDULED if enq > self.now else ACTIVE, enq, enq + eff if eff else 0, seq=seq)
        self.scheduled_seqs.append(seq)

    @precondition(lambda self: self.scheduled_seqs)
    @rule(pick=st.integers(0, 1_000))
    def cancel(self, pick: int) -> None:
        seq = self.scheduled_seqs[pick % len(self.scheduled_seqs)]
        m = next(m for m in self.msgs.values() if m.seq == seq)
        if m.state == SCHEDULED:
            self.sender.cancel_scheduled_messages(seq)
            m.state = GONE
        else:
            with pytest.raises(MessageNotFoundError):
                self.sender.cancel_scheduled_messages(seq)

    # -- rules: receiving
    def _check_taken(self, got: list[Any], states: tuple[str, ...], n: int) -> list[Msg]:
        """The messages a receive returned are available ones, oldest first per partition."""
        avail = [m for m in self.msgs.values() if m.state in states]
        assert len(got) <= n
        if avail:
            assert got, f"nothing received while {len(avail)} message(s) are available"
        else:
            assert not got, f"received {[g.body_bytes.decode() for g in got]} while none is available"
        out = []
        for g in got:
            m = self.msgs.get(g.body_bytes.decode())
            assert m is not None and m.state in states, f"{g} handed out but it is {m and m.state}"
            assert (g.delivery_count + 1) == m.dc + 1, ((g.delivery_count + 1), m.dc)
            assert g.enqueued_time_utc == codec.from_ms(m.enq)
            dead = states == (DLQ,)  # dead-lettered messages never expire
            assert g.expires_at_utc == (codec.from_ms(m.exp) if m.exp and not dead else None)
            if states == (DLQ,):  # the dead-letter subqueue numbers its messages itself
                if m.dseq:
                    assert g.sequence_number == m.dseq, (g.sequence_number, m.dseq)
                else:  # moved there by this receive's sweep: the next look checks it is the stored one
                    m.dseq_received = g.sequence_number
            elif m.seq:
                assert g.sequence_number == m.seq
            out.append(m)
        if states != (DLQ,):  # main queue: per partition, the oldest available ones
            for p in {g.partition_id for g in got}:
                mine = sorted(g.sequence_number for g in got if g.partition_id == p)
                oldest = sorted(m.seq for m in avail if m.seq >> PARTITION_SHIFT == p)[: len(mine)]
                assert mine == oldest, (mine, oldest)
        return out

    def _receive(self, name: str, n: int, states: tuple[str, ...]) -> list[Any]:
        avail = any(m.state in states for m in self.msgs.values())
        return self.receivers[name].receive_messages(n, max_wait_time=1 if avail else None, wait=avail)

    @rule(name=st.sampled_from(["a", "b"]), n=st.integers(1, 4))
    def receive(self, name: str, n: int) -> None:
        got = self._receive(name, n, (ACTIVE,))
        for g, m in zip(got, self._check_taken(got, (ACTIVE,), n), strict=True):
            assert g.locked_until_utc == codec.from_ms(self.now + LOCK_MS)
            m.state, m.holder, m.until, m.home = LOCKED, g, self.now + LOCK_MS, ACTIVE
            m.dc = g.delivery_count + 1
            self.handles.append((name, g))

    @rule(n=st.integers(1, 3))
    def receive_and_delete(self, n: int) -> None:
        got = self._receive("rd", n, (ACTIVE,))
        for g, m in zip(got, self._check_taken(got, (ACTIVE,), n), strict=True):
            m.state = GONE
            self.handles.append(("rd", g))

    @rule(n=st.integers(1, 3))
    def receive_dead_letters(self, n: int) -> None:
        got = self._receive("dlq", n, (DLQ,))
        for g, m in zip(got, self._check_taken(got, (DLQ,), n), strict=True):
            assert g.dead_letter_reason == m.reason
            m.state, m.holder, m.until, m.home = DLQ_LOCKED, g, self.now + LOCK_MS, ACTIVE
            m.dc = g.delivery_count + 1
            self.handles.append(("dlq", g))

    @precondition(lambda self: any(m.seq for m in self.msgs.values()))
    @rule(name=st.sampled_from(["a", "rd"]), pick=st.integers(0, 1_000), deferred_only=st.booleans())
    def receive_deferred(self, name: str, pick: int, deferred_only: bool) -> None:
        known = [m for m in self.msgs.values() if m.seq]
        if deferred_only:  # mostly messages deferred once (deferred, or locked by receive_deferred)
            known = [m for m in known if m.home == DEFERRED] or known
        m = known[pick % len(known)]
        if m.state != DEFERRED and not (m.place == "deferred" and m.state in (DLQ, GONE)):
            with pytest.raises(MessageNotFoundError):
                self.receivers[name].receive_deferred_messages([m.seq])
            return
        got = self.receivers[name].receive_deferred_messages([m.seq])
        if m.state != DEFERRED:  # expired while deferred: expired now instead of returned (documented)
            assert got == []
            return
        (g,) = got
        assert g.sequence_number == m.seq and (g.delivery_count + 1) == m.dc + 1
        m.dc = g.delivery_count + 1
        if name == "rd":
            m.state = GONE
        else:
            m.state, m.holder, m.until, m.home = LOCKED, g, self.now + LOCK_MS, DEFERRED
        self.handles.append((name, g))

    # -- rules: settling
    def _expect(self, name: str, g: Any) -> tuple[Msg, type[Exception] | None]:
        m = self.msgs[g.body_bytes.decode()]
        if g.settled:  # a RECEIVE_AND_DELETE message cannot be settled at all (the SDK's ValueError)
            return m, InvalidOperationError if name == "rd" else MessageAlreadySettled
        if m.holder is g and m.until >= self.now and m.state in (LOCKED, DLQ_LOCKED):
            return m, None
        return m, MessageLockLostError

    def _settle(self, op: str, pick: int, *args: Any) -> tuple[Msg, bool]:
        name, g = self.handles[pick % len(self.handles)]
        m, error = self._expect(name, g)
        call = getattr(self.receivers[name], op)
        if error is None:
            call(g, *args)
            return m, True
        with pytest.raises(error):
            call(g, *args)
        return m, False

    @precondition(lambda self: self.handles)
    @rule(pick=st.integers(0, 1_000))
    def complete(self, pick: int) -> None:
        m, done = self._settle("complete_message", pick)
        if done:
            m.state, m.holder = GONE, None

    @precondition(lambda self: self.handles)
    @rule(pick=st.integers(0, 1_000))
    def abandon(self, pick: int) -> None:
        m, done = self._settle("abandon_message", pick)
        if done and m.state == DLQ_LOCKED:
            m.state, m.holder = (DLQ_DEFERRED if m.home == DEFERRED else DLQ), None
        elif done:
            self._release(m)

    @precondition(lambda self: self.handles)
    @rule(pick=st.integers(0, 1_000))
    def defer(self, pick: int) -> None:
        m, done = self._settle("defer_message", pick)
        if done and m.state == DLQ_LOCKED:
            m.state, m.holder, m.home = DLQ_DEFERRED, None, DEFERRED
        elif done:
            m.state, m.holder, m.home = DEFERRED, None, DEFERRED

    @precondition(lambda self: self.handles)
    @rule(pick=st.integers(0, 1_000), reason=st.sampled_from(["bad", "", "x" * 300]))
    def dead_letter(self, pick: int, reason: str) -> None:
        name, g = self.handles[pick % len(self.handles)]
        if name == "dlq":
            with pytest.raises(InvalidOperationError):
                self.receivers[name].dead_letter_message(g, reason)
            return
        m, done = self._settle("dead_letter_message", pick, reason, "described")
        if done:
            self._to_dlq(m, reason or None)  # type: ignore[arg-type]

    @precondition(lambda self: self.handles)
    @rule(pick=st.integers(0, 1_000))
    def renew(self, pick: int) -> None:
        m, done = self._settle("renew_message_lock", pick)
        if done:
            m.until = self.now + LOCK_MS
            _, g = self.handles[pick % len(self.handles)]
            assert g.locked_until_utc == codec.from_ms(m.until)

    # -- rules: time and faults
    @rule(ms=st.sampled_from([1, 999, 1_000, 5_000, 10_000, 30_000]))
    def let_time_pass(self, ms: int) -> None:
        self.clock.advance(ms)
        self._apply_clock()

    @precondition(lambda self: self.msgs)
    @rule(pick=st.integers(0, 1_000), offset=st.sampled_from([-1, 0, 1]))
    def step_onto_a_boundary(self, pick: int, offset: int) -> None:
        """Move the clock to just before, onto or just after a lock, expiry or schedule time."""
        times = sorted(
            {t + offset for m in self.msgs.values() for t in (m.until, m.exp, m.enq) if t + offset > self.now}
        )
        if times:
            self.clock.set(times[pick % len(times)])
            self._apply_clock()

    @rule(go=st.integers(0, 5))
    def restart_redis(self, go: int) -> None:
        if go == 0:  # rarely: a restart costs a few hundred ms
            self.server.restart()

    # -- the keyspace against the model
    def _observe(self) -> tuple[dict[str, list[Seen]], list[int]]:
        seen: dict[str, list[Seen]] = {}
        physical = [0, 0, 0]  # active (ready + locked + deferred), scheduled, dead-lettered
        now = self.now
        for p in range(self.partitions):
            k = dict(zip(PARTITION_KEY_NAMES, partition_keys(self.name, p), strict=True))
            pipe = self.raw.pipeline(transaction=True)
            for name in ("ready", "locked", "deferred", "sched", "exp", "d:ready", "d:locked", "d:deferred"):
                pipe.zrange(k[name], 0, -1, withscores=True)
            for name in ("lk", "dc", "d:lk", "d:dc", "st"):
                pipe.hgetall(k[name])
            pipe.xrange(k["log"])
            pipe.xrange(k["d:log"])
            *sets, log, dlog = pipe.execute()
            ready, locked, deferred, sched, exp, dready, dlocked, ddeferred = (
                {int(m): int(sc) for m, sc in z} for z in sets[:8]
            )
            lk, dc, dlk, ddc, stt = ({_num(f): v.decode() for f, v in h.items()} for h in sets[8:])
            base = p << PARTITION_SHIFT
            blobs = 0
            # the main queue's cursor: a message past it that is not a pending schedule is
            # available with no ready entry (sbredis/lua/includes/messages.lua's cursor_of)
            cur = int(stt.get("cur", stt.get("seq", 0)))
            past = 0
            for sid, f in log:
                seq = int(sid.split(b"-")[0])
                blobs += len(f[b"b"])
                key = codec.body_of(f[b"b"]).decode()
                z4 = (("ready", ready), ("locked", locked), ("deferred", deferred), ("sched", sched))
                places = [n for n, z in z4 if seq in z]
                if seq > cur:
                    assert places in ([], ["sched"]), f"{key} (seq {seq}) is past the cursor {cur} and in {places}"
                    if not places:
                        places, past = ["ready"], past + 1
                assert len(places) == 1, f"{key} (seq {seq}) is in {places}"
                x = int(f[b"x"])
                if places[0] != "locked" and x:
                    assert exp.get(seq) == x, f"{key} ({places[0]}) with a TTL is missing from the expiry set"
                elif places[0] == "locked":
                    assert seq not in exp, f"locked {key} is in the expiry set"
                view = self._main_state(places[0], seq, x, locked, lk, dc, sched, now)
                view.seq, view.place = base | seq, places[0]
                seen.setdefault(key, []).append(view)
            for sid, f in dlog:
                dseq = int(sid.split(b"-")[0])
                blobs += len(f[b"b"])
                key = codec.body_of(f[b"b"]).decode()
                z3 = (("ready", dready), ("locked", dlocked), ("deferred", ddeferred))
                places = [n for n, z in z3 if dseq in z]
                assert len(places) == 1, f"dead-lettered {key} (dseq {dseq}) is in {places}"
                view = Seen(DLQ, int(ddc.get(dseq, 0)), base | int(f[b"os"]), reason=f[b"r"].decode() or None)
                view.dseq = base | dseq
                if places[0] == "deferred":
                    view.state = DLQ_DEFERRED
                elif places[0] == "locked":
                    nonce, home, count = _lock_fields(dlk[dseq], dlocked[dseq])
                    view.dc = int(count)
                    if dlocked[dseq] >= now:
                        view.state, view.until, view.nonce = DLQ_LOCKED, dlocked[dseq], nonce
                    elif home == "d":
                        view.state = DLQ_DEFERRED
                seen.setdefault(key, []).append(view)
            main_seqs = {int(sid.split(b"-")[0]) for sid, _ in log}
            dlq_seqs = {int(sid.split(b"-")[0]) for sid, _ in dlog}
            assert set(lk) == set(locked), "lock records and the locked set differ"
            assert set(dlk) == set(dlocked), "dead-letter lock records and locked set differ"
            for name, z, seqs in (
                ("ready", ready, main_seqs),
                ("deferred", deferred, main_seqs),
                ("sched", sched, main_seqs),
                ("exp", exp, main_seqs),
                ("dc", dc, main_seqs),
                ("d:ready", dready, dlq_seqs),
                ("d:deferred", ddeferred, dlq_seqs),
                ("d:dc", ddc, dlq_seqs),
            ):
                assert set(z) <= seqs, f"{name} names messages that are gone: {set(z) - seqs}"
            assert int(stt.get("size", 0)) == blobs, f"stored bytes {stt.get('size')} != {blobs} in the logs"
            physical[0] += len(ready) + past + len(locked) + len(deferred)
            physical[1] += len(sched)
            physical[2] += len(dready) + len(dlocked) + len(ddeferred)
        return seen, physical

    def _main_state(self, place: str, seq: int, x: int, locked: Any, lk: Any, dc: Any, sched: Any, now: int) -> Seen:
        """The state a main-queue message's place means at the server's time `now`."""
        count = int(dc.get(seq, 0))
        state = {"ready": ACTIVE, "deferred": DEFERRED, "sched": SCHEDULED}.get(place, LOCKED)
        if place == "sched" and int(sched[seq]) <= now:
            state = ACTIVE
        if place == "locked":
            nonce, home, rec_dc = _lock_fields(lk[seq], locked[seq])
            count = int(rec_dc)
            until = int(locked[seq])
            if until >= now:
                return Seen(LOCKED, count, 0, until, nonce)
            if count >= MAX_DC:
                return Seen(DLQ, count, 0, reason=MAX_DC_REASON)
            state = DEFERRED if home == "d" else ACTIVE
        if state in (ACTIVE, DEFERRED) and x and x <= now:
            return Seen(DLQ, count, 0, reason=TTL_REASON) if self.dl_exp else Seen(GONE, count, 0)
        return Seen(state, count, 0)

    def _check_dead_letter_numbers(self, seen: dict[str, list[Seen]]) -> None:
        """Each partition's dead-letter subqueue numbers what it receives 1, 2, 3, ... in arrival order
        (its own sequence, not the main queue's), and a message keeps its number while it stays there."""
        new: dict[int, list[int]] = {}
        for key, views in seen.items():
            m, view = self.msgs.get(key), views[0]
            if m is None or not view.dseq:
                continue
            if m.dseq:
                assert view.dseq == m.dseq, f"{key}: dead-letter sequence number {m.dseq} became {view.dseq}"
                continue
            if m.dseq_received:
                assert view.dseq == m.dseq_received, f"{key}: received as {m.dseq_received}, stored as {view.dseq}"
            m.dseq = view.dseq
            new.setdefault(view.dseq >> PARTITION_SHIFT, []).append(view.dseq & ((1 << PARTITION_SHIFT) - 1))
        for p, numbers in new.items():
            last = self.last_dseq.get(p, 0)
            assert sorted(numbers) == list(range(last + 1, last + 1 + len(numbers))), (p, last, sorted(numbers))
            self.last_dseq[p] = last + len(numbers)

    @invariant()
    def keyspace_matches_the_model(self) -> None:
        if not hasattr(self, "name"):
            return
        self._apply_clock()  # e.g. a message deferred after its expiry time: a lock's end applies expiry
        sec, usec = self.raw.time()
        assert sec * 1000 + usec // 1000 == self.now, "the server's clock is not the test's"
        seen, physical = self._observe()
        for key, views in seen.items():
            assert key not in self.never, f"duplicate {key} was stored"
            assert len(views) == 1, f"{key} is stored {len(views)} times: {views}"
            assert key in self.msgs, f"unknown message {key}"
        self._check_dead_letter_numbers(seen)
        for key, m in self.msgs.items():
            view = seen.get(key, [Seen(GONE, m.dc, m.seq)])[0]
            where = f"{key} at {self.now}: model {m}, keyspace {view}"
            m.place = view.place
            assert view.state == m.state, where
            if m.state == GONE:
                continue
            m.seq = m.seq or view.seq
            assert view.seq == m.seq, where
            assert view.dc == m.dc, where
            assert m.dc >= m.max_dc_seen, f"{key}: delivery count went down"
            m.max_dc_seen = m.dc
            if m.state in (LOCKED, DLQ_LOCKED):
                assert (view.until, view.nonce) == (m.until, m.holder.lock_ref.nonce), where
            if m.state in (DLQ, DLQ_LOCKED):
                assert view.reason == m.reason, where
        props = self.admin.get_queue_runtime_properties(self.name)
        counts = [props.active_message_count, props.scheduled_message_count, props.dead_letter_message_count]
        assert counts == physical, (counts, physical)


def _num(k: bytes) -> Any:
    text = k.decode()
    return int(text) if text.isdigit() else text


@pytest.mark.timeout(1800)
def test_queue_against_the_model(clocked: tuple[RedisServer, ServerClock]) -> None:
    server, clock = clocked
    run_state_machine_as_test(
        lambda: QueueModel(server, clock),
        settings=settings(
            max_examples=int(os.environ.get("SBREDIS_MODEL_EXAMPLES", "300")),
            stateful_step_count=int(os.environ.get("SBREDIS_MODEL_STEPS", "40")),
            deadline=None,
            suppress_health_check=list(HealthCheck),
        ),
    )
