"""How the sync client packs a command into RESP bytes (redis-py's ``command_packer`` option).

redis-py's own hiredis serializer walks every argument in Python before hiredis packs them (a
generator over all of them, to turn memoryviews into bytes); for a batched send, with an argument
per message, that walk costs more than hiredis's packing itself. sbredis's commands are str, int
and bytes, so this packer hands them to hiredis directly, and leaves anything else to redis-py's
serializer.

hiredis also copies every argument into one buffer, a cost proportional to the command's size:
an argument of ALONE bytes or more (a large message) is not copied but sent as its own chunk.

redis.asyncio's connection packs every command in Python, argument by argument, and takes no
packer option: ``fast_packing`` gives an asyncio client's pool a subclass of its connection class
whose pack_command goes the same way (for a settlement's 24 keys and arguments, about 5 µs against
about 20 to 45 µs; docs/benchmarks.md "Loops against raw round trips").
"""

from __future__ import annotations

from functools import cache
from typing import Any

import redis
from redis.connection import HiredisRespSerializer

try:
    import hiredis
except ImportError:  # a dependency (redis[hiredis]); without it redis-py's own serializer stays
    hiredis = None  # type: ignore[assignment]

ALONE = 1 << 16  # an argument this large goes as its own chunk (no copy)


class CommandPacker(HiredisRespSerializer):
    """redis-py's hiredis serializer without its per-argument walk, and no copy of large arguments."""

    def pack(self, *args: Any) -> list[bytes]:
        return pack(args) or super().pack(*args)  # type: ignore[no-any-return]


def pack_chunks(args: tuple[Any, ...]) -> list[bytes]:
    """The RESP of a command with arguments of ALONE bytes or more: each large one a chunk of its
    own (sent as it is, never copied), the rest packed by hiredis into the chunks between them."""
    chunks: list[bytes] = []
    head = b"*%d\r\n" % len(args)
    start = 0
    for i, a in enumerate(args):
        if type(a) is bytes and len(a) >= ALONE:
            chunks += (head + _bulk(args[start:i]) + b"$%d\r\n" % len(a), a)
            head, start = b"\r\n", i + 1
    chunks.append(head + _bulk(args[start:]))
    return chunks


def _bulk(args: tuple[Any, ...]) -> bytes:
    """hiredis's packing of `args` without its "*<count>" line: their bulk strings alone."""
    if not args:
        return b""
    packed: bytes = hiredis.pack_command(args)
    return packed[packed.index(b"\r\n") + 2 :]


def connection_options(client_class: type) -> dict[str, Any]:
    """Options for a redis-py client class: the packer for the sync client when hiredis is there,
    and the client's driver info (:func:`driver_options`)."""
    if hiredis is None or client_class.__module__.startswith("redis.asyncio"):
        return driver_options()
    return {"command_packer": CommandPacker(), **driver_options()}


@cache
def driver_options() -> dict[str, Any]:
    """redis-py's driver info (the name and version CLIENT SETINFO reports), made once. Without it
    redis-py 8 makes one per connection and looks its own version up with importlib.metadata,
    which reads every entry of sys.path: in a Spark Python process, whose path holds PySpark's zip
    files, that cost 50 to 170 ms per connection. Older redis-py looks its version up once, at
    import, and takes no such option."""
    try:
        from redis.driver_info import DriverInfo
    except ImportError:  # pragma: no cover - redis-py before 7
        return {}
    return {"driver_info": DriverInfo(lib_version=redis.__version__)}


def pack(args: tuple[Any, ...]) -> list[bytes] | None:
    """The RESP chunks of a command by hiredis, or None when redis-py must pack it (no hiredis, a
    name with a space such as "SCRIPT LOAD", or an argument type hiredis does not take)."""
    name = args[0]
    if hiredis is None or type(name) is not str or " " in name:
        return None
    try:
        for a in args:
            if type(a) is bytes and len(a) >= ALONE:
                return pack_chunks(args)
        return [hiredis.pack_command(args)]
    except TypeError:
        return None


@cache
def _fast_class(cls: type) -> type:
    slow = cls.pack_command  # type: ignore[attr-defined]

    def pack_command(self: Any, *args: Any) -> list[bytes]:
        return pack(args) or slow(self, *args)  # type: ignore[no-any-return]

    return type(cls.__name__, (cls,), {"pack_command": pack_command, "__module__": __name__})


def fast_packing(client: Any) -> None:
    """Make an asyncio redis-py client pack commands with hiredis (the sync client has
    CommandPacker through connection_options); other clients are left as they are. Call it
    before the pool makes its first connection."""
    pool = getattr(client, "connection_pool", None)
    cls = getattr(pool, "connection_class", None)
    if hiredis is not None and pool is not None and cls is not None and cls.__module__.startswith("redis.asyncio"):
        pool.connection_class = _fast_class(cls)
