"""The asyncio API: the same names as ``sbredis``, with async methods (as azure.servicebus.aio)."""

from .._enums import (
    NEXT_AVAILABLE_SESSION,
    ServiceBusMessageState,
    ServiceBusReceiveMode,
    ServiceBusSessionFilter,
    ServiceBusSubQueue,
    TransportType,
)
from .._message import ServiceBusMessage, ServiceBusMessageBatch, ServiceBusReceivedMessage
from ..paired import PairedNamespaceMetrics, SendAvailabilityPairedNamespaceOptions
from ._client import ServiceBusClient
from ._receiver import ServiceBusReceiver
from ._renewer import AutoLockRenewer
from ._sender import ServiceBusSender
from ._session import ServiceBusSession
from ._transaction import ServiceBusTransaction

__all__ = [
    "NEXT_AVAILABLE_SESSION",
    "AutoLockRenewer",
    "PairedNamespaceMetrics",
    "SendAvailabilityPairedNamespaceOptions",
    "ServiceBusClient",
    "ServiceBusMessage",
    "ServiceBusMessageBatch",
    "ServiceBusMessageState",
    "ServiceBusReceiveMode",
    "ServiceBusReceivedMessage",
    "ServiceBusReceiver",
    "ServiceBusSender",
    "ServiceBusSession",
    "ServiceBusSessionFilter",
    "ServiceBusSubQueue",
    "ServiceBusTransaction",
    "TransportType",
]
