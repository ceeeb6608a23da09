"""Transactions, sans-IO: operations buffered and checked when added, then one commit call.

A transaction (docs/transactions.md) keeps its operations on the client until commit; nothing
reaches Redis before. Committing is ONE ``tx_commit`` script call on one partition, the
transaction's *home*, which checks everything (every lock held by the server clock, sizes, quota,
status) before it changes anything, so a transaction applies all its operations or none:

* the home is the partition the settled messages were received from; with no settlements, the
  partition of the first send to a queue. Settlements from two entities or two partitions in one
  transaction raise InvalidOperationError when added;
* sends to the home partition are stored there directly;
* sends to any other entity ("send via", as Service Bus's transfer entity) go into the home
  partition's transfer queue (the forwarding outbox, same hash tag) in the same script call, and
  the forwarder delivers them into their destination exactly once (destination high-water marks,
  see aio/_forwarder.py);
* a transaction of sends to one topic partition only is one ``publish`` call (atomic per partition).

Partition keys (the Service Bus rules for partitioned entities): every message sent in a
transaction to a partitioned entity carries a key (session_id, partition_key, or message_id when
the entity has duplicate detection), all the same; messages of two sessions never share a
transaction; a send to the home entity must land in the home partition.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .._message import ServiceBusMessage, ServiceBusReceivedMessage
from ..exceptions import (
    InvalidArgumentError,
    InvalidOperationError,
    MessageLockLostError,
    MessageSizeExceededError,
    SessionLockLostError,
)
from . import fanout
from .keys import TRANSFER
from .meta import EntityMeta
from .protocol import Call, Group, publish, tx_commit
from .send_plan import message_key, partition_of

MAX_OPERATIONS = 100  # operations per transaction (Service Bus's limit)
DEFAULT_TIMEOUT = 120.0  # seconds: a transaction not committed within this is discarded
ACTIONS = ("complete", "abandon", "defer", "dead_letter", "renew")
MARK_MS = 600_000  # a committed transaction is remembered this long (a retried commit is not applied twice)


@dataclass(frozen=True)
class TxSend:
    """A message to send at commit (its stored form taken when it was added)."""

    meta: EntityMeta
    partition: int
    message_id: str  # '' when duplicate detection does not apply
    ttl_ms: int
    sched_ms: int
    blob: bytes


@dataclass(frozen=True)
class TxSettle:
    action: str
    message: ServiceBusReceivedMessage
    reason: str = ""
    description: str = ""


@dataclass(frozen=True)
class Commit:
    """How to commit: one tx_commit call on partition `partition` of `home` (or, for sends to one
    topic partition only, one publish call), and the destinations reached through the transfer queue."""

    home: str
    partition: int
    call: Call | None
    transfers: tuple[str, ...]
    publish: tuple[fanout.TopicMeta, tuple[TxSend, ...]] | None = None
    forwards: bool = False  # the home forwards (auto-forwarding): drain it after commit


class TxBuffer:
    """A transaction's operations, checked as they are added (nothing is kept when a check fails)."""

    def __init__(self) -> None:
        self.id = os.urandom(16).hex()
        self.sends: list[TxSend] = []
        self.settles: list[TxSettle] = []
        self.key: str | None = None  # the partition key of the messages sent to partitioned entities
        self.session: str | None = None
        self.settle_home: tuple[str, int] | None = None
        self.settle_session: str | None = None  # the session of the settled messages
        self.session_locked = False  # the settled messages are held by a session lock (session entity)
        self._settling: set[int] = set()

    def __len__(self) -> int:
        return len(self.sends) + len(self.settles)

    def _room(self, n: int) -> None:
        if len(self) + n > MAX_OPERATIONS:
            raise InvalidOperationError(f"a transaction holds at most {MAX_OPERATIONS} operations")

    def add_send(self, meta: EntityMeta, messages: Sequence[ServiceBusMessage]) -> None:
        """Buffer sends to `meta` (a queue or topic).

        Raises:
            InvalidOperationError: a partition-key or session rule is broken (see the module doc),
                the entity is not a queue or topic, or the transaction is full.
            MessageSizeExceededError: a message is over the entity's limit.
        """
        if meta.kind not in ("queue", "topic"):
            raise InvalidOperationError(f"'{meta.name}' is a {meta.kind}: a transaction sends to queues and topics")
        self._room(len(messages))
        key, session = self.key, self.session
        staged: list[TxSend] = []
        for m in messages:
            sid = m.session_id
            if sid is not None:
                if session is None:
                    session = sid
                elif sid != session:
                    raise InvalidOperationError(
                        f"messages of two sessions ({session!r} and {sid!r}) cannot be sent in one transaction"
                    )
            p = 0
            if meta.partition_count > 1:
                k = message_key(m, meta)
                if k is None:
                    raise InvalidOperationError(
                        f"a message sent in a transaction to the partitioned entity '{meta.name}' needs a "
                        "partition key: session_id, partition_key, or message_id with duplicate detection"
                    )
                if key is None:
                    key = k
                elif k != key:
                    raise InvalidOperationError(
                        f"all messages of a transaction must carry the same partition key ({key!r}, not {k!r})"
                    )
                p = partition_of(k, meta.partition_count)
            if self.settle_home is not None and self.settle_home[0] == meta.name and self.settle_home[1] != p:
                raise InvalidOperationError(
                    f"the transaction settles messages of partition {self.settle_home[1]} of '{meta.name}'; "
                    f"this message's partition key puts it in partition {p}"
                )
            blob = m.encoded()
            if len(blob) > meta.max_message_bytes:
                raise MessageSizeExceededError(
                    f"A message of {len(blob)} bytes exceeds the maximum of {meta.max_message_bytes} bytes "
                    f"on '{meta.name}'."
                )
            mid = (m.id_text or "") if meta.dedup else ""
            staged.append(TxSend(meta, p, mid, m.ttl_ms, m.sched_ms, blob))
        self.sends += staged
        self.key, self.session = key, session

    def add_settle(
        self,
        action: str,
        messages: Sequence[ServiceBusReceivedMessage],
        reason: str = "",
        description: str = "",
        sessions: bool = False,
    ) -> None:
        """Buffer settlements of received messages (already checked by the receiver: locked,
        unsettled, from its entity). `sessions`: the entity requires sessions, so its messages
        (not its dead letters) are held by their session's lock.

        Raises:
            InvalidOperationError: messages of two entities, partitions or sessions, a message with
                an operation in this transaction already, a transfer-queue message, a full
                transaction, or renewing a session message (renew its session instead).
        """
        if action not in ACTIONS:
            raise InvalidOperationError(f"unknown settlement {action!r}")
        session_locked = sessions and any(m.lock_ref.group == Group.MAIN for m in messages)
        if action == "renew" and session_locked:
            raise InvalidOperationError(
                "A session message's lock is the session lock: renew receiver.session (outside the transaction)."
            )
        self._room(len(messages))
        home, session = self.settle_home, self.settle_session
        seen = set(self._settling)
        for m in messages:
            sid = m.session_id
            if sid is not None:
                if session is None:
                    session = sid
                elif sid != session:
                    raise InvalidOperationError(
                        f"messages of two sessions ({session!r} and {sid!r}) cannot be settled in one transaction"
                    )
            if m.entity_name.endswith(TRANSFER):
                raise InvalidOperationError("messages of a transfer queue cannot be settled in a transaction")
            where = (m.entity_name, m.partition_id)
            if home is None:
                for s in self.sends:
                    if s.meta.name == m.entity_name and s.partition != m.partition_id:
                        raise InvalidOperationError(
                            f"the transaction sends to partition {s.partition} of '{m.entity_name}'; a message "
                            f"received from partition {m.partition_id} cannot be settled in it"
                        )
                home = where
            elif where != home:
                raise InvalidOperationError(
                    "all messages settled in one transaction must come from one entity partition "
                    f"(partition {home[1]} of '{home[0]}', not partition {where[1]} of '{where[0]}')"
                )
            if id(m) in seen:
                raise InvalidOperationError("the message has an operation in this transaction already")
            seen.add(id(m))
        self.settles += [TxSettle(action, m, reason, description) for m in messages]
        self._settling = seen
        self.settle_home, self.settle_session = home, session
        self.session_locked = self.session_locked or session_locked

    def plan(self) -> Commit | None:
        """The commit for the buffered operations (None when there are none).

        Raises:
            InvalidOperationError: sends to several topics (or topic partitions) and nothing else:
                no queue partition to send through.
        """
        if not self.sends and not self.settles:
            return None
        if self.settle_home is not None:
            home, p = self.settle_home
        else:
            first = next((s for s in self.sends if s.meta.kind == "queue"), None)
            if first is None:
                targets = {(s.meta.name, s.partition) for s in self.sends}
                if len(targets) > 1:
                    raise InvalidOperationError(
                        "a transaction that sends to several topics needs a queue (or a settled message) to "
                        "send through"
                    )
                meta = self.sends[0].meta
                assert isinstance(meta, fanout.TopicMeta)
                return Commit(meta.name, self.sends[0].partition, None, (), (meta, tuple(self.sends)))
            home, p = first.meta.name, first.partition
        direct = [s for s in self.sends if s.meta.name == home and s.partition == p and s.meta.kind == "queue"]
        via = [s for s in self.sends if not (s.meta.name == home and s.partition == p and s.meta.kind == "queue")]
        call = tx_commit.call(
            home,
            p,
            self.id,
            MARK_MS,
            [
                (
                    t.action,
                    t.message.lock_ref.group,
                    t.message.local_seq,
                    t.message.lock_ref.nonce,
                    t.reason,
                    t.description,
                )
                for t in self.settles
            ],
            [(s.message_id, s.ttl_ms, s.sched_ms, s.blob) for s in direct],
            [(s.meta.name, s.blob) for s in via],
        )
        dests = tuple(dict.fromkeys(s.meta.name for s in via))
        forwards = any(s.meta.forwards for s in direct)
        return Commit(home, p, call, dests, None, forwards)

    def publish_call(self, meta: fanout.TopicMeta, sends: Sequence[TxSend]) -> Call:
        """The publish call of a transaction of sends to one topic partition."""
        args: list[Any] = []
        for s in sends:
            args += [s.message_id, s.ttl_ms, s.sched_ms, 0, 0, 0, s.blob]
        p = sends[0].partition
        return publish.call(meta.name, p, meta.subs.get(p) or publish.TopicSubs(), "", args)

    def applied(self, reply: list[Any], entity: str) -> None:
        """Record a tx_commit reply (committed now, or before: a retry) on the settled messages.

        Raises:
            SessionLockLostError: the settled messages are a session's, and its lock was lost
                before commit; nothing was applied.
            MessageLockLostError: a lock was lost before commit; nothing was applied.
        """
        lost_at = tx_commit.lost(reply)
        if lost_at is not None:
            lost = [self.settles[i].message for i in lost_at]
            if self.session_locked:
                raise SessionLockLostError(
                    f"The session lock on '{entity}' was lost before the transaction committed (it elapsed, or "
                    "another receiver took the session); the transaction was discarded and nothing was applied.",
                    messages=lost,
                )
            raise MessageLockLostError(
                f"The lock on {len(lost)} message(s) of '{entity}' was lost before the transaction committed "
                "(elapsed, not held, or the message is gone); the transaction was discarded and nothing was applied.",
                messages=lost,
            )
        until = tx_commit.locked_until(reply)
        for t in self.settles:
            if t.action == "renew":
                t.message.locked_until_ms = until
            else:
                t.message.settled = True


def joinable(tx: Any) -> Any:
    """`tx` when it is a transaction (sync or async), else InvalidArgumentError."""
    if not isinstance(getattr(tx, "_buffer", None), TxBuffer):
        raise InvalidArgumentError(f"transaction must be a ServiceBusTransaction (client.transaction()), not {tx!r}")
    return tx
