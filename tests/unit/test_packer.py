"""The command packers (sbredis/_core/packer.py) write what redis-py would write: the sync client's
CommandPacker and the asyncio connections' pack_command (fast_packing)."""

from __future__ import annotations

from typing import Any

import pytest
from redis.connection import Encoder, PythonRespSerializer
from redis.exceptions import DataError

from sbredis._core.packer import ALONE, CommandPacker, connection_options, fast_packing

BIG = b"B" * ALONE
HUGE = b"H" * (ALONE * 3 + 7)


def reference(*args: Any) -> bytes:
    """redis-py's pure-Python serializer, the format both must produce."""
    return b"".join(PythonRespSerializer(6000, Encoder("utf-8", "strict", False).encode).pack(*args))


CASES = [
    ("EVALSHA", "a" * 40, 2, "{q}:k1", "{q}:k2", 100, 1, b"blob", "é"),
    ("EVALSHA", "s", 1, "k", -7, 3.5, 0, b""),
    ("SCRIPT LOAD", "return 1"),  # redis-py splits such names
    (b"GET", "k"),
    ("SET", "k", memoryview(b"abc")),
    ("SET", "k", bytearray(b"abc")),
    ("EVALSHA", "s", 1, "k", BIG),  # a large argument last
    ("EVALSHA", "s", 1, "k", BIG, b"small", HUGE, 5),  # large ones with small ones around them
    ("EVALSHA", "s", 0, BIG, HUGE),  # two large ones together
    (BIG,),  # nothing but a large one (not a command Redis knows, but packed all the same)
]


@pytest.mark.parametrize("args", CASES, ids=range(len(CASES)))
def test_packs_what_redis_py_packs(args: tuple[Any, ...]) -> None:
    assert b"".join(CommandPacker().pack(*args)) == reference(*args)


def test_large_arguments_are_sent_as_they_are() -> None:
    chunks = CommandPacker().pack("EVALSHA", "s", 1, "k", BIG, b"small", HUGE)
    assert any(c is BIG for c in chunks) and any(c is HUGE for c in chunks)
    assert all(len(c) < ALONE for c in chunks if c is not BIG and c is not HUGE)


def test_ordinary_commands_are_one_chunk() -> None:
    assert len(CommandPacker().pack("EVALSHA", "s", 1, "k", *[b"x" * 1000] * 100)) == 1


def test_types_redis_cannot_take_raise_redis_pys_error() -> None:
    with pytest.raises(DataError):
        CommandPacker().pack("SET", "k", object())
    with pytest.raises(DataError):
        CommandPacker().pack("SET", "k", object(), BIG)


def test_only_the_sync_client_gets_the_packer() -> None:
    import redis
    import redis.asyncio

    assert isinstance(connection_options(redis.Redis)["command_packer"], CommandPacker)
    assert "command_packer" not in connection_options(redis.asyncio.Redis)


def test_connections_report_redis_py_without_looking_its_version_up_each(monkeypatch: pytest.MonkeyPatch) -> None:
    # redis-py 8 looks its version up with importlib.metadata per connection unless told it
    import redis
    import redis.asyncio

    pytest.importorskip("redis.driver_info")
    looked_up: list[str] = []
    monkeypatch.setattr("importlib.metadata.version", lambda name: looked_up.append(name) or "0")
    for cls in (redis.Redis, redis.asyncio.Redis):
        pool = cls.from_url("redis://127.0.0.1:1", **connection_options(cls)).connection_pool
        for conn in (pool.make_connection(), pool.make_connection()):
            assert (conn.driver_info.formatted_name, conn.driver_info.lib_version) == ("redis-py", redis.__version__)
    assert looked_up == []


@pytest.mark.parametrize("args", CASES, ids=range(len(CASES)))
def test_asyncio_connections_pack_what_redis_py_packs(args: tuple[Any, ...]) -> None:
    import redis.asyncio

    for url in ("redis://127.0.0.1:1", "unix:///tmp/none.sock"):
        client = redis.asyncio.Redis.from_url(url)
        plain = client.connection_pool.make_connection()
        fast_packing(client)
        conn = client.connection_pool.make_connection()
        assert type(conn) is not type(plain) and isinstance(conn, type(plain))
        assert b"".join(conn.pack_command(*args)) == b"".join(plain.pack_command(*args))
        assert b"".join(conn.pack_commands([args, ("GET", "k")])) == b"".join(plain.pack_commands([args, ("GET", "k")]))


def test_fast_packing_leaves_a_sync_client_alone() -> None:
    import redis

    client = redis.Redis.from_url("redis://127.0.0.1:1")
    before = client.connection_pool.connection_class
    fast_packing(client)
    assert client.connection_pool.connection_class is before
