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

That subclass also reads a reply itself (``read_reply``), from its hiredis reader and stream,
where redis-py's ``read_response`` goes through four coroutines, an ``asyncio.timeout`` context and
a push-notification check per reply (about 9 µs CPU of an awaited round trip's 30). Its socket
timeout is kept by one timer per connection (_ReadTimer) instead of one per read.
"""

from __future__ import annotations

import asyncio
import weakref
from functools import cache
from typing import Any

import redis
from redis.connection import HiredisRespSerializer
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

try:  # redis-py's hiredis parser: without it a connection reads as redis-py reads
    from redis._parsers.hiredis import NOT_ENOUGH_DATA, _AsyncHiredisParser
except ImportError:  # pragma: no cover - redis-py 5 to 8 have both
    NOT_ENOUGH_DATA = _AsyncHiredisParser = None  # type: ignore[assignment,misc]

try:
    import hiredis
except ImportError:  # a dependency (redis[hiredis]); without it redis-py's own serializer stays
    hiredis = None  # type: ignore[assignment]

ALONE = 1 << 16  # an argument this large goes as its own chunk (no copy)
PUSH = getattr(hiredis, "PushNotification", None)  # a RESP3 push as hiredis 3.2 and later parse it


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


class _ReadTimer:
    """A connection's read deadline and the one timer that enforces it. Reads on a connection
    come one after another, each moving the deadline forward; the timer is armed once and, when it
    fires before the read in flight is due, moves itself to that read's deadline. A read then
    costs setting three fields, not a timer of its own (about 3 µs CPU a call)."""

    __slots__ = ("due", "fired", "loop", "task", "timer")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.task: asyncio.Task[Any] | None = None  # the task reading, None between reads
        self.due = 0.0
        self.timer: asyncio.TimerHandle | None = None
        self.fired = False

    def check(self) -> None:
        task = self.task
        if task is None:
            self.timer = None
        elif self.loop.time() >= self.due:
            self.timer = None
            self.fired = True
            task.cancel()
        else:
            self.timer = self.loop.call_at(self.due, self.check)


_read_timers: weakref.WeakKeyDictionary[Any, _ReadTimer] = weakref.WeakKeyDictionary()


class _Reading:
    """What the asyncio connection subclass adds to reading: ``read_reply``."""

    async def read_reply(self: Any) -> Any:
        """``read_response()`` from the hiredis reader and stream under the connection's read
        timer, which cancels this task past the socket timeout; that cancellation is raised as
        redis-py's TimeoutError, any other goes on as it came. An error reply is raised as
        redis-py raises it, a closed socket as its ConnectionError (the caller drops the
        connection); a RESP3 push goes to the parser's handler and the reply is the next one. A
        connection without the hiredis parser reads as redis-py does."""
        parser: Any = self._parser
        if type(parser) is not _AsyncHiredisParser or not self.is_connected:
            return await self.read_response()
        reader: Any = parser._reader  # the reader redis-py's read feeds: one stream, one reader
        while True:
            reply = reader.gets()
            if reply is NOT_ENOUGH_DATA:
                reply = await self._read_more(reader)
            if PUSH is None or not isinstance(reply, PUSH):
                break
            # pushes come with CLIENT TRACKING or pub/sub, which sbredis never turns on for a script connection
            await parser.handle_push_response(reply)  # type: ignore[no-untyped-call]  # pragma: no cover
        if isinstance(reply, (ResponseError, RedisConnectionError)):  # hiredis returns both as values
            raise reply
        return reply

    async def _read_more(self: Any, reader: Any) -> Any:
        """Read from the stream until the reader holds a whole reply, within the socket timeout."""
        rt = _read_timers.get(self)
        task = asyncio.current_task(rt.loop) if rt is not None else None
        if rt is None or task is None:  # the connection's first read (in this event loop)
            rt = _read_timers[self] = _ReadTimer(asyncio.get_running_loop())
            task = asyncio.current_task(rt.loop)
            assert task is not None
        rt.task, rt.due, rt.fired = task, rt.loop.time() + self.socket_timeout, False
        if rt.timer is None:
            rt.timer = rt.loop.call_at(rt.due, rt.check)
        stream = self._reader
        reply = NOT_ENOUGH_DATA
        try:
            while reply is NOT_ENOUGH_DATA:
                data = await stream.read(self._socket_read_size)
                if not data:
                    raise RedisConnectionError("Connection closed by server.")
                reader.feed(data)
                reply = reader.gets()
        except asyncio.CancelledError:
            if rt.fired and task.uncancel() == 0:
                raise RedisTimeoutError(f"Timeout reading from {self._host_error()}") from None
            raise
        except OSError as e:
            raise RedisConnectionError(f"Error while reading from {self._host_error()} : {e.args}") from None
        finally:
            rt.task = None
        return reply


@cache
def _fast_class(cls: type) -> type:
    slow = cls.pack_command  # type: ignore[attr-defined]

    def pack_command(self: Any, *args: Any) -> list[bytes]:
        return pack(args) or slow(self, *args)  # type: ignore[no-any-return]

    return type(cls.__name__, (_Reading, cls), {"pack_command": pack_command, "__module__": __name__})


def fast_packing(client: Any) -> None:
    """Make an asyncio redis-py client pack commands with hiredis (the sync client has
    CommandPacker through connection_options); other clients are left as they are. Call it
    before the pool makes its first connection."""
    pool = getattr(client, "connection_pool", None)
    cls = getattr(pool, "connection_class", None)
    if hiredis is not None and pool is not None and cls is not None and cls.__module__.startswith("redis.asyncio"):
        pool.connection_class = _fast_class(cls)
