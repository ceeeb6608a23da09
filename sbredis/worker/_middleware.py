"""Worker middleware: hooks around receive, process and settle (for metrics, tracing, rate limits).

As Dramatiq's middleware: subclass :class:`Middleware` and override the hooks you need; the others
do nothing. A hook may be a plain method or a coroutine method (awaited; a rate limiter can sleep
in ``before_receive``). Hooks run on the worker's event loop in the order the middleware was given
(``after_*`` hooks in reverse order), so they must not block. An exception raised by a hook is
logged and ignored, except in ``before_process``: there it counts as the handler's exception
(the message is abandoned, or dead-lettered for the listed types), and the handler does not run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sbredis import ServiceBusReceivedMessage

    from ._processor import Worker


class Middleware:
    """No-op hooks; override any. ``action`` is "complete", "abandon" or "dead_letter"."""

    def before_receive(self, worker: Worker, max_message_count: int) -> Any:
        """Before a receive call for up to `max_message_count` messages."""

    def after_receive(self, worker: Worker, messages: list[ServiceBusReceivedMessage]) -> Any:
        """After a receive call (`messages` may be empty)."""

    def before_process(self, worker: Worker, message: ServiceBusReceivedMessage) -> Any:
        """Before the handler runs on `message`."""

    def after_process(self, worker: Worker, message: ServiceBusReceivedMessage, exception: BaseException | None) -> Any:
        """After the handler returned (`exception` is None) or raised."""

    def before_settle(self, worker: Worker, message: ServiceBusReceivedMessage, action: str) -> Any:
        """Before the worker completes, abandons or dead-letters `message`."""

    def after_settle(
        self, worker: Worker, message: ServiceBusReceivedMessage, action: str, exception: BaseException | None
    ) -> Any:
        """After settling (`exception` is the settlement's error, e.g. MessageLockLostError)."""
