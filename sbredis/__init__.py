"""sbredis: Azure Service Bus semantics on Redis (sync API; ``sbredis.aio`` has the async one)."""

from typing import TYPE_CHECKING, Any

from . import exceptions
from ._enums import (
    NEXT_AVAILABLE_SESSION,
    ServiceBusMessageState,
    ServiceBusReceiveMode,
    ServiceBusSessionFilter,
    ServiceBusSubQueue,
    TransportType,
)
from ._message import ServiceBusMessage, ServiceBusMessageBatch, ServiceBusReceivedMessage
from ._sync._client import ServiceBusClient
from ._sync._receiver import ServiceBusReceiver
from ._sync._renewer import AutoLockRenewer
from ._sync._sender import ServiceBusSender
from ._sync._session import ServiceBusSession
from ._sync._transaction import ServiceBusTransaction

if TYPE_CHECKING:
    from .paired import PairedNamespaceMetrics, SendAvailabilityPairedNamespaceOptions

__version__ = "0.1.0"
_PAIRED = ("PairedNamespaceMetrics", "SendAvailabilityPairedNamespaceOptions")  # lazy: only a paired client uses them


def __getattr__(name: str) -> Any:
    if name == "App":  # lazy: sbredis.worker imports sbredis
        from .worker import App

        return App
    if name in _PAIRED:
        from . import paired

        return getattr(paired, name)
    raise AttributeError(f"module 'sbredis' has no attribute {name!r}")


__all__ = [
    "NEXT_AVAILABLE_SESSION",
    "App",
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
    "exceptions",
]
