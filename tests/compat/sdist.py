"""Microsoft's azure-servicebus source distribution, fetched from the package index at test time
(tests/peers.py): nothing of it is committed here."""

from __future__ import annotations

from pathlib import Path

from tests.peers import fetch_sdist

AZURE_SERVICEBUS_VERSION = "7.15.0"


def azure_servicebus_source(version: str = AZURE_SERVICEBUS_VERSION) -> Path:
    """The unpacked sdist's top folder (samples/, tests/)."""
    return fetch_sdist("azure-servicebus", version)
