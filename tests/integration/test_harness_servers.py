"""The test harness's redis-server (tests/redis_server.py) under parallel workers: a port taken
before the server binds it is replaced by a fresh one, never answered by someone else's server."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
import redis

from tests.redis_cluster import ClusterNode
from tests.redis_server import RedisServer


@pytest.fixture()
def taken_port() -> Iterator[int]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield int(s.getsockname()[1])


@pytest.mark.parametrize("kind", [RedisServer, ClusterNode])
def test_a_port_taken_before_the_first_start_is_replaced(kind: type[RedisServer], taken_port: int) -> None:
    srv = kind()
    srv.port = taken_port  # another worker bound it between free_port() and the server's start
    try:
        srv.start()
        assert srv.port != taken_port
        assert redis.Redis(port=srv.port).ping()
        srv.restart()
        assert redis.Redis(port=srv.port).ping()
    finally:
        srv.stop()


def test_a_restart_keeps_its_port_and_says_why_it_failed(taken_port: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("tests.redis_server.START_TIMEOUT", 1.0)
    srv = RedisServer().start()
    try:
        srv.kill()
        srv.port = taken_port  # as if another process took the server's port while it was down
        with pytest.raises(RuntimeError, match=r"(?s)did not start on port .*Address already in use"):
            srv.start()
    finally:
        srv.stop()
