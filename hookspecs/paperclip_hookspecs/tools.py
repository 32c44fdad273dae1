"""A small client for the run's tools, for providers that are not MCP clients (hook API 1.4).

The runner serves a run's server-owned tools (``get_task_context``,
``post_comment``, ``finish``, ...) over MCP streamable HTTP on loopback, at
:attr:`McpEndpoint.url`, authenticated by :attr:`McpEndpoint.bearer_token`. A
provider whose model runtime speaks MCP only needs that endpoint in its
configuration. One that does not (a driver that calls a model itself, a bridge
to a remote agent) calls the tools through this client::

    async with ToolClient(turn.mcp) as tools:
        listed = await tools.list_tools()
        outcome = await tools.call_tool("finish", {"outcome": "done", "summary": "Fixed."})
        if outcome.is_error:
            ...  # a refusal the model can correct: outcome.text says why

It speaks JSON-RPC over HTTP POST (``initialize``, ``tools/list``,
``tools/call``) with the standard library only, reading a JSON or an SSE
answer, and keeps the ``Mcp-Session-Id`` a stateful server may hand out. Every
request is bounded by ``timeout`` seconds. A tool's refusal is a result
(:attr:`ToolOutcome.is_error`), never an exception: it is meant for the model.
:class:`ToolClientError` means the call did not get an answer (transport,
authentication, protocol).

A tool call that got no answer may still have been executed by the control
plane: call it again with the same arguments and the journal answers the
repeat from its first result, so nothing is done twice.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from paperclip_hookspecs.providers import McpEndpoint

PROTOCOL_VERSION = "2025-06-18"
"""The MCP protocol revision this client asks for."""
CLIENT_INFO = {"name": "paperclip-hookspecs-tool-client", "version": "1.4"}
DEFAULT_TIMEOUT_SECONDS = 600.0
"""A tool call waits for the control plane, which may be restarting: allow minutes."""
MAX_RESPONSE_BYTES = 16 * 1024 * 1024


class ToolClientError(Exception):
    """A request got no usable answer: unreachable, refused (HTTP status), or not MCP."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status
        """The HTTP status, when the server answered with one (401: the token is not valid)."""


@dataclass(frozen=True, slots=True)
class ToolInfo:
    """One tool as the server lists it."""

    name: str
    description: str = ""
    input_schema: Mapping[str, Any] = field(default_factory=dict)
    """JSON Schema of the tool's arguments."""
    annotations: Mapping[str, Any] = field(default_factory=dict)
    """MCP tool annotations (``readOnlyHint``, ``destructiveHint``, ...)."""
    title: str = ""


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """A tool's answer: its content, and whether it is a refusal."""

    content: Sequence[Mapping[str, Any]] = ()
    """MCP content items (``{"type": "text", "text": ...}``, ...)."""
    structured: Mapping[str, Any] | None = None
    """The result as an object (``structuredContent``), when the server sent one."""
    is_error: bool = False
    """The tool refused or failed; :attr:`text` says why, in words the model can act on."""

    @property
    def text(self) -> str:
        """The text items of the content, joined by newlines."""
        return "\n".join(
            str(item.get("text", "")) for item in self.content if item.get("type") == "text"
        )

    def value(self) -> Any:
        """The result as data: the structured content, else the text parsed as JSON, else the text."""
        if self.structured is not None:
            return dict(self.structured)
        try:
            return json.loads(self.text)
        except ValueError:
            return self.text


