"""memory://<name>: in-process Redis servers (fakeredis with Lua), shared by every client of the
process that names the same one, sync or async. For users' unit tests: the same Lua scripts run,
nothing listens on a port. Real Redis stays the reference (docs/memory.md lists the gaps)."""

from __future__ import annotations

import importlib.util
from typing import Any

from ..exceptions import InvalidArgumentError

_SERVERS: dict[str, Any] = {}
HINT = "needs fakeredis with Lua: pip install 'sbredis[memory]'"


def available() -> bool:
    """Whether fakeredis and lupa can be imported (found, not imported: the CLI asks at start).
    fakeredis without lupa answers every script call "unknown command 'evalsha'", and every
    operation of sbredis but the admin client's runs a script."""
    for name in ("fakeredis", "lupa"):
        try:
            if importlib.util.find_spec(name) is None:
                return False
        except (ImportError, ValueError):  # a broken install, or None in sys.modules
            return False
    return True


def memory_server(url: str) -> Any:
    """The fakeredis server a ``memory://<name>`` URL names (created on first use).

    Raises:
        InvalidArgumentError: fakeredis or its Lua (lupa) is not installed.
    """
    if not available():
        raise InvalidArgumentError(f"{url} {HINT}")
    import fakeredis

    name = url.split("://", 1)[1].strip("/") or "default"
    server = _SERVERS.get(name)
    if server is None:
        server = _SERVERS[name] = fakeredis.FakeServer(version=(7,))
    return server
