"""Auto-forwarding: drain outboxes into their destinations, idempotently (docs/topics.md).

A queue or subscription with ``forward_to`` (or ``forward_dead_lettered_messages_to``) stores
messages as usual. A drain of one of its partitions runs three script calls:

1. ``forward_out`` on the source partition moves its forwarded messages into the partition's
   transfer queue (the outbox, same hash tag, each entry numbered in order) and returns the oldest
   outbox entries;
2. ``forward_in`` (queue) or ``publish`` (topic) on each destination partition stores them; the
   destination keeps the highest outbox number it took from that source partition and drops what
   is at or below it, so delivering the same prefix twice stores it once;
3. ``forward_ack`` on the source partition removes the delivered entries and moves undeliverable
   ones (missing or disabled destination, too large, past 4 hops) to the transfer dead-letter
   subqueue.

A process that dies between any two steps loses nothing: the outbox keeps what was not
acknowledged, and the next drain delivers it again (dropped at the destination if it arrived).

Who drains: a sender right after a send to a queue with forward_to (or to a topic with such a
subscription), following the chain of destinations; a receiver whose receive finds nothing, and
every peek, for the entities that forward (or forward dead-lettered messages) into its entity, at
most once a second per client and entity; and the administration client's maintenance
(``forward_pending``, run by the runtime-property calls at most every 30 s). Scheduled, expired
and dead-lettered messages of a forwarding entity move at the next of these after they appear.

Transactions use the same outboxes for their sends to other entities ("send via", see
_core/transaction.py): the committing client drains right after the commit, and records each
(source, destination) pair in ``{sb:entities}:via`` before the commit, so the pulls and the
maintenance above find the source even when the committing process dies right after committing.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import time
from collections.abc import Iterable
from typing import Any

from .._core import fanout, protocol
from .._core.keys import FORWARDERS, SUBSCRIPTIONS, VIA
from .._core.meta import EntityMeta
from .._core.protocol import cancel_topic_scheduled, forward_ack, forward_in, forward_out, publish
from ..exceptions import MessagingEntityNotFoundError, ServiceBusError, ServiceBusServerBusyError
from ._registry import Registry
from ._transport import Transport

log = logging.getLogger("sbredis")
META_TTL = 2.0  # seconds a destination's registry record is trusted
PULL_INTERVAL = 1.0  # a receiver pulls forwarded messages into its entity at most this often
MAX_ROUNDS = 20  # outbox batches per partition per drain (500 entries each)
# calls per drain that only sweep expired messages (forward_out's `more`: up to 5,000 each), so
# one live message behind 100,000 expired ones is forwarded by the drain that meets them
SWEEP_ROUNDS = 100

Outcome = tuple[int, str, str, str, bytes]


class Forwarder:
    """Drains outboxes for a client (one per ServiceBusClient or administration client)."""

    def __init__(self, transport: Transport) -> None:
        self._transport = transport
        self._registry = Registry(transport)
        self._meta: dict[str, tuple[float, EntityMeta | None]] = {}
        self._reverse: tuple[float, dict[str, list[str]]] | None = None
        self._pulled: dict[str, float] = {}
        self._via: set[tuple[str, str]] = set()  # (source, destination) pairs recorded in VIA

    async def meta(self, name: str, refresh: bool = False) -> EntityMeta | None:
        """The entity's metadata (cached for META_TTL seconds), None when it does not exist."""
        cached = self._meta.get(name)
        if cached is not None and not refresh and time.monotonic() - cached[0] < META_TTL:
            return cached[1]
        rec = await self._registry.get(name)
        meta = None
        if rec is not None:
            try:
                meta = fanout.meta_from_record(name, rec)
            except MessagingEntityNotFoundError:
                meta = None
        self._meta[name] = (time.monotonic(), meta)
        return meta

    def remember(self, meta: EntityMeta) -> None:
        self._meta[meta.name] = (time.monotonic(), meta)

    # -- draining
    async def drain(self, path: str, partitions: Iterable[int] | None = None, depth: int = 0) -> int:
        """Deliver what `path` (a queue or subscription) forwards from `partitions` (default: all),
        then drain the destinations that forward further. Returns the messages delivered. Errors
        are logged, not raised: what was not delivered stays in the outbox for the next drain."""
        meta = await self.meta(path)
        if meta is None or meta.kind == "topic":
            return 0
        parts = sorted(set(range(meta.partition_count) if partitions is None else partitions))
        delivered = 0
        follow: dict[str, set[int]] = {}
        rounds = sweeps = 0
        while parts and rounds < MAX_ROUNDS and sweeps < SWEEP_ROUNDS:
            calls = protocol.stamped([forward_out.call(path, p) for p in parts], meta.generation)
            replies = await self._transport.run_many(calls, path)
            if any(isinstance(r, MessagingEntityNotFoundError) for r in replies):
                fresh = await self.meta(path, refresh=True)
                if fresh is not None and fresh.generation != meta.generation:  # deleted and created again
                    meta, parts = fresh, list(range(fresh.partition_count))
                    continue
            acks: dict[int, list[Outcome]] = {}
            batches: dict[str, list[tuple[int, str, forward_out.OutboxEntry]]] = {}
            full, swept = [], []
            for p, reply in zip(parts, replies, strict=True):
                if isinstance(reply, ServiceBusError):
                    log.warning("forwarding from partition %d of %s failed: %s", p, path, reply.message)
                    continue
                if forward_out.journal_pending(reply):  # finish the topic's fan-out first, then again
                    await finish_journal(self._transport, path.partition(SUBSCRIPTIONS)[0], p)
                    swept.append(p)
                    continue
                inc, entries = forward_out.parse(reply)
                if (
                    len(entries) >= forward_out.OUTBOX_RETURN
                    or sum(len(e.blob) for e in entries) >= forward_out.OUTBOX_BYTES
                ):
                    full.append(p)
                elif forward_out.more(reply):  # expired messages left: one to forward may wait behind them
                    swept.append(p)
                for e in entries:
                    if e.hop >= fanout.MAX_HOPS:
                        acks.setdefault(p, []).append(
                            (e.seq, "dl", *fanout.HOPS_EXCEEDED, fanout.annotate(e.blob, path))
                        )
                    else:
                        batches.setdefault(e.destination, []).append((p, inc, e))
            for dest, items in batches.items():
                delivered += await self._deliver(path, dest, items, acks, follow)
            if acks:
                calls = [forward_ack.call(path, p, outs) for p, outs in acks.items()]
                for reply in await self._transport.run_many(calls, path):
                    if isinstance(reply, ServiceBusError):
                        log.warning("acknowledging forwarded messages of %s failed: %s", path, reply.message)
            if full:
                rounds += 1
            else:
                sweeps += 1
            parts = full + swept
        if depth < fanout.MAX_HOPS:
            for dest, ps in follow.items():
                delivered += await self.drain(dest, ps, depth + 1)
        return delivered

    async def _deliver(
        self,
        path: str,
        dest: str,
        items: list[tuple[int, str, forward_out.OutboxEntry]],
        acks: dict[int, list[Outcome]],
        follow: dict[str, set[int]],
        again: bool = True,
    ) -> int:
        """Store outbox entries of `path` at `dest`, one call per (source partition, destination
        partition) in outbox order; record each entry's outcome in `acks`."""
        dmeta = await self.meta(dest)
        if dmeta is None or dmeta.kind not in ("queue", "topic"):
            reason = fanout.undeliverable(MessagingEntityNotFoundError(dest), dest)
            assert reason is not None
            for p, _, e in items:
                acks.setdefault(p, []).append((e.seq, "dl", *reason, fanout.annotate(e.blob, path)))
            return 0
        groups: dict[tuple[int, str, int], list[tuple[forward_out.OutboxEntry, bytes]]] = {}
        for p, inc, e in items:
            blob = fanout.delivered_blob(e, path)
            if len(blob) > dmeta.max_message_bytes:
                desc = f"The message of {len(blob)} bytes is larger than '{dest}' accepts."
                acks.setdefault(p, []).append((e.seq, "dl", "MessageSizeExceeded", desc, fanout.annotate(e.blob, path)))
                continue
            if dmeta.sessions and not fanout.session_of(blob):  # refused alone, not with its batch
                acks.setdefault(p, []).append((e.seq, "dl", *fanout.no_session(dest), fanout.annotate(e.blob, path)))
                continue
            dp = fanout.destination_partition(blob, dmeta)
            groups.setdefault((p, inc, dp), []).append((e, blob))
        keys_ = list(groups)
        calls = []
        for p, inc, dp in keys_:
            args: list[Any] = []
            for e, blob in groups[(p, inc, dp)]:
                args += fanout.delivery_args(e, blob, dmeta)
            source = fanout.source_id(path, p, inc)
            if isinstance(dmeta, fanout.TopicMeta):
                calls.append(publish.call(dest, dp, dmeta.subs.get(dp) or publish.TopicSubs(), source, args))
            else:
                calls.append(forward_in.call(dest, dp, source, args))
        replies = await run_publish(self._transport, dmeta, protocol.stamped(calls, dmeta.generation))
        if again and any(isinstance(r, MessagingEntityNotFoundError) for r in replies):
            fresh = await self.meta(dest, refresh=True)
            if fresh is not None and fresh.generation != dmeta.generation:
                # the destination was deleted and created again (maybe with another partition
                # count) since its metadata was read: plan the delivery again for the new one
                return await self._deliver(path, dest, items, acks, follow, again=False)
        delivered = 0
        for (p, _, dp), reply in zip(keys_, replies, strict=True):
            entries = groups[(p, _, dp)]
            if isinstance(reply, ServiceBusError):
                reason = fanout.undeliverable(reply, dest)
                if reason is None:
                    log.warning("forwarding %s -> %s failed, will retry: %s", path, dest, reply.message)
                    continue
                self._meta.pop(dest, None)
                for e, _blob in entries:
                    acks.setdefault(p, []).append((e.seq, "dl", *reason, fanout.annotate(e.blob, path)))
                continue
            for e, _blob in entries:
                acks.setdefault(p, []).append((e.seq, "ok", "", "", b""))
            delivered += forward_in.delivered(reply)
            if isinstance(dmeta, fanout.TopicMeta):
                subs = dmeta.subs.get(dp) or publish.TopicSubs()
                for name in subs.forwarding:
                    follow.setdefault(f"{dest}{SUBSCRIPTIONS}{name}", set()).add(dp)
            elif dmeta.forwards:
                follow.setdefault(dest, set()).add(dp)
        return delivered

    # -- fallbacks
    async def register_via(self, source: str, destinations: Iterable[str]) -> None:
        """Record that `source`'s outbox may hold transaction sends for `destinations` (before
        the commit that writes them), so draining does not depend on the committing process."""
        new = [d for d in destinations if (source, d) not in self._via]
        if not new:
            return
        fields = [x for d in new for x in (json.dumps([source, d]), "1")]
        await self._transport.execute("HSET", VIA, *fields, entity=source)
        self._via.update((source, d) for d in new)

    async def _reverse_index(self) -> dict[str, list[str]]:
        """destination -> the queues and subscriptions that forward into it (from the forwarders
        index the administration client keeps) or that transactions sent through to it (the via
        index), cached for META_TTL seconds."""
        if self._reverse is not None and time.monotonic() - self._reverse[0] < META_TTL:
            return self._reverse[1]
        raw = await self._transport.execute("HGETALL", FORWARDERS)
        index: dict[str, list[str]] = {}
        for name, text in sorted(raw.items()):
            path = name.decode() if isinstance(name, bytes) else str(name)
            for target in set(json.loads(text)):
                if target:
                    index.setdefault(target, []).append(path)
        for pair in sorted(await self._transport.execute("HKEYS", VIA)):
            src, target = json.loads(pair)
            if src not in index.setdefault(target, []):
                index[target].append(src)
        self._reverse = (time.monotonic(), index)
        return index

    async def sources_into(self, dest: str) -> list[str]:
        """Every entity whose forwarding reaches `dest` (a subscription: through its topic), the
        farthest first (draining those follows the chain down to the nearer ones)."""
        index = await self._reverse_index()
        out: list[str] = []
        frontier = [dest.split(SUBSCRIPTIONS, 1)[0]]
        seen = set(frontier)
        for _ in range(fanout.MAX_HOPS + 1):
            upstream = []
            for target in frontier:
                for src in index.get(target, []):
                    if src in out:
                        continue
                    out.append(src)
                    feeder = src.split(SUBSCRIPTIONS, 1)[0]  # a subscription is fed by its topic
                    if feeder not in seen:
                        seen.add(feeder)
                        upstream.append(feeder)
            if not upstream:
                break
            frontier = upstream
        return out[::-1]

    async def pull(self, dest: str) -> int:
        """Drain every source that forwards into `dest` (at most once per PULL_INTERVAL); errors
        are logged. Returns the messages delivered."""
        now = time.monotonic()
        if now - self._pulled.get(dest, -PULL_INTERVAL) < PULL_INTERVAL:
            return 0
        self._pulled[dest] = now
        delivered = 0
        try:
            for src in await self.sources_into(dest):
                delivered += await self.drain(src)
        except ServiceBusError as e:
            log.warning("pulling forwarded messages into %s failed: %s", dest, e.message)
        return delivered

    async def drain_quietly(self, path: str, partitions: Iterable[int] | None = None) -> int:
        """drain(), with errors logged instead of raised (after a send that already succeeded)."""
        try:
            return await self.drain(path, partitions)
        except ServiceBusError as e:
            log.warning("forwarding from %s failed (the next drain retries): %s", path, e.message)
            return 0

    async def drain_published(self, meta: fanout.TopicMeta, partitions: Iterable[int]) -> None:
        """After a publish: drain the forwarding subscriptions' partitions it wrote to."""
        targets: dict[str, set[int]] = {}
        for p in partitions:
            subs = meta.subs.get(p)
            for name in subs.forwarding if subs else ():
                targets.setdefault(f"{meta.name}{SUBSCRIPTIONS}{name}", set()).add(p)
        for path, parts in targets.items():
            await self.drain_quietly(path, parts)

    async def drain_all(self) -> int:
        """Drain every forwarding queue and subscription (the administration client's maintenance)."""
        index = await self._reverse_index()
        delivered = 0
        for src in sorted({s for sources in index.values() for s in sources}):
            delivered += await self.drain(src)
        return delivered


