"""Reads of the entity registry (sbredis/_core/registry.py has its layout and commands)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .._core import registry
from ._transport import Transport


class Registry:
    """The records of entities, read through a Transport (a missing entity reads as None)."""

    def __init__(self, transport: Transport) -> None:
        self.transport = transport

    async def raw(self, path: str, entity: str = "") -> Any:
        """`path`'s record as stored (JSON text), None when missing; `entity` names the entity an
        error is reported for (default: `path`)."""
        return await self.transport.execute(*registry.get(path), entity=entity or path)

    async def get(self, path: str, entity: str = "") -> dict[str, Any] | None:
        """`path`'s record, None when missing."""
        return registry.decode(await self.raw(path, entity))

    async def get_many(self, paths: Iterable[str]) -> list[dict[str, Any] | None]:
        """The records of `paths`, in order (None for a missing one)."""
        paths = list(paths)
        if not paths:
            return []
        return [registry.decode(raw) for raw in await self.transport.execute(*registry.get_many(paths))]

    async def all(self) -> dict[str, dict[str, Any]]:
        """Every record, by path."""
        return registry.decode_all(await self.transport.execute(*registry.get_all()))
