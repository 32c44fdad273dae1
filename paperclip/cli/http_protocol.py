"""uvicorn's HTTP/1.1 protocol with deadlines for a request's head and body, a response's
writes sent together, and memory given back after a burst of connections.

uvicorn closes a keep-alive connection that stays idle between requests
(``timeout_keep_alive``), and nothing else: a client that connects and sends
nothing, or sends its headers a byte at a time, or a body that never ends,
holds its connection (and, for a body, the request's task) for as long as it
likes. Here each request has a deadline for its line and headers, from the
connection (or from its first byte on a kept-alive one), and one for its body,
from the end of its headers. A request past either is answered ``408
request_timeout`` (when nothing is being answered on the connection) and its
connection closed. The close lingers (as nginx's does): the server stops
writing, drops what the client still sends for up to :data:`LINGER` seconds or
until it closes, and then closes. A client still sending reads the 408 that way;
a plain close with its bytes unread would reset the connection, and the reset
takes the 408 with it. A response may take as long as it takes: an event stream
is bounded by its own ``wait``.

Each open connection costs the server some 20 KB (40 KB for an event stream),
freed when it closes; the allocator keeps the pages for the next burst. When
the open connections fall back under :data:`BURST_LOW` after a burst of at
least :data:`BURST_HIGH`, the free pages go back to the system
(:func:`give_back_memory`).
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import gc
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from paperclip.http.errors import error_json

BURST_HIGH = 256
"""Open connections that make a burst worth giving its memory back after."""
BURST_LOW = 16
"""Open connections under which a burst is over."""
LINGER = 2.0
"""Seconds a connection refused with a 408 is kept to drain what its client still sends."""


class DeadlineProtocol(HttpToolsProtocol):
    """``HttpToolsProtocol`` with a deadline for each request's head and body (see the module)."""

    header_timeout: float = 10.0
    body_timeout: float = 30.0
    burst_peak = 0
    """The most connections open at once since memory was last given back (all of them)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline: asyncio.TimerHandle | None = None
        self._lingering = False

    @classmethod
    def with_timeouts(cls, header: float, body: float) -> type[DeadlineProtocol]:
        """A protocol class (what ``uvicorn.Config(http=...)`` takes) with these deadlines."""
        return type(cls.__name__, (cls,), {"header_timeout": header, "body_timeout": body})

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        # One system call per turn of the loop, not one per write (see CorkedTransport).
        super().connection_made(CorkedTransport(transport, self.loop))  # type: ignore[arg-type]
        self._arm(self.header_timeout, "headers")
        DeadlineProtocol.burst_peak = max(DeadlineProtocol.burst_peak, len(self.connections))

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)
        if DeadlineProtocol.burst_peak >= BURST_HIGH and len(self.connections) < BURST_LOW:
            DeadlineProtocol.burst_peak = 0
            self.loop.call_soon(give_back_memory, self.loop)  # after this connection's objects

    def data_received(self, data: bytes) -> None:
        if not self._lingering:  # once refused, what arrives is dropped unread
            super().data_received(data)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        if self._deadline is None:  # a kept-alive connection's next request
            self._arm(self.header_timeout, "headers")

    def on_headers_complete(self) -> None:
        self._disarm()
        super().on_headers_complete()
        if not (self.parser.should_upgrade() and self._should_upgrade()):
            self._arm(self.body_timeout, "body")  # ended by the body's end (at once without one)

    def on_message_complete(self) -> None:
        self._disarm()
        super().on_message_complete()

    def handle_websocket_upgrade(self) -> None:
        self._disarm()  # the WebSocket protocol takes the connection from here
        super().handle_websocket_upgrade()

    def _arm(self, seconds: float, part: str) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(seconds, self._expired, seconds, part)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expired(self, seconds: float, part: str) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        cycle = self.cycle
        # A 408 only where no answer is on the wire: never inside another response.
        if part == "headers":
            quiet = cycle is None or cycle.response_complete
        else:
            quiet = cycle is not None and not cycle.response_started
        if quiet:
            body = error_json(
                "request_timeout",
                f"the request's {part} did not arrive within {seconds:g} s; connection closed",
            )
            self.transport.write(
                b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n"
                b"x-content-type-options: nosniff\r\n"
                b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (len(body), body)
            )
        if part == "body" and cycle is not None:
            cycle.disconnected = True  # the request's task reads the end, and writes nothing
            cycle.message_event.set()
        if quiet and self.transport.can_write_eof():
            self._linger()
        else:
            self.transport.close()

    def _linger(self) -> None:
        """Send the end after the 408, drain the client, close at its end or after LINGER."""
        self._lingering = True
        self.transport.write_eof()
        self.transport.resume_reading()  # a body's flow control may have paused it
        self._deadline = self.loop.call_later(LINGER, self.transport.close)


class CorkedTransport:
    """A transport whose writes of one turn of the event loop leave in one system call.

    uvicorn writes a response's status line and headers, then its body, each with a
    ``write`` of its own: two ``send`` calls for every small answer, the most expensive
    step of a read that PostgreSQL answers from memory. Writes are held until the loop
    has run what is ready (``call_soon``) and then sent together; ``close`` and
    ``write_eof`` send what is held first, ``abort`` drops it. A stream's events still
    leave as soon as they are written: at most one turn of the loop later.
    """

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._held: list[bytes] = []
        self._size = 0

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not data:
            return
        if not self._held:
            self._loop.call_soon(self.flush)
        self._held.append(bytes(data))
        self._size += len(data)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if not self._held:
            return
        held, self._held, self._size = self._held, [], 0
        if not self._transport.is_closing():
            self._transport.write(held[0] if len(held) == 1 else b"".join(held))

    def get_write_buffer_size(self) -> int:
        return self._transport.get_write_buffer_size() + self._size

    def write_eof(self) -> None:
        self.flush()
        self._transport.write_eof()

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def abort(self) -> None:
        self._held, self._size = [], 0
        self._transport.abort()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


def give_back_memory(loop: asyncio.AbstractEventLoop) -> None:
    """Collect garbage, then return the C heap's free pages to the system (glibc only).

    Python's own allocator frees an arena only when all of it is free, so part
    of a burst's memory stays, reused by the next one; the C heap's free pages
    can go.
    """
    gc.collect()
    trim = _malloc_trim()
    if trim is not None:
        loop.run_in_executor(None, trim, 0)  # off the event loop: a large heap takes a while


def _malloc_trim() -> Any:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        return ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None