# Test-only: the process kills itself (SIGKILL) before the continuation call after this many, so
# tests can leave a fan-out journal half done the way a crash does (docs/topics.md)
KILL_AFTER_CHUNKS = "SBREDIS_TEST_KILL_AFTER_CHUNKS"
PUBLISH_ROUNDS = 10  # publish attempts per call while its subscription set is stale or a journal pends
JOURNAL_STEPS = 10_000  # continuation calls one finish_journal makes at most (each writes one chunk)


async def run_publish(transport: Transport, meta: EntityMeta, calls: list[Any]) -> list[Any]:
    """run_many for publish (and cancel) calls: a call whose subscription set was stale is planned
    again with the current set, which the script answers with and is cached on the topic's meta;
    one wider than a call's budget runs split (:func:`publish_wide`, :func:`cancel_wide`); one
    refused because a journal is pending finishes that journal, then runs again."""
    if not calls:
        return []
    if not isinstance(meta, fanout.TopicMeta):
        return await transport.run_many(calls, meta.name)
    replies: list[Any] = [None] * len(calls)
    todo = list(range(len(calls)))
    for _ in range(PUBLISH_ROUNDS):
        one = [i for i in todo if not publish.splits(calls[i]) and not cancel_topic_scheduled.splits(calls[i])]
        if one:
            for i, r in zip(one, await transport.run_many([calls[i] for i in one], meta.name), strict=True):
                replies[i] = r
        for i in todo:
            if i not in one:
                wide = cancel_wide if cancel_topic_scheduled.splits(calls[i]) else publish_wide
                replies[i] = await wide(transport, meta.name, calls[i])
        redo = []
        for i in todo:
            subs = publish.stale(replies[i])
            if subs is not None:
                meta.subs[calls[i].partition] = subs
                calls[i] = publish.rebuild(calls[i], meta.name, subs)
                redo.append(i)
                continue
            journal = publish.pending(replies[i])
            if journal is not None:
                try:
                    await finish_journal(transport, meta.name, calls[i].partition, journal, calls[i].gen)
                except ServiceBusError as e:
                    replies[i] = e
                    continue
                redo.append(i)
        todo = redo
        if not todo:
            break
    for i in todo:  # still stale or behind a journal after every round: busy, worth retrying
        replies[i] = ServiceBusServerBusyError(
            f"the subscriptions of '{meta.name}' kept changing, or other fan-outs kept it waiting, during the publish"
        )
    return replies