class ToolClient:
    """Calls the tools of one MCP endpoint (see the module's documentation).

    Use it as an async context manager, or call :meth:`close` when done. It may
    be shared by concurrent tasks of one event loop.
    """

    def __init__(self, endpoint: McpEndpoint, *, timeout: float = DEFAULT_TIMEOUT_SECONDS) -> None:
        if not endpoint.url.startswith(("http://", "https://")):
            raise ValueError(f"an MCP endpoint URL is http(s): {endpoint.url!r}")
        self._endpoint = endpoint
        self._timeout = timeout
        self._ids = itertools.count(1)
        self._session_id: str | None = None
        self._protocol: str | None = None
        self._ready: asyncio.Lock | None = None
        self._initialized = False

    async def __aenter__(self) -> ToolClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()

    async def close(self) -> None:
        """Forget the session. Nothing stays open between requests, so this never blocks."""
        self._session_id = None
        self._initialized = False

    async def list_tools(self) -> list[ToolInfo]:
        """Every tool the endpoint offers (all pages)."""
        tools: list[ToolInfo] = []
        cursor: str | None = None
        while True:
            params: dict[str, Any] = {} if cursor is None else {"cursor": cursor}
            result = await self._request("tools/list", params)
            for tool in result.get("tools") or []:
                if isinstance(tool, Mapping) and isinstance(tool.get("name"), str):
                    tools.append(_tool_info(tool))
            cursor = result.get("nextCursor")
            if not isinstance(cursor, str) or not cursor:
                return tools

    async def call_tool(self, name: str, arguments: Mapping[str, Any] | None = None) -> ToolOutcome:
        """Call one tool; a refusal comes back as ``is_error``, never as an exception."""
        result = await self._request(
            "tools/call", {"name": name, "arguments": dict(arguments or {})}
        )
        content = [c for c in result.get("content") or [] if isinstance(c, Mapping)]
        structured = result.get("structuredContent")
        return ToolOutcome(
            content=tuple(content),
            structured=structured if isinstance(structured, Mapping) else None,
            is_error=bool(result.get("isError", False)),
        )

    # The protocol

    async def _request(self, method: str, params: Mapping[str, Any]) -> Mapping[str, Any]:
        await self._initialize()
        return await self._rpc(method, params)

    async def _initialize(self) -> None:
        if self._initialized:
            return
        if self._ready is None:
            self._ready = asyncio.Lock()
        async with self._ready:
            if self._initialized:
                return
            result = await self._rpc(
                "initialize",
                {
                    "protocolVersion": PROTOCOL_VERSION,
                    "capabilities": {},
                    "clientInfo": CLIENT_INFO,
                },
            )
            version = result.get("protocolVersion")
            self._protocol = version if isinstance(version, str) else PROTOCOL_VERSION
            await self._post({"jsonrpc": "2.0", "method": "notifications/initialized"}, None)
            self._initialized = True

    async def _rpc(self, method: str, params: Mapping[str, Any]) -> Mapping[str, Any]:
        request_id = next(self._ids)
        message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": dict(params)}
        answer = await self._post(message, request_id)
        if answer is None:
            raise ToolClientError(f"{method}: the server sent no answer")
        error = answer.get("error")
        if isinstance(error, Mapping):
            raise ToolClientError(f"{method}: {error.get('message') or error}")
        result = answer.get("result")
        if not isinstance(result, Mapping):
            raise ToolClientError(f"{method}: the answer has no result object")
        return result

    async def _post(
        self, message: Mapping[str, Any], request_id: int | None
    ) -> Mapping[str, Any] | None:
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "Authorization": f"Bearer {self._endpoint.bearer_token}",
        }
        if self._session_id is not None:
            headers["Mcp-Session-Id"] = self._session_id
        if self._protocol is not None:
            headers["MCP-Protocol-Version"] = self._protocol
        body = json.dumps(message).encode()
        status, reply_headers, payload = await asyncio.to_thread(
            _http_post, self._endpoint.url, body, headers, self._timeout
        )
        session = reply_headers.get("mcp-session-id")
        if session:
            self._session_id = session
        if request_id is None:
            return None  # a notification: 202 Accepted, no body
        kind = reply_headers.get("content-type", "").split(";")[0].strip()
        if kind == "text/event-stream":
            return _answer_in_stream(payload, request_id)
        try:
            answer = json.loads(payload)
        except ValueError:
            raise ToolClientError(
                f"not a JSON answer (HTTP {status}, {kind or 'no type'})"
            ) from None
        if not isinstance(answer, Mapping):
            raise ToolClientError("the answer is not a JSON-RPC message")
        return answer


def _http_post(
    url: str, body: bytes, headers: Mapping[str, str], timeout: float
) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, data=body, headers=dict(headers), method="POST")
    # Loopback by design: never through a proxy from the environment.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=timeout) as response:
            payload = response.read(MAX_RESPONSE_BYTES + 1)
            if len(payload) > MAX_RESPONSE_BYTES:
                raise ToolClientError("the answer is larger than 16 MiB")
            reply = {k.lower(): v for k, v in response.headers.items()}
            return int(response.status), reply, payload
    except urllib.error.HTTPError as exc:
        detail = exc.read(2000).decode(errors="replace").strip()
        raise ToolClientError(
            f"HTTP {exc.code} from the MCP endpoint" + (f": {detail}" if detail else ""),
            status=exc.code,
        ) from None
    except (urllib.error.URLError, OSError, TimeoutError) as exc:
        reason = getattr(exc, "reason", exc)
        raise ToolClientError(f"cannot reach the MCP endpoint {url}: {reason}") from None


def _answer_in_stream(payload: bytes, request_id: int) -> Mapping[str, Any] | None:
    """The JSON-RPC answer to ``request_id`` among the events of an SSE body."""
    for event in payload.decode(errors="replace").replace("\r\n", "\n").split("\n\n"):
        data = "\n".join(
            line[5:].lstrip(" ") for line in event.split("\n") if line.startswith("data:")
        )
        if not data:
            continue
        try:
            message = json.loads(data)
        except ValueError:
            continue
        if isinstance(message, Mapping) and message.get("id") == request_id:
            return message
    return None


def _tool_info(tool: Mapping[str, Any]) -> ToolInfo:
    schema = tool.get("inputSchema")
    annotations = tool.get("annotations")
    return ToolInfo(
        name=str(tool["name"]),
        description=str(tool.get("description") or ""),
        input_schema=schema if isinstance(schema, Mapping) else {},
        annotations=annotations if isinstance(annotations, Mapping) else {},
        title=str(tool.get("title") or ""),
    )
