# Generated from sbredis/aio/_transaction.py by scripts/unasync.py: edit the async source, not this.
"""ServiceBusTransaction: sends and settlements that commit atomically, or not at all.

    with client.transaction() as tx:  # commit on normal exit, discard on an exception
        sender.send_messages(msgs, transaction=tx)
        receiver.complete_message(m, transaction=tx)

Operations given ``transaction=tx`` are checked at once (raising before anything is buffered) and
kept in the client; committing is one script call on one partition (``_core/transaction.py``,
``lua/tx_commit.lua``, docs/transactions.md). Sends to entities other than the home partition's go
through its transfer queue and are delivered once by the forwarder right after the commit (or by
any later drain, should this process die in between).
"""

from __future__ import annotations

import time
from types import TracebackType
from typing import TYPE_CHECKING, Any

from .._core.transaction import DEFAULT_TIMEOUT, TxBuffer
from .._message import ServiceBusMessage, ServiceBusReceivedMessage
from ..exceptions import (
    InvalidOperationError,
    MessagingEntityNotFoundError,
    ServiceBusError,
    TransactionTimeoutError,
)
from ._forwarder import run_publish
from ._topic_sender import ServiceBusTopicSender

if TYPE_CHECKING:
    from ._handler import HandlerContext


class ServiceBusTransaction:
    """A transaction of one ServiceBusClient (``client.transaction()``); see the module doc.

    States: active, then committed or discarded. A transaction not committed within `timeout`
    seconds (2 minutes) is discarded. A commit that failed with a retryable error (the connection)
    may have been applied or not: the transaction stays active and ``commit()`` may be called
    again, which applies it at most once.
    """

    def __init__(self, context: HandlerContext, timeout: float = DEFAULT_TIMEOUT) -> None:
        self._context = context
        self._buffer = TxBuffer()
        self._timeout = timeout
        self._started = time.monotonic()
        self._state = "active"
        self._attempted = False  # a commit reached (or may have reached) Redis

    @property
    def state(self) -> str:
        """'active', 'committed' or 'discarded'."""
        return self._state

    def _check(self, context: HandlerContext) -> None:
        """Raise unless operations of a handler with this context may join now."""
        if context is not self._context:
            raise InvalidOperationError(
                "the sender or receiver belongs to another ServiceBusClient than the transaction"
            )
        if self._state != "active":
            raise InvalidOperationError(f"the transaction is {self._state}")
        if self._attempted:
            raise InvalidOperationError("the transaction's commit is in doubt: commit it again, add nothing")
        self._check_time()

    def _check_time(self) -> None:
        if time.monotonic() - self._started > self._timeout:
            self._state = "discarded"
            raise TransactionTimeoutError(
                f"The transaction was not committed within {self._timeout:g} seconds and was discarded; "
                "nothing of it was applied."
            )

    def join_send(self, context: HandlerContext, sender: Any, messages: list[ServiceBusMessage]) -> None:
        """Internal: buffer a send (ServiceBusSender.send_messages with transaction=); `context`
        is the sender's, which must be this transaction's client's."""
        self._check(context)
        meta = self._context.entity(sender.entity_name)
        want = "topic" if isinstance(sender, ServiceBusTopicSender) else "queue"
        if meta.kind != want:
            raise InvalidOperationError(f"'{meta.name}' is a {meta.kind}, not a {want}")
        self._buffer.add_send(meta, messages)

    def join_settle(
        self,
        context: HandlerContext,
        receiver: Any,
        action: str,
        messages: list[ServiceBusReceivedMessage],
        reason: str = "",
        description: str = "",
    ) -> None:
        """Internal: buffer a settlement (ServiceBusReceiver's settle methods with transaction=);
        `context` is the receiver's, which must be this transaction's client's."""
        self._check(context)
        meta = self._context.entity(receiver.entity_name)
        self._buffer.add_settle(action, messages, reason, description, sessions=meta.sessions)

    def commit(self) -> None:
        """Apply every operation, or none.

        Raises:
            MessageLockLostError: a settled message's lock was lost before commit (``messages``
                names them); nothing was applied, the transaction is discarded.
            SessionLockLostError: the same for a session's messages: the session lock was lost.
            TransactionTimeoutError: not committed within the timeout; nothing was applied.
            InvalidOperationError: the transaction is not active, or sends only to several topics.
            MessagingEntityNotFoundError, MessagingEntityDisabledError, MessageSizeExceededError,
            ServiceBusQuotaExceededError: nothing was applied; the transaction is discarded.
            ServiceBusConnectionError, OperationTimeoutError: in doubt; commit() again.
        """
        if self._state != "active":
            raise InvalidOperationError(f"the transaction is {self._state}")
        if not self._attempted:
            self._check_time()
        plan = None
        try:
            plan = self._buffer.plan()
            if plan is None:
                self._state = "committed"
                return
            self._attempted = True
            if plan.publish is not None:
                meta, sends = plan.publish
                reply = (run_publish(self._context.transport, meta, [self._buffer.publish_call(meta, sends)]))[0]
                if isinstance(reply, ServiceBusError):
                    raise reply
            else:
                assert plan.call is not None
                if plan.transfers:
                    self._context.forwarder.register_via(plan.home, plan.transfers)
                reply = self._context.transport.run(plan.call, plan.home)
                self._buffer.applied(reply, plan.home)
        except ServiceBusError as e:
            if isinstance(e, MessagingEntityNotFoundError) and plan is not None:
                self._context.forget(plan.home)
            if not (e.retryable and self._attempted):
                self._state = "discarded"
            raise
        self._state = "committed"
        if plan.publish is not None:
            self._context.forwarder.drain_published(plan.publish[0], {plan.partition})
        elif plan.transfers or plan.forwards:
            self._context.forwarder.drain_quietly(plan.home, [plan.partition])

    def discard(self) -> None:
        """Drop every operation (nothing was sent to Redis); the locks stay as they are."""
        if self._state == "active" and not self._attempted:
            self._state = "discarded"

    def __enter__(self) -> ServiceBusTransaction:
        return self

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._state != "active":
            return
        if et is None:
            self.commit()
        else:
            self.discard()

    def __repr__(self) -> str:
        return f"ServiceBusTransaction({self._state}, {len(self._buffer)} operations)"
