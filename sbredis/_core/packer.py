"""How the sync client packs a command into RESP bytes (redis-py's ``command_packer`` option).

redis-py's own hiredis serializer walks every argument in Python before hiredis packs them (a
generator over all of them, to turn memoryviews into bytes); for a batched send, with an argument
per message, that walk costs more than hiredis's packing itself. sbredis's commands are str, int
and bytes, so this packer hands them to hiredis directly, and leaves anything else to redis-py's
serializer.

hiredis also copies every argument into one buffer, a cost proportional to the command's size:
an argument of ALONE bytes or more (a large message) is not copied but sent as its own chunk.

redis.asyncio's connection packs in Python and takes no packer; only the sync client gets this.
"""

from __future__ import annotations

from typing import Any

from redis.connection import HiredisRespSerializer

try:
    import hiredis
except ImportError:  # a dependency (redis[hiredis]); without it redis-py's own serializer stays
    hiredis = None  # type: ignore[assignment]

ALONE = 1 << 16  # an argument this large goes as its own chunk (no copy)


class CommandPacker(HiredisRespSerializer):
    """redis-py's hiredis serializer without its per-argument walk, and no copy of large arguments."""

    def pack(self, *args: Any) -> list[bytes]:
        name = args[0]
        if type(name) is str and " " not in name:  # redis-py splits names like "SCRIPT LOAD"
            big = False
            for a in args:
                if type(a) is bytes and len(a) >= ALONE:
                    big = True
                    break
            try:
                return pack_chunks(args) if big else [hiredis.pack_command(args)]
            except TypeError:  # a type hiredis does not take (memoryview, ...): redis-py's way
                pass
        return super().pack(*args)  # type: ignore[no-any-return]


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
    """Options for a redis-py client class: the packer for the sync client when hiredis is there."""
    if hiredis is None or client_class.__module__.startswith("redis.asyncio"):
        return {}
    return {"command_packer": CommandPacker()}
