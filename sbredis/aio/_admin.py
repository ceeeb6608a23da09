"""ServiceBusAdministrationClient: create, read, update and delete queues; runtime counts."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import replace
from types import TracebackType
from typing import Any

from .._admin_checks import addressed, check_forward_targets, forward_targets
from .._core import admin_commands, codec
from .._core import registry as registry_commands
from .._core.entity import GENERATION, QueueProperties, build_queue, check_name, from_mapping, new_generation
from .._core.keys import FORWARDERS, IDLE, partition_keys
from .._core.protocol import stats
from .._core.retry import RetryPolicy
from .._core.topic_entity import forwarder_commands, idle_commands, kind_of, touch_commands
from .._models import PartitionRuntimeProperties, QueueRuntimeProperties
from ..exceptions import (
    InvalidOperationError,
    MessagingEntityAlreadyExistsError,
    MessagingEntityNotFoundError,
    ServiceBusConnectionError,
    ServiceBusError,
)
from ._admin_topics import TopicAdministration
from ._registry import Registry
from ._transport import Transport


class ServiceBusAdministrationClient(TopicAdministration):
    """Manage queues, topics, subscriptions and rules, as
    ``azure.servicebus.management.ServiceBusAdministrationClient`` (topics: _admin_topics.py).

    The registry (``sb:entities``) and each partition's config change in one MULTI/EXEC, so a
    create, update or delete is all or nothing on a standalone Redis; on a cluster every partition's
    primary must answer before anything is written (see the transport's docstring).
    """

    def __init__(self, fully_qualified_namespace: str, credential: Any = None, **kwargs: Any) -> None:
        policy = RetryPolicy.from_options(kwargs)
        self._transport = Transport(fully_qualified_namespace, retry_policy=policy, credential=credential, **kwargs)
        self._registry = Registry(self._transport)

    @classmethod
    def from_connection_string(cls, conn_str: str, **kwargs: Any) -> ServiceBusAdministrationClient:
        return cls(conn_str, **kwargs)

    async def _now_ms(self) -> int:
        sec, usec = await self._transport.execute("TIME")
        return int(sec) * 1000 + int(usec) // 1000

    async def _read(self, name: str) -> tuple[QueueProperties, dict[str, Any]]:
        raw = await self._registry.raw(check_name(name), entity=name)
        if raw is None or kind_of(json.loads(raw)) != "queue":
            raise MessagingEntityNotFoundError(f"The messaging entity '{name}' was not found.")
        return QueueProperties.from_json(raw), json.loads(raw)

    @staticmethod
    def _record(p: QueueProperties, created: int, updated: int, gen: str) -> str:
        raw = json.loads(p.to_json())
        raw["_c"], raw["_u"], raw[GENERATION] = created, updated, gen
        return json.dumps(raw, separators=(",", ":"))

    async def create_queue(self, queue_name: str, **kwargs: Any) -> QueueProperties:
        """Create a queue; keyword arguments are QueueProperties fields.

        Raises:
            InvalidArgumentError / InvalidOperationError: bad or unsupported properties.
            MessagingEntityAlreadyExistsError: a queue of that name exists.
            MessagingEntityNotFoundError: forward_to or forward_dead_lettered_messages_to names no entity.
        """
        p = build_queue(queue_name, **kwargs)
        targets = [t for t in forward_targets(p) if t != p.name]  # itself: it exists once created
        check_forward_targets(targets, await self._registry.get_many(targets))
        now = await self._now_ms()
        cmds = admin_commands.delete_commands(p.name, p.partition_count)  # leftovers of a broken delete
        gen = new_generation()
        cmds += admin_commands.config_commands(p, gen) + idle_commands(p.name, p.auto_delete_on_idle, now)
        cmds += forwarder_commands(p.name, p.forward_to, p.forward_dead_lettered_messages_to)
        registry = registry_commands.put(p.name, self._record(p, now, now, gen))
        if not await self._transport.change_entity(p.name, registry, cmds, create=True):
            raise MessagingEntityAlreadyExistsError(f"The messaging entity '{p.name}' already exists.")
        return addressed(p, self._transport.namespace)

    async def get_queue(self, queue_name: str) -> QueueProperties:
        """Raises MessagingEntityNotFoundError when there is no such queue."""
        p, _ = await self._read(queue_name)
        return addressed(p, self._transport.namespace)

    async def update_queue(self, queue: QueueProperties, **kwargs: Any) -> None:
        """Apply `queue`'s properties (and keyword overrides) to the existing queue.

        Raises:
            InvalidOperationError: enable_partitioning, partition_count or requires_session would change.
            MessagingEntityNotFoundError: no such queue, or forward_to or forward_dead_lettered_messages_to
                names no entity.
        """
        queue = from_mapping(QueueProperties, queue, "update_queue")
        current, raw = await self._read(queue.name)
        wanted = replace(queue, **{k: v for k, v in kwargs.items() if k in ("enable_partitioning", "partition_count")})
        if wanted.enable_partitioning != current.enable_partitioning or (
            wanted.partition_count and wanted.partition_count != current.partition_count
        ):
            raise InvalidOperationError("enable_partitioning and partition_count cannot change after creation")
        if kwargs.get("requires_session", queue.requires_session) != current.requires_session:
            raise InvalidOperationError("requires_session cannot change after creation")
        kwargs.pop("enable_partitioning", None)
        kwargs.pop("partition_count", None)
        base = replace(queue, partition_count=current.partition_count)
        p = build_queue(queue.name, base=base, **kwargs)
        targets = forward_targets(p)
        check_forward_targets(targets, await self._registry.get_many(targets))
        now = await self._now_ms()
        gen = str(raw.get(GENERATION) or "")
        registry = registry_commands.put(p.name, self._record(p, raw.get("_c", now), now, gen))
        cmds = admin_commands.config_commands(p, gen) + idle_commands(p.name, p.auto_delete_on_idle, now)
        cmds += forwarder_commands(p.name, p.forward_to, p.forward_dead_lettered_messages_to)
        cmds += touch_commands([partition_keys(p.name, i) for i in range(p.partition_count)], now)
        await self._transport.change_entity(p.name, registry, cmds)

    async def delete_queue(self, queue: str | QueueProperties) -> None:
        """Delete the queue and all its messages.

        Raises:
            MessagingEntityNotFoundError: no such queue.
        """
        name = queue.name if isinstance(queue, QueueProperties) else queue
        p, _ = await self._read(name)
        await self._transport.change_entity(
            p.name,
            registry_commands.remove(p.name),
            [
                *admin_commands.delete_commands(p.name, p.partition_count),
                ("ZREM", IDLE, p.name),
                ("HDEL", FORWARDERS, p.name),
            ],
        )

    async def list_queues(self) -> AsyncIterator[QueueProperties]:
        """Every queue, by name."""
        records = await self._registry.all()
        for name in sorted(records):
            if kind_of(records[name]) == "queue":
                yield addressed(QueueProperties.from_json(json.dumps(records[name])), self._transport.namespace)

    async def get_queue_runtime_properties(self, queue_name: str) -> QueueRuntimeProperties:
        """Counts summed over partitions (one pipelined read-only script call per partition), and
        where each partition lives. Partitions whose node cannot be reached are listed in
        ``missing_partitions`` instead of failing the call.

        Raises:
            MessagingEntityNotFoundError: no such queue.
        """
        await self._maintain()
        p, raw = await self._read(queue_name)
        calls = [stats.call(p.name, i) for i in range(p.partition_count)]
        replies = await self._transport.run_many(calls, p.name, retry="all")
        nodes = await self._transport.node_names([c.keys[0] for c in calls])
        parts = []
        missing: list[int] = []
        accessed = 0
        for i, r in enumerate(replies):
            if isinstance(r, ServiceBusConnectionError) and len(missing) < len(replies) - 1:
                missing.append(i)
                continue
            if isinstance(r, ServiceBusError):
                raise r
            ready, locked, deferred, sched, d_ready, d_locked, d_deferred, size, acc = stats.parse(r)[:9]
            accessed = max(accessed, acc)
            parts.append(
                PartitionRuntimeProperties(
                    partition_id=i,
                    active_message_count=ready + locked + deferred,
                    locked_message_count=locked,
                    deferred_message_count=deferred,
                    scheduled_message_count=sched,
                    dead_letter_message_count=d_ready + d_locked + d_deferred,
                    size_in_bytes=size,
                    node=nodes[i],
                )
            )
        active = sum(x.active_message_count for x in parts)
        dead = sum(x.dead_letter_message_count for x in parts)
        sched_total = sum(x.scheduled_message_count for x in parts)
        transfer, transfer_dead = await self._transfer_counts(p.name, p.partition_count)
        return QueueRuntimeProperties(
            name=p.name,
            created_at_utc=codec.from_ms(raw["_c"]) if "_c" in raw else None,
            updated_at_utc=codec.from_ms(raw["_u"]) if "_u" in raw else None,
            # not used since its creation: the creation time, as Service Bus reports it
            accessed_at_utc=codec.from_ms(accessed or raw["_c"]) if accessed or "_c" in raw else None,
            size_in_bytes=sum(x.size_in_bytes for x in parts),
            total_message_count=active + dead + sched_total,
            active_message_count=active,
            dead_letter_message_count=dead,
            scheduled_message_count=sched_total,
            transfer_message_count=transfer,
            transfer_dead_letter_message_count=transfer_dead,
            partitions=tuple(parts),
            missing_partitions=tuple(missing),
        )

    async def list_queues_runtime_properties(self) -> AsyncIterator[QueueRuntimeProperties]:
        async for q in self.list_queues():
            yield await self.get_queue_runtime_properties(q.name)

    async def close(self) -> None:
        await self._transport.close()

    async def __aenter__(self) -> ServiceBusAdministrationClient:
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()
