"""The fake app-server's MCP side: listing and calling the run's tools, and gating them as Codex does.

Codex (seen with codex-cli 0.171.0) lists each MCP server's tools at thread
start and decides per call whether it needs approval, from the server's
``default_tools_approval_mode`` and the tool's MCP annotations:

- ``approve``: never asks; ``prompt``: always asks;
- ``writes``: asks unless the tool says it is read-only;
- ``auto`` (the default): asks unless the tool is read-only, or says it is
  neither destructive nor open-world. A tool without annotations is neither
  (MCP's defaults are destructive and open-world), so it is asked about.

Asking means an ``mcpServer/elicitation/request`` to the client under approval
policy ``on-request``, and an outright refusal under ``never``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

REFUSED_UNDER_NEVER = "MCP tool call requires approval, but approval policy is never"
DECLINED_BY_USER = "user rejected MCP tool call"


def needs_approval(mode: str, annotations: Mapping[str, Any] | None) -> bool:
    """Whether Codex would ask before calling a tool with these annotations."""
    hints = annotations or {}
    read_only = hints.get("readOnlyHint") is True
    if mode == "approve":
        return False
    if mode == "prompt":
        return True
    if mode == "writes":
        return not read_only
    harmless = hints.get("destructiveHint") is False and hints.get("openWorldHint") is False
    return not (read_only or harmless)


class McpClient:
    """One MCP server's session, opened once and kept for the process, as Codex keeps
    its MCP clients: ``startup_timeout_sec`` bounds opening it (and listing the tools),
    ``tool_timeout_sec`` each call. A session whose transport ended is opened again by
    the next call.

    The session lives in a task of its own: the MCP client's streams are entered and
    left in one task, while the turns that call tools are others.
    """

    def __init__(self, settings: Mapping[str, Any]) -> None:
        self.settings = settings
        self._session: Any = None
        self._holder: asyncio.Task[None] | None = None
        self._done = asyncio.Event()
        self._opening = asyncio.Lock()

    async def list_tools(self) -> tuple[bool, dict[str, dict[str, Any]] | str]:
        """The server's tools by name, each with its ``annotations`` (or None); or an error text."""
        try:
            session = await self._open()
            async with asyncio.timeout(self._startup_wait()):
                listed = await session.list_tools()
        except TimeoutError:
            return False, "listing the MCP server's tools timed out"
        except Exception as exc:
            return False, _error_text(exc)
        tools = {}
        for tool in listed.tools:
            dumped = tool.model_dump(mode="json", by_alias=True, exclude_none=True)
            tools[tool.name] = {"annotations": dumped.get("annotations"), "title": tool.title}
        return True, tools

    async def call(
        self, name: str, arguments: Mapping[str, Any]
    ) -> tuple[bool, dict[str, Any] | str]:
        """Call one tool; (ok, result or error text)."""
        try:
            session = await self._open()
        except TimeoutError:
            return False, f"MCP call to {name}: the server did not start in time"
        except Exception as exc:
            return False, _error_text(exc)
        wait = float(self.settings.get("tool_timeout_sec", 60))
        try:
            async with asyncio.timeout(wait):
                result = await session.call_tool(name, dict(arguments))
        except TimeoutError:
            return False, f"MCP call to {name} timed out after {wait:g}s"
        except Exception as exc:
            return False, _error_text(exc)
        return True, result.model_dump(mode="json", by_alias=True, exclude_none=True)

    async def close(self) -> None:
        holder, self._holder = self._holder, None
        self._done.set()
        if holder is not None:
            with contextlib.suppress(BaseException):
                await holder

    def _startup_wait(self) -> float:
        return float(self.settings.get("startup_timeout_sec", 30))

    async def _open(self) -> Any:
        async with self._opening:
            if self._holder is not None and not self._holder.done():
                return self._session
            ready: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            self._done = asyncio.Event()
            self._holder = asyncio.create_task(self._hold(ready, self._done))
            try:
                async with asyncio.timeout(self._startup_wait()):
                    self._session = await asyncio.shield(ready)
            except BaseException:
                self._holder.cancel()
                if ready.done() and not ready.cancelled():
                    ready.exception()  # seen here: no "never retrieved" warning later
                raise
            return self._session

    async def _hold(self, ready: asyncio.Future[Any], done: asyncio.Event) -> None:
        try:
            async with _session(self.settings) as session:
                ready.set_result(session)
                await done.wait()
        except Exception as exc:
            if not ready.done():
                ready.set_exception(exc)
            # else: its transport ended; the next call opens another session.


@asynccontextmanager
async def _session(settings: Mapping[str, Any]) -> AsyncIterator[Any]:
    url = settings.get("url")
    if not isinstance(url, str):
        raise ValueError("the MCP server has no url (only streamable HTTP is supported)")
    try:
        from mcp import ClientSession
    except ImportError:
        raise RuntimeError(
            "the fake app-server needs the mcp package: pip install 'paperclip-codex[fake]'"
        ) from None
    async with (
        _mcp_streams(url, _headers(settings)) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def _headers(settings: Mapping[str, Any]) -> dict[str, str]:
    headers = {str(k): str(v) for k, v in (settings.get("http_headers") or {}).items()}
    for header, variable in (settings.get("env_http_headers") or {}).items():
        if os.environ.get(variable):
            headers[str(header)] = os.environ[variable]
    token_variable = settings.get("bearer_token_env_var")
    if isinstance(token_variable, str) and os.environ.get(token_variable):
        headers["Authorization"] = f"Bearer {os.environ[token_variable]}"
    return headers


@asynccontextmanager
async def _mcp_streams(url: str, headers: dict[str, str]) -> AsyncIterator[tuple[Any, Any]]:
    # mcp 2 (and late 1.x) takes a configured HTTP client; early 1.x takes headers.
    try:
        from mcp.client.streamable_http import streamable_http_client
    except ImportError:
        from mcp.client.streamable_http import (  # type: ignore[attr-defined, unused-ignore]
            streamablehttp_client,
        )

        async with streamablehttp_client(url, headers=headers) as streams:
            yield streams[0], streams[1]
        return
    from mcp.shared._httpx_utils import create_mcp_http_client

    async with (
        create_mcp_http_client(headers=headers) as http,
        streamable_http_client(url, http_client=http) as streams,
    ):
        yield streams[0], streams[1]


def _error_text(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_error_text(inner) for inner in exc.exceptions)
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
