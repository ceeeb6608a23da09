"""memory://<name>: in-process Redis servers (fakeredis with Lua), shared by every client of the
process that names the same one, sync or async. For users' unit tests: the same Lua scripts run,
nothing listens on a port. Real Redis stays the reference (docs/memory.md lists the gaps)."""

from __future__ import annotations

from typing import Any

from ..exceptions import InvalidArgumentError

_SERVERS: dict[str, Any] = {}


def memory_server(url: str) -> Any:
    """The fakeredis server a ``memory://<name>`` URL names (created on first use)."""
    try:
        import fakeredis
    except ImportError:
        raise InvalidArgumentError("memory:// needs fakeredis with Lua: pip install 'sbredis[memory]'") from None
    name = url.split("://", 1)[1].strip("/") or "default"
    server = _SERVERS.get(name)
    if server is None:
        server = _SERVERS[name] = fakeredis.FakeServer(version=(7,))
    return server
