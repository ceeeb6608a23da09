"""ServiceBusSender: settled sends, batches and scheduled messages."""

from __future__ import annotations

import random
from collections.abc import Iterable
from datetime import datetime
from types import TracebackType
from typing import TYPE_CHECKING, Any

from .._core import codec, ops
from .._message import ServiceBusMessage, ServiceBusMessageBatch
from ..exceptions import (
    InvalidArgumentError,
    MessageSizeExceededError,
    MessagingEntityNotFoundError,
    ServiceBusError,
)

if TYPE_CHECKING:
    from ._client import ServiceBusClient


class ServiceBusSender:
    """Sends to one queue. Every send returns only after Redis stored the messages."""

    def __init__(self, client: ServiceBusClient, entity: str) -> None:
        self._client = client
        self.entity_name = entity
        self._rr = random.randrange(1 << 30)

    async def _send(self, messages: list[ServiceBusMessage], sched_ms: int = 0) -> list[int]:
        if not messages:
            return []
        meta = await self._client._entity(self.entity_name)
        self._rr += 1
        calls, where = ops.plan_send(messages, meta, self._rr % meta.partition_count, sched_ms)
        replies = await self._client._transport.run_many(calls, self.entity_name)
        seqs: dict[int, Any] = {}
        for c, reply in zip(calls, replies, strict=True):
            if isinstance(reply, ServiceBusError):
                if isinstance(reply, MessagingEntityNotFoundError):
                    self._client._forget(self.entity_name)
                raise reply
            seqs[c.partition] = iter(ops.send_result(c, reply))
        return [next(seqs[p]) for p in where]

    async def send_messages(self, message: Any, *, timeout: float | None = None) -> None:
        """Send one message, a list or a batch; returns once Redis stored them.

        Messages for one partition are stored atomically (all or none).

        Raises:
            InvalidArgumentError: not a message, list or batch.
            MessageSizeExceededError: a message or batch is over the entity's limit.
            MessagingEntityNotFoundError, MessagingEntityDisabledError, ServiceBusQuotaExceededError,
            ServiceBusConnectionError (retryable), OperationTimeoutError (retryable).
        """
        await self._send(ops.as_messages(message))

    async def schedule_messages(
        self, messages: Any, schedule_time_utc: datetime, *, timeout: float | None = None
    ) -> list[int]:
        """Store messages to be enqueued at `schedule_time_utc`; returns their sequence numbers.

        Raises:
            InvalidArgumentError: bad messages or a schedule time that is not a datetime.
            As send_messages otherwise.
        """
        if not isinstance(schedule_time_utc, datetime):
            raise InvalidArgumentError("schedule_time_utc must be a datetime")
        return await self._send(ops.as_messages(messages), max(1, codec.to_ms(schedule_time_utc)))

    async def cancel_scheduled_messages(
        self, sequence_numbers: int | Iterable[int], *, timeout: float | None = None
    ) -> None:
        """Cancel scheduled messages not yet enqueued. All numbers of one partition or none.

        Raises:
            InvalidArgumentError: not sequence numbers of this entity.
            MessageNotFoundError: a number is not a pending scheduled message.
        """
        seqs = [sequence_numbers] if isinstance(sequence_numbers, int) else list(sequence_numbers)
        meta = await self._client._entity(self.entity_name)
        groups: dict[int, list[int]] = {}
        for s in seqs:
            p, local = ops.split_sequence_number(s, meta.partition_count)
            groups.setdefault(p, []).append(local)
        calls = [ops.call("cancel_scheduled", self.entity_name, p, len(v), *v) for p, v in groups.items()]
        for reply in await self._client._transport.run_many(calls, self.entity_name):
            if isinstance(reply, ServiceBusError):
                raise reply

    async def create_message_batch(self, max_size_in_bytes: int | None = None) -> ServiceBusMessageBatch:
        """An empty batch bounded by the entity's maximum message size.

        Raises:
            MessageSizeExceededError: `max_size_in_bytes` is over the entity's limit.
        """
        meta = await self._client._entity(self.entity_name)
        limit = meta.max_message_bytes
        if max_size_in_bytes is not None:
            ops.check_count("max_size_in_bytes", max_size_in_bytes, 1 << 62)
            if max_size_in_bytes > limit:
                raise MessageSizeExceededError(
                    f"max_size_in_bytes {max_size_in_bytes} is over the entity's limit of {limit} bytes"
                )
            limit = max_size_in_bytes
        return ServiceBusMessageBatch(limit)

    async def close(self) -> None:
        """Nothing to release: senders share the client's connections."""

    async def __aenter__(self) -> ServiceBusSender:
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"ServiceBusSender(queue={self.entity_name!r})"


__all__ = ["ServiceBusMessage", "ServiceBusSender"]
