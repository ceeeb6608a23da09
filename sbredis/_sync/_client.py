# Generated from sbredis/aio/_client.py by scripts/unasync.py: edit the async source, not this.
"""ServiceBusClient: connections, entity metadata, and the factory for senders and receivers."""

from __future__ import annotations

import logging
import weakref
from datetime import datetime
from types import TracebackType
from typing import TYPE_CHECKING, Any

from .. import _concurrency
from .._concurrency import SyncAutoLockRenewer
from .._core.codec import to_ms
from .._core.entity import check_name
from .._core.keys import TRANSFER, subscription_path
from .._core.meta import EntityMeta
from .._core.protocol import session_list
from .._core.retry import RetryPolicy
from .._core.sdk_keywords import handler_options
from .._core.session import check_session_id, list_calls, refuse_session_receiver
from .._core.topic_entity import check_subscription_name
from .._core.transaction import DEFAULT_TIMEOUT
from .._core.validation import check_count, check_wait
from .._enums import ServiceBusReceiveMode, ServiceBusSessionFilter, ServiceBusSubQueue
from ..exceptions import InvalidArgumentError, InvalidOperationError, ServiceBusError
from ._handler import HandlerContext
from ._receiver import ServiceBusReceiver
from ._sender import DEFAULT_MAX_PENDING_SENDS, ServiceBusSender
from ._topic_sender import ServiceBusTopicSender
from ._transaction import ServiceBusTransaction
from ._transport import Transport

if TYPE_CHECKING:
    from ..paired._sync import PairedNamespace

log = logging.getLogger("sbredis")


