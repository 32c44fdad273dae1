"""A loopback TCP proxy in front of one control plane: what a runner dials, so its link can fail.

``cut()`` drops every connection at once (both sockets closed, as a broken
network does); ``stall(seconds)`` keeps them open but lets no byte through
for a while (a link that hangs); ``stall(seconds, down_only=True)`` holds
only what the control plane sends (the runner's bytes still arrive). The proxy runs its own event loop in a
thread of the harness.

A side that ends its link, by a close or by a reset (a killed process with
bytes unread resets it), still has what it sent before passed on, as the
kernel passes it on a direct link: a runner's last messages before a SIGKILL
reach the control plane.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from typing import Any


class _Reader(asyncio.StreamReader):
    """A link's reader whose end, even a reset, comes after the bytes that arrived before it.

    asyncio's reader raises a reset at the next read, dropping what it holds
    unread; a process killed with bytes unread resets its links, so the bytes
    it sent just before would be lost here, where a direct link delivers them.
    """

    def set_exception(self, exc: BaseException) -> None:
        self.feed_eof()


def _accepting(loop: asyncio.AbstractEventLoop, accept: Any) -> asyncio.StreamReaderProtocol:
    """What ``asyncio.start_server`` makes for each link, with a ``_Reader``."""
    return asyncio.StreamReaderProtocol(_Reader(limit=2**16, loop=loop), accept, loop=loop)


async def _dial(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """``asyncio.open_connection`` to the loopback ``port``, with a ``_Reader``."""
    loop = asyncio.get_running_loop()
    reader = _Reader(limit=2**16, loop=loop)
    protocol = asyncio.StreamReaderProtocol(reader, loop=loop)
    transport, _ = await loop.create_connection(lambda: protocol, "127.0.0.1", port)
    return reader, asyncio.StreamWriter(transport, protocol, reader, loop)


class LinkProxy:
    def __init__(self, upstream_port: int, listen_port: int) -> None:
        self.upstream_port, self.port = upstream_port, listen_port
        self._loop = asyncio.new_event_loop()
        self._flowing = asyncio.Event()
        self._down_flowing = asyncio.Event()
        self._writers: set[asyncio.StreamWriter] = set()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True, name="chaos-proxy")
        self.connections = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> LinkProxy:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the link proxy did not start")
        return self

    def cut(self) -> None:
        self._loop.call_soon_threadsafe(self._close_all)

    def stall(self, seconds: float, *, down_only: bool = False) -> None:
        gate = self._down_flowing if down_only else self._flowing

        def pause() -> None:
            gate.clear()
            self._loop.call_later(seconds, gate.set)

        self._loop.call_soon_threadsafe(pause)

    def close(self) -> None:
        if self._loop.is_running():
            self._loop.call_soon_threadsafe(self._close_all)
            self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    # The loop's side

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._flowing.set()
        self._down_flowing.set()
        server = self._loop.run_until_complete(
            self._loop.create_server(
                lambda: _accepting(self._loop, self._accept), "127.0.0.1", self.port
            )
        )
        self._ready.set()
        try:
            self._loop.run_forever()
        finally:
            server.close()
            with contextlib.suppress(Exception):
                self._loop.run_until_complete(server.wait_closed())
            self._loop.close()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await _dial(self.upstream_port)
        except OSError:
            writer.close()  # the control plane is down: the runner sees a refused link
            return
        self.connections += 1
        self._writers |= {writer, up_writer}
        await asyncio.gather(
            self._pipe(reader, up_writer),
            self._pipe(up_reader, writer, down=True),
            return_exceptions=True,
        )
        self._writers -= {writer, up_writer}

    async def _pipe(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, down: bool = False
    ) -> None:
        try:
            while data := await reader.read(65536):
                await self._flowing.wait()
                if down:
                    await self._down_flowing.wait()
                writer.write(data)
                await writer.drain()
        finally:
            writer.close()

    def _close_all(self) -> None:
        for writer in list(self._writers):
            transport = writer.transport
            transport.abort()  # a reset, not an orderly close
        self._writers.clear()
