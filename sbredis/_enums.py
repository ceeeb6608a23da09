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
