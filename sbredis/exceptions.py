"""The sbredis exception tree, shaped like ``azure.servicebus.exceptions``.

Every error sbredis raises is a :class:`ServiceBusError` with ``retryable`` (whether trying the
same operation again can help) and ``tracking_id`` (an id to quote in logs and reports). Errors
about the caller's input are also ``ValueError`` (and ``TypeError`` for wrong types), so code
ported from the Azure SDK that catches those keeps working.
"""

from __future__ import annotations

import uuid
from typing import Any

try:  # the azure extra: azure-core's errors, which code ported from the SDK catches
    from azure.core.exceptions import HttpResponseError as _HttpResponseError
    from azure.core.exceptions import ResourceExistsError as _ResourceExistsError
    from azure.core.exceptions import ResourceNotFoundError as _ResourceNotFoundError
except ImportError:  # pragma: no cover - the tests run with azure-core

    class _HttpResponseError(Exception):  # type: ignore[no-redef]
        """Stands in for azure-core's HttpResponseError when it is not installed."""

    class _ResourceExistsError(_HttpResponseError):  # type: ignore[no-redef]
        """Stands in for azure-core's ResourceExistsError when it is not installed."""

    class _ResourceNotFoundError(_HttpResponseError):  # type: ignore[no-redef]
        """Stands in for azure-core's ResourceNotFoundError when it is not installed."""


class ServiceBusError(Exception):
    """Root of every sbredis error."""

    retryable_default = False

    def __init__(self, message: str, *, retryable: bool | None = None, **kwargs: Any) -> None:
        tracking_id = kwargs.pop("tracking_id", None) or uuid.uuid4().hex
        # first: azure-core's HttpResponseError, a base of some of these, sets message and error too
        super().__init__(f"{message} TrackingId:{tracking_id}")
        self.message = message
        self.retryable = self.retryable_default if retryable is None else retryable
        self.tracking_id = tracking_id
        self.error = kwargs.pop("error", None)
        self.details = kwargs


class ServiceBusConnectionError(ServiceBusError):
    """Redis could not be reached, or the connection broke during the operation."""

    retryable_default = True


class ServiceBusCommunicationError(ServiceBusConnectionError):
    """A network-level failure talking to Redis."""


class ServiceBusAuthenticationError(ServiceBusError):
    """Redis refused the credentials."""


class ServiceBusAuthorizationError(ServiceBusError):
    """Redis refused the operation for this user (ACL)."""


class OperationTimeoutError(ServiceBusError):
    """The operation did not finish in time."""

    retryable_default = True


class TransactionTimeoutError(OperationTimeoutError):
    """The transaction was not committed within its timeout (2 minutes by default) and was
    discarded: nothing of it was applied. Not retryable as such: start a new transaction."""

    retryable_default = False


class ServiceBusServerBusyError(ServiceBusError):
    """Redis is busy (loading, or a script is running); try again later."""

    retryable_default = True


class ServiceBusQuotaExceededError(ServiceBusError):
    """The entity is full (max_size_in_megabytes) or Redis is out of memory."""


class MessagingEntityNotFoundError(ServiceBusError, _ResourceNotFoundError):
    """No queue (or other entity) of that name exists. Also azure-core's ResourceNotFoundError
    (when azure-core is installed), as the SDK's administration client raises."""


class MessagingEntityAlreadyExistsError(ServiceBusError, _ResourceExistsError):
    """An entity of that name exists already. Also azure-core's ResourceExistsError (when
    azure-core is installed), as the SDK's administration client raises."""


class MessagingEntityDisabledError(ServiceBusError):
    """The entity's status forbids this operation (Disabled, SendDisabled, ReceiveDisabled)."""


class MessageAlreadySettled(ServiceBusError):  # noqa: N818 - the Azure SDK's name
    """The message was settled already (or received in RECEIVE_AND_DELETE mode)."""


class MessageLockLostError(ServiceBusError):
    """The lock on the message is gone: it elapsed, was never ours, or the message is gone.

    ``messages`` lists the messages of a batch settlement whose locks were lost; the others in the
    batch were settled.
    """

    def __init__(self, message: str, *, messages: list[Any] | None = None, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.messages = messages or []


class SessionLockLostError(ServiceBusError):
    """The session lock is gone (it elapsed, or the receiver let go of the session): the session's
    messages cannot be settled and its state cannot be used through this receiver; another receiver
    may take the session. ``messages`` lists the messages of a settlement that failed for it."""

    def __init__(self, message: str, *, messages: list[Any] | None = None, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.messages = messages or []


class SessionCannotBeLockedError(ServiceBusError):
    """Another receiver holds the session (its lock has not elapsed)."""


class AutoLockRenewFailed(ServiceBusError):  # noqa: N818 - the Azure SDK's name
    """The AutoLockRenewer could not renew a lock (``error`` holds the cause); it stopped renewing it."""


class AutoLockRenewTimeout(ServiceBusError):  # noqa: N818 - the Azure SDK's name
    """The AutoLockRenewer's max_lock_renewal_duration for a message passed; its lock may now elapse."""


class MessageNotFoundError(ServiceBusError):
    """No message with that sequence number is in the expected state (deferred, scheduled)."""


class InvalidOperationError(ServiceBusError, ValueError, _HttpResponseError):
    """The operation is not valid here (Service Bus's InvalidOperationException). Also azure-core's
    HttpResponseError (when azure-core is installed): the SDK's administration client reports the
    settings and names the service refuses as one."""


class InvalidArgumentError(InvalidOperationError, TypeError):
    """An argument has the wrong type or value; nothing was sent to Redis."""


class MessageSizeExceededError(ServiceBusError, ValueError):
    """A message or batch is larger than the entity's max_message_size_in_kilobytes."""


__all__ = [
    "AutoLockRenewFailed",
    "AutoLockRenewTimeout",
    "InvalidArgumentError",
    "InvalidOperationError",
    "MessageAlreadySettled",
    "MessageLockLostError",
    "MessageNotFoundError",
    "MessageSizeExceededError",
    "MessagingEntityAlreadyExistsError",
    "MessagingEntityDisabledError",
    "MessagingEntityNotFoundError",
    "OperationTimeoutError",
    "ServiceBusAuthenticationError",
    "ServiceBusAuthorizationError",
    "ServiceBusCommunicationError",
    "ServiceBusConnectionError",
    "ServiceBusError",
    "ServiceBusQuotaExceededError",
    "ServiceBusServerBusyError",
    "TransactionTimeoutError",
    "SessionCannotBeLockedError",
    "SessionLockLostError",
]