async def publish_wide(transport: Transport, topic: str, c: Any) -> Any:
    """One publish too wide for one script call (docs/topics.md, "Wide fan-outs"): read-only
    checks of every chunk, so a refusal comes before anything is written; then the call that
    takes the messages (sequence numbers, duplicate detection) and records the journal; then the
    journal's chunks.
    Returns the reply the one call would give, a stale or pending reply (run_publish handles
    it), or the error; an error after the messages were accepted is in doubt, like a lost reply."""
    try:
        for check in publish.check_calls(c, topic):
            r = await transport.run(check, topic)
            if publish.stale(r) is not None:
                return r
        start = publish.start_call(c, topic)
        r = await transport.run(start, topic)
        if publish.stale(r) is not None or publish.pending(r) is not None:
            return r
        reply, journal = publish.started(start, r)
        if journal is not None:
            await finish_journal(transport, topic, c.partition, journal, c.gen)
    except ServiceBusError as e:
        return e
    return reply


async def cancel_wide(transport: Transport, topic: str, c: Any) -> Any:
    """A cancel of more copies than one call removes: the start call takes the numbers (or
    refuses them all) and records a journal, whose chunks then remove the copies.
    Returns [0], a pending reply (run_publish finishes that journal and calls again) or the error;
    once the start call took the numbers the cancel stands, and a receiver or the next publish
    finishes a journal this call could not."""
    try:
        r = await transport.run(cancel_topic_scheduled.start_call(c, topic), topic)
        journal = cancel_topic_scheduled.started(r)
        if journal is None:
            return r
        await finish_journal(transport, topic, c.partition, journal, c.gen)
    except ServiceBusError as e:
        return e
    return [0]


async def finish_journal(
    transport: Transport, topic: str, partition: int, journal: publish.Journal | None = None, gen: str = ""
) -> None:
    """Drive a topic partition's pending fan-out journal to its end, one chunk per call (None:
    whichever is pending, if any). Another client driving the same journal is harmless: a call
    naming a cursor already passed writes nothing and answers the current one."""
    if journal is None:
        journal = publish.Journal("", -1, ())
    kill_after = os.environ.get(KILL_AFTER_CHUNKS)
    for done in range(JOURNAL_STEPS):
        if kill_after is not None and done >= int(kill_after):
            os.kill(os.getpid(), signal.SIGKILL)  # test-only (docs/topics.md): a publisher dying mid fan-out
        # a publish's journal is publish.lua's to write, a cancel's cancel_topic_scheduled.lua's
        # (either answers the other's state)
        of = cancel_topic_scheduled if cancel_topic_scheduled.is_cancel(journal) else publish
        step = await transport.run(of.continue_call(topic, partition, journal, gen), topic)
        nxt = publish.pending(step)
        if nxt is None:
            return
        journal = nxt
