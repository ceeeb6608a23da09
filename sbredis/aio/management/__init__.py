"""Async administration client (as azure.servicebus.aio.management)."""

from ..._core.entity import EntityStatus, QueueProperties
from ..._models import PartitionRuntimeProperties, QueueRuntimeProperties
from .._admin import ServiceBusAdministrationClient

__all__ = [
    "EntityStatus",
    "PartitionRuntimeProperties",
    "QueueProperties",
    "QueueRuntimeProperties",
    "ServiceBusAdministrationClient",
]
