"""The fake app-server's MCP transport: JSON-RPC over streamable HTTP, on the standard library.

Codex's MCP client is compiled into its binary and costs nothing to start. The MCP
SDK's Python client costs the fake about a second of CPU to import, and a provider
process runs per run: on a machine running many runs at once, that import was most
of what the machine did. This client does what the fake needs and no more:

- one ``POST`` per message, on a connection of its own (``Connection: close``);
- the answer read as ``application/json``, or as a ``text/event-stream`` whose events
  are read until the one answering the request (other events are skipped);
- the ``Mcp-Session-Id`` the server gives at ``initialize`` sent with every later
  request, with the negotiated ``MCP-Protocol-Version``.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import ssl
from collections.abc import AsyncIterator, Mapping
from typing import Any
from urllib.parse import urlsplit

from paperclip_codex_testing import __version__

PROTOCOL_VERSION = "2025-06-18"
"""The version the fake asks for; the server's answer is the one used after."""


class McpError(Exception):
    """The server answered with a JSON-RPC error: the text is its message."""


class McpHttpError(Exception):
    """The server answered a request with an HTTP error status."""

    def __init__(self, status: int, body: str) -> None:
        super().__init__(f"HTTP {status}" + (f": {body}" if body else ""))
        self.status = status


class McpSession:
    """One MCP session with one streamable-HTTP server."""

    def __init__(self, url: str, headers: Mapping[str, str]) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) MCP url: {url!r}")
        self._tls = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port or (443 if self._tls else 80)
        self._netloc = parts.netloc
        self._path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self._headers = dict(headers)
        self._ids = itertools.count(1)
        self.session_id: str | None = None
        self.protocol = PROTOCOL_VERSION

    async def initialize(self) -> None:
        result = await self.request(
            "initialize",
            {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "paperclip-codex-fake", "version": __version__},
            },
        )
        self.protocol = str(result.get("protocolVersion") or PROTOCOL_VERSION)
        await self.notify("notifications/initialized")

    async def list_tools(self) -> list[dict[str, Any]]:
        """Every tool the server lists, following its pages."""
        tools: list[dict[str, Any]] = []
        cursor: str | None = None
        while True:
            result = await self.request("tools/list", {"cursor": cursor} if cursor else {})
            tools.extend(t for t in result.get("tools") or [] if isinstance(t, dict))
            cursor = result.get("nextCursor")
            if not cursor:
                return tools

    async def call_tool(self, name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        result = await self.request("tools/call", {"name": name, "arguments": dict(arguments)})
        return {"isError": False, **result}

    async def request(self, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
        request_id = next(self._ids)
        message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        answer = await self._post(message, request_id)
        if not isinstance(answer, dict):
            raise McpError(f"no answer to {method}")
        if "error" in answer:
            error = answer["error"] if isinstance(answer["error"], dict) else {}
            raise McpError(str(error.get("message") or "the server answered an error"))
        result = answer.get("result")
        # As the SDK's models dump it (``exclude_none``): a field that is null is absent.
        return (
            {k: v for k, v in result.items() if v is not None} if isinstance(result, dict) else {}
        )

    async def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await self._post(message, None)

    async def _post(self, message: Mapping[str, Any], request_id: int | None) -> Any:
        body = json.dumps(message).encode()
        head = {
            "Host": self._netloc,
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "Content-Length": str(len(body)),
            "Connection": "close",
            **self._headers,
        }
        if self.session_id is not None:
            head["Mcp-Session-Id"] = self.session_id
            head["MCP-Protocol-Version"] = self.protocol
        lines = "".join(f"{k}: {v}\r\n" for k, v in head.items())
        reader, writer = await asyncio.open_connection(
            self._host, self._port, ssl=ssl.create_default_context() if self._tls else None
        )
        try:
            writer.write(f"POST {self._path} HTTP/1.1\r\n{lines}\r\n".encode("latin-1") + body)
            await writer.drain()
            status, headers = await _read_head(reader)
            if "mcp-session-id" in headers:
                self.session_id = headers["mcp-session-id"]
            chunks = _body(reader, headers)
            if status >= 400:
                text = b"".join([c async for c in chunks]).decode("utf-8", "replace")
                raise McpHttpError(status, text.strip()[:300])
            if request_id is None:
                return None
            if headers.get("content-type", "").startswith("text/event-stream"):
                return await _answer_in_events(chunks, request_id)
            return json.loads(b"".join([c async for c in chunks]) or b"null")
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()


async def _read_head(reader: asyncio.StreamReader) -> tuple[int, dict[str, str]]:
    head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
    status_line, *fields = head.split("\r\n")
    parts = status_line.split(" ", 2)
    if len(parts) < 2 or not parts[1].isdigit():
        raise McpHttpError(0, f"not an HTTP answer: {status_line[:80]!r}")
    headers: dict[str, str] = {}
    for field in fields:
        name, sep, value = field.partition(":")
        if sep:
            headers[name.strip().lower()] = value.strip()
    return int(parts[1]), headers


async def _body(reader: asyncio.StreamReader, headers: Mapping[str, str]) -> AsyncIterator[bytes]:
    """The answer's body as it arrives: chunked, of a known length, or until the end."""
    if "chunked" in headers.get("transfer-encoding", "").lower():
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0].strip(), 16)
            if size == 0:
                return
            yield await reader.readexactly(size)
            await reader.readexactly(2)
    elif "content-length" in headers:
        length = int(headers["content-length"])
        if length:
            yield await reader.readexactly(length)
    else:
        while chunk := await reader.read(65536):
            yield chunk


async def _answer_in_events(chunks: AsyncIterator[bytes], request_id: int) -> Any:
    """The JSON-RPC answer to ``request_id`` among a server-sent event stream's events."""
    buffer = b""
    data: list[str] = []
    async for chunk in chunks:
        buffer += chunk
        *lines, buffer = buffer.split(b"\n")
        for raw in lines:
            line = raw.rstrip(b"\r").decode("utf-8")
            if line.startswith("data:"):
                data.append(line[5:].removeprefix(" "))
            elif not line and data:
                event, data = "\n".join(data), []
                message = json.loads(event)
                if isinstance(message, dict) and message.get("id") == request_id:
                    if "result" in message or "error" in message:
                        return message
    return None
