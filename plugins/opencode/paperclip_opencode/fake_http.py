"""A very small HTTP/1.1 server on asyncio, for the fake OpenCode server (no dependencies).

Requests with a ``Content-Length`` body, keep-alive, JSON answers, and
server-sent event streams that stay open until the client or the server ends
them. Enough for the subset of OpenCode's API a Paperclip run uses; not a
general server.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

MAX_BODY = 16 * 1024 * 1024
REASONS = {200: "OK", 204: "No Content", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found"}


@dataclass
class Request:
    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body or b"{}")

    def basic_auth(self) -> tuple[str, str] | None:
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
    status: int = 200
    body: Any = None
    """JSON-serialisable; None with 204."""
    stream: asyncio.Queue[bytes | None] | None = None
    """An event stream: each item is sent as it comes, None ends it."""
    headers: dict[str, str] = field(default_factory=dict)


Handler = Callable[[Request], Awaitable[Response]]


async def serve(handler: Handler, host: str, port: int) -> asyncio.Server:
    """Listen on ``host:port`` and answer every request with ``handler``."""

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while request := await _read_request(reader):
                response = await handler(request)
                if response.stream is not None:
                    await _stream(writer, response)
                    return
                await _answer(writer, response)
        except (ConnectionError, asyncio.IncompleteReadError, ValueError):
            pass
        finally:
            with contextlib.suppress(Exception):
                writer.close()

    return await asyncio.start_server(connection, host, port, limit=MAX_BODY)


async def _read_request(reader: asyncio.StreamReader) -> Request | None:
    line = await reader.readline()
    if not line:
        return None
    method, target, _ = line.decode("latin-1").split(" ", 2)
    headers: dict[str, str] = {}
    while (header := await reader.readline()) not in (b"\r\n", b"\n", b""):
        name, _, value = header.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length") or 0)
    if length > MAX_BODY:
        raise ValueError("body too large")
    body = await reader.readexactly(length) if length else b""
    path, _, query = target.partition("?")
    return Request(method.upper(), path, query, headers, body)


async def _answer(writer: asyncio.StreamWriter, response: Response) -> None:
    payload = b"" if response.body is None else json.dumps(response.body).encode()
    head = [f"HTTP/1.1 {response.status} {REASONS.get(response.status, 'Status')}"]
    if payload:
        head.append("Content-Type: application/json")
    head += [f"{k}: {v}" for k, v in response.headers.items()]
    head.append(f"Content-Length: {len(payload)}")
    writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + payload)
    await writer.drain()


async def _stream(writer: asyncio.StreamWriter, response: Response) -> None:
    assert response.stream is not None
    head = (
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
        "Cache-Control: no-cache\r\nConnection: close\r\n\r\n"
    )
    writer.write(head.encode())
    await writer.drain()
    while (chunk := await response.stream.get()) is not None:
        writer.write(chunk)
        await writer.drain()
