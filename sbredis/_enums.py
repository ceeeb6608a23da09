"""Modes and states, with the Azure SDK's names and values."""

from __future__ import annotations

from enum import Enum, IntEnum


class ServiceBusReceiveMode(str, Enum):
    PEEK_LOCK = "peeklock"
    RECEIVE_AND_DELETE = "receiveanddelete"


class ServiceBusSubQueue(str, Enum):
    DEAD_LETTER = "deadletter"
    TRANSFER_DEAD_LETTER = "transferdeadletter"


class ServiceBusMessageState(IntEnum):
    ACTIVE = 0
    DEFERRED = 1
    SCHEDULED = 2


class TransportType(Enum):
    """The SDK's AMQP transport choice; accepted as ``transport_type=`` and without effect (Redis has
    one protocol)."""

    Amqp = 1
    AmqpOverWebsocket = 2


class ServiceBusSessionFilter(Enum):
    NEXT_AVAILABLE = 0


# get_queue_receiver(queue, session_id=NEXT_AVAILABLE_SESSION): any session no one holds.
NEXT_AVAILABLE_SESSION = ServiceBusSessionFilter.NEXT_AVAILABLE