class ServiceBusClient:
    """Entry point, as ``azure.servicebus.ServiceBusClient``: ``from_connection_string(url)``.

    URLs: ``redis://[user:password@]host:port/db``, ``rediss://`` (TLS), ``unix:///path``.
    The retry policy takes the SDK's keywords (``retry_total=3``, ``retry_backoff_factor=0.8``,
    ``retry_backoff_max=120``, ``retry_mode="exponential"|"fixed"``) and retries only retryable
    errors; other keyword options go to redis-py's connection (``socket_timeout``, ``ssl_ca_certs``).
    Closing the client closes the senders and receivers it made.

    ``paired_namespace=SendAvailabilityPairedNamespaceOptions(secondary=url, ...)`` pairs the client
    with a secondary Redis that takes its sends while the primary cannot (docs/paired-namespaces.md).
    """

    def __init__(
        self, fully_qualified_namespace: str, credential: Any = None, *, paired_namespace: Any = None, **kwargs: Any
    ) -> None:
        policy = RetryPolicy.from_options(kwargs)
        self._transport = Transport(fully_qualified_namespace, retry_policy=policy, credential=credential, **kwargs)
        self._handlers: weakref.WeakSet[ServiceBusSender | ServiceBusReceiver] = weakref.WeakSet()
        self._context = HandlerContext(self._transport)
        # paired namespaces (sbredis/paired): set up here or never; senders ask it once, when made
        self._paired: PairedNamespace | None = None
        if paired_namespace is not None:
            from ..paired._sync import PairedNamespace, Primary  # it imports this module

            self._paired = PairedNamespace(self, paired_namespace, Primary(self._transport, self._entity))
        self._context.paired = self._paired

    @classmethod
    def from_connection_string(cls, conn_str: str, **kwargs: Any) -> ServiceBusClient:
        return cls(conn_str, **kwargs)

    @property
    def fully_qualified_namespace(self) -> str:
        return self._transport.url

    @property
    def handler_context(self) -> HandlerContext:
        """Internal, for sbredis's own integrations (the Spark source and sink): the transport,
        registry, metadata cache and forwarder this client's senders and receivers share. Not part
        of the Azure SDK's API; it may change between releases."""
        return self._context

    @property
    def paired_namespace(self) -> PairedNamespace | None:
        """The pairing with a secondary namespace (metrics, state), or None."""
        return self._paired

    def start_syphon(self) -> None:
        """Run the paired namespace's syphon in this client (see PairedNamespace.start_syphon).

        Raises:
            InvalidOperationError: the client has no paired namespace.
        """
        if self._paired is None:
            raise InvalidOperationError("start_syphon needs a client made with paired_namespace=...")
        self._paired.start_syphon()

    def _entity(self, name: str, refresh: bool = False) -> EntityMeta:
        """A queue's, topic's or subscription's metadata (the paired namespace asks its client)."""
        return self._context.entity(name, refresh)

    def _forget(self, name: str) -> None:
        self._context.forget(name)

    def get_queue_sender(
        self, queue_name: str, *, max_pending_sends: int = DEFAULT_MAX_PENDING_SENDS, **kwargs: Any
    ) -> ServiceBusSender:
        """A sender for `queue_name` (checked on first use). At most `max_pending_sends` messages
        of concurrent sends wait at once; more sends wait for room.

        Raises:
            InvalidArgumentError: a bad name or an unknown option.
        """
        check_name(queue_name)
        if handler_options(kwargs):
            raise InvalidArgumentError(f"unknown sender options: {', '.join(sorted(handler_options(kwargs)))}")
        check_count("max_pending_sends", max_pending_sends, 1_000_000)
        sender = ServiceBusSender(self._context, queue_name, max_pending_sends)
        self._handlers.add(sender)
        return sender

    def get_topic_sender(
        self, topic_name: str, *, max_pending_sends: int = DEFAULT_MAX_PENDING_SENDS, **kwargs: Any
    ) -> ServiceBusTopicSender:
        """A sender for `topic_name` (checked on first use): each send reaches every subscription
        whose rules match, atomically per topic partition.

        Raises:
            InvalidArgumentError: a bad name or an unknown option.
        """
        check_name(topic_name, "topic")
        if handler_options(kwargs):
            raise InvalidArgumentError(f"unknown sender options: {', '.join(sorted(handler_options(kwargs)))}")
        check_count("max_pending_sends", max_pending_sends, 1_000_000)
        sender = ServiceBusTopicSender(self._context, topic_name, max_pending_sends)
        self._handlers.add(sender)
        return sender

    def get_subscription_receiver(
        self,
        topic_name: str,
        subscription_name: str,
        *,
        receive_mode: ServiceBusReceiveMode | str = ServiceBusReceiveMode.PEEK_LOCK,
        sub_queue: ServiceBusSubQueue | str | None = None,
        max_wait_time: float | None = None,
        prefetch_count: int = 0,
        auto_lock_renewer: Any = None,
        session_id: str | ServiceBusSessionFilter | None = None,
        **kwargs: Any,
    ) -> ServiceBusReceiver:
        """A receiver for a subscription, its dead-letter or its transfer dead-letter subqueue,
        with everything a queue receiver has (its ``entity_name`` is
        ``<topic>/Subscriptions/<subscription>``).

        Raises:
            InvalidArgumentError: a bad name, mode, subqueue or option.
        """
        check_name(topic_name, "topic")
        check_subscription_name(subscription_name)
        path = subscription_path(topic_name, subscription_name)
        return self._receiver(
            path, receive_mode, sub_queue, max_wait_time, prefetch_count, auto_lock_renewer, kwargs, session_id
        )

    def get_queue_receiver(
        self,
        queue_name: str,
        *,
        receive_mode: ServiceBusReceiveMode | str = ServiceBusReceiveMode.PEEK_LOCK,
        sub_queue: ServiceBusSubQueue | str | None = None,
        max_wait_time: float | None = None,
        prefetch_count: int = 0,
        auto_lock_renewer: Any = None,
        session_id: str | ServiceBusSessionFilter | None = None,
        **kwargs: Any,
    ) -> ServiceBusReceiver:
        """A receiver for `queue_name`, its dead-letter or its transfer dead-letter subqueue.

        prefetch_count: messages to keep locked ahead of what receive calls ask for.
        auto_lock_renewer: an AutoLockRenewer that every locked message handed out is registered with
        (a session receiver's session instead).
        session_id: a session receiver (a queue that requires sessions): that session, or with
        NEXT_AVAILABLE_SESSION any session with messages that no one holds (docs/sessions.md).

        Raises:
            InvalidArgumentError: a bad name, mode, subqueue, session_id or option.
            InvalidOperationError: session_id with a subqueue (subqueues have no sessions).
        """
        check_name(queue_name)
        return self._receiver(
            queue_name, receive_mode, sub_queue, max_wait_time, prefetch_count, auto_lock_renewer, kwargs, session_id
        )

    def _receiver(
        self,
        path: str,
        receive_mode: ServiceBusReceiveMode | str,
        sub_queue: ServiceBusSubQueue | str | None,
        max_wait_time: float | None,
        prefetch_count: int,
        auto_lock_renewer: Any,
        kwargs: dict[str, Any],
        session_id: Any = None,
    ) -> ServiceBusReceiver:
        if handler_options(kwargs):
            raise InvalidArgumentError(f"unknown receiver options: {', '.join(sorted(handler_options(kwargs)))}")
        try:
            mode = ServiceBusReceiveMode(receive_mode)
        except ValueError:
            raise InvalidArgumentError(f"unknown receive_mode {receive_mode!r}") from None
        sub = None
        if sub_queue is not None:
            try:
                sub = ServiceBusSubQueue(sub_queue)
            except ValueError:
                raise InvalidArgumentError(f"unknown sub_queue {sub_queue!r}") from None
            if sub is ServiceBusSubQueue.TRANSFER_DEAD_LETTER:
                path += TRANSFER  # the transfer queue's dead-letter group
        wait = check_wait("max_wait_time", max_wait_time)
        if wait is not None and wait <= 0:  # as the SDK: a ValueError (receive_messages(wait=False) does not wait)
            raise InvalidArgumentError("max_wait_time must be greater than 0")
        if prefetch_count != 0:
            check_count("prefetch_count", prefetch_count)
        # the other API's renewer would call this receiver's renew_each wrongly (a thread calling
        # a coroutine function, or a task blocking the loop): refused here, before anything runs
        if auto_lock_renewer is not None and not isinstance(auto_lock_renewer, SyncAutoLockRenewer):
            raise InvalidArgumentError(
                f"auto_lock_renewer must be a {SyncAutoLockRenewer.public_name} (the renewer of this client's API), "
                f"not {type(auto_lock_renewer).__name__}"
            )
        if auto_lock_renewer is not None and mode is ServiceBusReceiveMode.RECEIVE_AND_DELETE and session_id is None:
            raise InvalidOperationError("messages received in RECEIVE_AND_DELETE mode hold no lock to renew")
        if session_id is not None:
            session_id = check_session_id(session_id)
            if sub is not None:
                raise InvalidOperationError("subqueues have no sessions: session_id cannot be used with sub_queue")
        receiver = ServiceBusReceiver(
            self._context, path, mode, sub, max_wait_time, prefetch_count, auto_lock_renewer, session_id
        )
        self._handlers.add(receiver)
        return receiver

    def transaction(self, *, timeout: float = DEFAULT_TIMEOUT) -> ServiceBusTransaction:
        """A transaction: pass it as ``transaction=`` to send_messages and the settle methods of
        this client's senders and receivers; its operations commit together or not at all. Use it
        as a context manager (commit on normal exit, discard on an exception) or call commit().
        It is discarded when not committed within `timeout` seconds (docs/transactions.md).

        Raises:
            InvalidArgumentError: a timeout that is not a positive number of seconds.
        """
        if check_wait("timeout", timeout) == 0:
            raise InvalidArgumentError("timeout must be positive")
        return ServiceBusTransaction(self._context, timeout)

    def list_queue_sessions(
        self, queue_name: str, *, state_updated_after: datetime | None = None
    ) -> list[str]:
        """The ids of the queue's sessions that have available messages, a lock holder or state
        (sessions with only deferred or scheduled messages are not listed), sorted. The aio client's may be
        awaited, or iterated asynchronously as the Azure SDK's.

        ``state_updated_after``: only the sessions whose state was set after this time (by the
        server's clock; a naive datetime is UTC) and is still set, as the SDK's.

        Raises:
            InvalidArgumentError: a bad name or state_updated_after.
            InvalidOperationError: the queue does not require sessions.
            MessagingEntityNotFoundError.
        """
        check_name(queue_name)
        after = _after_ms(state_updated_after)
        return _concurrency.sync_items(self._list_sessions(queue_name, after))

    def list_subscription_sessions(
        self, topic_name: str, subscription_name: str, *, state_updated_after: datetime | None = None
    ) -> list[str]:
        """As list_queue_sessions, for a subscription that requires sessions."""
        check_name(topic_name, "topic")
        check_subscription_name(subscription_name)
        after = _after_ms(state_updated_after)
        return _concurrency.sync_items(self._list_sessions(subscription_path(topic_name, subscription_name), after))

    def _list_sessions(self, path: str, after_ms: int | None) -> list[str]:
        meta = self._entity(path, refresh=True)
        if not meta.sessions:
            raise refuse_session_receiver(path)
        pages: list[Any] = []
        calls = list_calls(path, meta.partition_count, after_ms)
        while calls:  # a partition with more sessions than a page says where to go on
            replies = self._transport.run_many(calls, path)
            for r in replies:
                if isinstance(r, ServiceBusError):
                    raise r
            pages += replies
            calls = [
                session_list.call(path, c.partition, nxt, after_ms)
                for c, r in zip(calls, replies, strict=True)
                if (nxt := session_list.next_cursor(r))
            ]
        return session_list.parse(pages)

    def close(self) -> None:
        """Close the senders (waiting for queued sends) and receivers made here, then the connections."""
        for handler in list(self._handlers):
            try:
                handler.close()
            except ServiceBusError as e:  # the connection is going anyway: say so, go on
                log.warning("closing %r failed: %s", handler, e)
        if self._paired is not None:
            self._paired.close()
        self._transport.close()

    def __enter__(self) -> ServiceBusClient:
        return self

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ServiceBusClient({self._transport.url})"


def _after_ms(when: Any) -> int | None:
    """state_updated_after as server ms (None: no filter)."""
    if when is None:
        return None
    if not isinstance(when, datetime):
        raise InvalidArgumentError(f"state_updated_after must be a datetime, not {type(when).__name__}")
    return to_ms(when)
