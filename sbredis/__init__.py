"""sbredis: Azure Service Bus semantics on Redis (sync API; ``sbredis.aio`` has the async one)."""

from . import exceptions
from ._enums import ServiceBusMessageState, ServiceBusReceiveMode, ServiceBusSubQueue
from ._message import ServiceBusMessage, ServiceBusMessageBatch, ServiceBusReceivedMessage
from ._sync._client import ServiceBusClient
from ._sync._receiver import ServiceBusReceiver
from ._sync._renewer import AutoLockRenewer
from ._sync._sender import ServiceBusSender

__version__ = "0.1.0"

__all__ = [
    "AutoLockRenewer",
    "ServiceBusClient",
    "ServiceBusMessage",
    "ServiceBusMessageBatch",
    "ServiceBusMessageState",
    "ServiceBusReceiveMode",
    "ServiceBusReceivedMessage",
    "ServiceBusReceiver",
    "ServiceBusSender",
    "ServiceBusSubQueue",
    "exceptions",
]
