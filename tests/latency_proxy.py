"""A TCP proxy on 127.0.0.1 that delays every byte by a set time each way (and can lose a reply).

Used by the tests and bench/bench_latency.py to reproduce a long round trip to Redis, and to cut a
connection after Redis executed a command but before its reply reached the client (a lost reply).
Chunks keep their order and their pipelining: each is delivered `delay` seconds after it arrived.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from typing import Any


class LatencyProxy:
    def __init__(self, target_port: int, one_way_delay: float, target_host: str = "127.0.0.1") -> None:
        self.target = (target_host, target_port)
        self.delay = one_way_delay
        self.port = 0
        self.lose_replies = 0  # replies (server->client chunks) to lose by cutting the connection
        self.lost = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="latency-proxy", daemon=True)
        self._server: asyncio.AbstractServer | None = None
        self._conns: set[asyncio.StreamWriter] = set()

    def start(self) -> LatencyProxy:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        return self

    def url(self, db: int = 0) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"

    async def _start(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _accept(self, c_reader: asyncio.StreamReader, c_writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(asyncio.CancelledError):  # stop() cancels; asyncio's callback must not see it
            await self._relay(c_reader, c_writer)

    async def _relay(self, c_reader: asyncio.StreamReader, c_writer: asyncio.StreamWriter) -> None:
        try:
            s_reader, s_writer = await asyncio.open_connection(*self.target)
        except OSError:
            c_writer.close()
            return
        self._conns.update((c_writer, s_writer))
        both = (c_writer, s_writer)
        await asyncio.gather(
            self._pump(c_reader, s_writer, both, reply=False),
            self._pump(s_reader, c_writer, both, reply=True),
            return_exceptions=True,
        )
        for w in both:
            self._conns.discard(w)
            w.close()

    async def _pump(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, both: tuple[Any, ...], reply: bool
    ) -> None:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

        async def deliver() -> None:
            while True:
                due, data = await queue.get()
                wait = due - loop.time()
                if wait > 0:
                    await asyncio.sleep(wait)
                if not data:
                    break
                if reply and self.lose_replies > 0:  # the command ran; its reply never arrives
                    self.lose_replies -= 1
                    self.lost += 1
                    for w in both:
                        w.close()
                    break
                writer.write(data)
                await writer.drain()
            with contextlib.suppress(Exception):
                writer.write_eof()

        task = loop.create_task(deliver())
        try:
            while data := await reader.read(65536):
                queue.put_nowait((loop.time() + self.delay, data))
        except (ConnectionError, OSError):
            pass
        queue.put_nowait((loop.time() + self.delay, b""))
        with contextlib.suppress(Exception):
            await task

    def stop(self) -> None:
        async def _stop() -> None:
            if self._server is not None:
                self._server.close()
            for w in list(self._conns):
                w.close()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(_stop(), self._loop).result(5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        self._loop.close()

    def __enter__(self) -> LatencyProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
