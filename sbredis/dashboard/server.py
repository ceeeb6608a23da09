"""Run the dashboard with uvicorn: ``serve`` until Ctrl-C (the command line), ``start`` in a
background thread (tests, embedding)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable

import uvicorn

from .app import Settings, create_app


def bind(host: str, port: int) -> socket.socket:
    """A listening socket (port 0: any free port), so the caller knows the port before serving."""
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


def _server(settings: Settings) -> uvicorn.Server:
    config = uvicorn.Config(create_app(settings), log_level="warning", access_log=False, lifespan="on")
    return uvicorn.Server(config)


def serve(settings: Settings, port: int, on_start: Callable[[int], None] | None = None) -> None:
    """Serve until SIGINT/SIGTERM (uvicorn's handlers).

    Raises:
        OSError: the address cannot be bound.
    """
    sock = bind(settings.host, port)
    if on_start is not None:
        on_start(int(sock.getsockname()[1]))
    _server(settings).run(sockets=[sock])


class Running:
    """A dashboard served from a background thread; ``stop()`` ends it."""

    def __init__(self, settings: Settings, port: int = 0, timeout: float = 20.0) -> None:
        self.sock = bind(settings.host, port)
        self.port = int(self.sock.getsockname()[1])
        self.url = f"http://{settings.host}:{self.port}"
        self.server = _server(settings)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the dashboard did not start")
            time.sleep(0.02)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)
        self.sock.close()


def start(settings: Settings, port: int = 0) -> Running:
    """Serve in a background thread; returns once it accepts connections."""
    return Running(settings, port)
