"""An MCP client that lists and calls a run's tools as a provider CLI does.

Over streamable HTTP, with the server's configured headers, through the
official MCP client: the fake providers' tool traffic is the real protocol,
so a conformance test can hold them to the real CLIs.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

_ENV_REF = re.compile(r"\{env:([A-Za-z_][A-Za-z0-9_]*)\}")


def headers_of(server: Mapping[str, Any]) -> dict[str, str]:
    """The server's headers with ``{env:VAR}`` replaced, as OpenCode and Pi read their config."""
    headers = server.get("headers") or {}
    return {
        str(k): _ENV_REF.sub(lambda m: os.environ.get(m.group(1), ""), str(v))
        for k, v in headers.items()
    }


async def list_tools(server: Mapping[str, Any]) -> list[str]:
    """The names of the server's tools."""
    async with _session(server) as session:
        listed = await session.list_tools()
    return [tool.name for tool in listed.tools]


async def call_tool(
    server: Mapping[str, Any], name: str, arguments: Mapping[str, Any], wait: float = 600.0
) -> tuple[bool, str]:
    """Call one tool: (ok, the result's text or the error's)."""
    try:
        async with asyncio.timeout(wait), _session(server) as session:
            result = await session.call_tool(name, dict(arguments))
    except TimeoutError:
        return False, f"MCP call to {name} timed out after {wait:g}s"
    except Exception as exc:
        return False, _error_text(exc)
    text = "\n".join(getattr(c, "text", "") for c in result.content)
    is_error = getattr(result, "is_error", None)
    if is_error is None:  # mcp 1.x
        is_error = getattr(result, "isError", False)
    return not is_error, text


@asynccontextmanager
async def _session(server: Mapping[str, Any]) -> AsyncIterator[Any]:
    # Imported at the first call: the MCP client is a heavy import, and a fake
    # provider starts on every turn, most of them before any tool is called.
    from mcp import ClientSession

    url = server.get("url")
    if not isinstance(url, str):
        raise ValueError("only remote MCP servers (a url) are supported by the fake")
    async with (
        _streams(url, headers_of(server)) as (read, write),
        ClientSession(read, write) as session,
    ):
        await asyncio.wait_for(session.initialize(), 30)
        yield session


@asynccontextmanager
async def _streams(url: str, headers: dict[str, str]) -> AsyncIterator[tuple[Any, Any]]:
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
