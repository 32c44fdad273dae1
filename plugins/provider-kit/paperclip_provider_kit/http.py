"""A small HTTP server on uvicorn, for a provider's helpers and fakes (extra ``http``).

A handler takes a :class:`Request` (the whole body read, at most
:data:`MAX_BODY`) and returns a :class:`Response`: JSON, raw bytes, or an
event stream that stays open until the handler's queue ends it or the client
goes. The gateway's tool relay and the fake OpenCode server serve on it.

uvicorn is told to leave the process's signals and logging alone: the relay
runs inside the runner, whose own SIGTERM handling and logs must stay its own.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import socket
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import uvicorn

MAX_BODY = 16 * 1024 * 1024

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


@dataclass
class Request:
    """One request, its header names in lower case."""

    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        """The body as JSON (an empty body is ``{}``)."""
        return json.loads(self.body or b"{}")

    def basic_auth(self) -> tuple[str, str] | None:
        """``(user, password)`` of a ``Basic`` authorization, else None."""
        scheme, _, value = self.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "basic":
            return None
        try:
            user, _, password = base64.b64decode(value).decode().partition(":")
        except ValueError:
            return None
        return user, password


@dataclass
class Response:
    """An answer: ``body`` as JSON, or ``raw`` bytes, or an event ``stream``."""

    status: int = 200
    body: Any = None
    """JSON-serialisable; None with 204."""
    headers: dict[str, str] = field(default_factory=dict)
    raw: bytes | None = None
    """The body as it is (its ``Content-Type`` in ``headers``), instead of ``body``."""
    stream: asyncio.Queue[bytes | None] | None = None
    """An event stream: each item is sent as it comes, None ends it."""


Handler = Callable[[Request], Awaitable[Response]]


class _Server(uvicorn.Server):
    """A uvicorn server that installs no signal handlers (the host process keeps its own)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    def install_signal_handlers(self) -> None:  # uvicorn before 0.29
        pass


class HttpServer:
    """A running server; :meth:`close` stops it without waiting on open event streams."""

    def __init__(self, server: uvicorn.Server, task: asyncio.Task[None], port: int) -> None:
        self._server = server
        self._task = task
        self.port = port

    async def close(self) -> None:
        """Stop listening and end the connections."""
        self._server.should_exit = True
        self._server.force_exit = True
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._task


async def serve(handler: Handler, host: str, port: int) -> HttpServer:
    """Listen on ``host:port`` (0: any free port) and answer every request with ``handler``.

    The socket is bound and listening when this returns.
    """
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    # log_config=None: the host process's logging stays as it configured it.
    config = uvicorn.Config(
        _asgi(handler),
        log_config=None,
        log_level="warning",
        access_log=False,
        lifespan="off",
        http="h11",
    )
    server = _Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    return HttpServer(server, task, sock.getsockname()[1])


def _asgi(handler: Handler) -> Callable[[Scope, Receive, Send], Awaitable[None]]:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            if len(body) > MAX_BODY:
                await _answer(send, Response(413, {"error": "body too large"}))
                return
            if not message.get("more_body"):
                break
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        query = scope.get("query_string", b"").decode("latin-1")
        request = Request(scope["method"].upper(), scope["path"], query, headers, bytes(body))
        response = await handler(request)
        if response.stream is not None:
            await _stream(receive, send, response.stream)
        else:
            await _answer(send, response)

    return app


async def _answer(send: Send, response: Response) -> None:
    if response.raw is not None:
        payload = response.raw
    else:
        payload = b"" if response.body is None else json.dumps(response.body).encode()
    headers = [(k.lower().encode(), v.encode()) for k, v in response.headers.items()]
    if payload and response.raw is None:
        headers.append((b"content-type", b"application/json"))
    headers.append((b"content-length", str(len(payload)).encode()))
    await send({"type": "http.response.start", "status": response.status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})


async def _stream(receive: Receive, send: Send, queue: asyncio.Queue[bytes | None]) -> None:
    headers = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    gone = asyncio.ensure_future(_disconnected(receive))
    try:
        while True:
            chunk = asyncio.ensure_future(queue.get())
            await asyncio.wait({chunk, gone}, return_when=asyncio.FIRST_COMPLETED)
            if not chunk.done():
                chunk.cancel()
                return
            item = chunk.result()
            if item is None:
                break
            await send({"type": "http.response.body", "body": item, "more_body": True})
        await send({"type": "http.response.body", "body": b""})
    finally:
        gone.cancel()


async def _disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
