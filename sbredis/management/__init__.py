"""Administration client and entity models (as azure.servicebus.management)."""

from .._core.entity import EntityStatus, QueueProperties
from .._models import PartitionRuntimeProperties, QueueRuntimeProperties
from .._sync._admin import ServiceBusAdministrationClient

__all__ = [
    "EntityStatus",
    "PartitionRuntimeProperties",
    "QueueProperties",
    "QueueRuntimeProperties",
    "ServiceBusAdministrationClient",
]
