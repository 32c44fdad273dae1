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
import json
import os
from collections.abc import Mapping
from typing import Any

from paperclip_codex_testing.fake_mcp import McpHttpError, McpSession

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
    ``tool_timeout_sec`` each call. A session the server no longer knows (it restarted)
    is opened again by the next call.
    """

    def __init__(self, settings: Mapping[str, Any]) -> None:
        self.settings = settings
        self._session: McpSession | None = None
        self._opening = asyncio.Lock()

    async def list_tools(self) -> tuple[bool, dict[str, dict[str, Any]] | str]:
        """The server's tools by name, each with its ``annotations`` (or None); or an error text."""
        try:
            async with asyncio.timeout(self._startup_wait()):
                session = await self._open()
                listed = await session.list_tools()
        except TimeoutError:
            return False, "listing the MCP server's tools timed out"
        except Exception as exc:
            return False, self._failed(exc)
        return True, {
            str(tool.get("name")): {
                "annotations": _present(tool.get("annotations")),
                "title": tool.get("title"),
            }
            for tool in listed
        }

    async def call(
        self, name: str, arguments: Mapping[str, Any]
    ) -> tuple[bool, dict[str, Any] | str]:
        """Call one tool; (ok, result or error text)."""
        try:
            async with asyncio.timeout(self._startup_wait()):
                session = await self._open()
        except TimeoutError:
            return False, f"MCP call to {name}: the server did not start in time"
        except Exception as exc:
            return False, self._failed(exc)
        wait = float(self.settings.get("tool_timeout_sec", 60))
        try:
            async with asyncio.timeout(wait):
                return True, await session.call_tool(name, arguments)
        except TimeoutError:
            return False, f"MCP call to {name} timed out after {wait:g}s"
        except Exception as exc:
            return False, self._failed(exc)

    async def close(self) -> None:
        self._session = None

    def _startup_wait(self) -> float:
        return float(self.settings.get("startup_timeout_sec", 30))

    async def _open(self) -> McpSession:
        async with self._opening:
            if self._session is None:
                url = self.settings.get("url")
                if not isinstance(url, str):
                    raise ValueError(
                        "the MCP server has no url (only streamable HTTP is supported)"
                    )
                session = McpSession(url, _headers(self.settings))
                await session.initialize()
                self._session = session
            return self._session

    def _failed(self, exc: Exception) -> str:
        if isinstance(exc, McpHttpError) and exc.status == 404:
            self._session = None  # the server forgot the session: the next call opens one
        return _error_text(exc)


def _present(value: Any) -> Any:
    """A mapping without its null fields, as the SDK's models dumped it."""
    if isinstance(value, dict):
        return {k: v for k, v in value.items() if v is not None}
    return value


def _headers(settings: Mapping[str, Any]) -> dict[str, str]:
    headers = {str(k): str(v) for k, v in (settings.get("http_headers") or {}).items()}
    for header, variable in (settings.get("env_http_headers") or {}).items():
        if os.environ.get(variable):
            headers[str(header)] = os.environ[variable]
    token_variable = settings.get("bearer_token_env_var")
    if isinstance(token_variable, str) and os.environ.get(token_variable):
        headers["Authorization"] = f"Bearer {os.environ[token_variable]}"
    return headers


def _error_text(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_error_text(inner) for inner in exc.exceptions)
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def structured(outcome: Mapping[str, Any]) -> Any:
    """A tool result as a model reads it: its structured content, or its JSON text."""
    if outcome.get("structuredContent") is not None:
        return outcome["structuredContent"]
    for part in outcome.get("content") or []:
        if isinstance(part, dict) and part.get("type") == "text":
            with contextlib.suppress(ValueError):
                return json.loads(part.get("text") or "")
    return None


def at_path(value: Any, path: str) -> Any:
    """The value at a dotted path (``error.correction.cursor``), or None."""
    for key in path.split("."):
        value = value.get(key) if isinstance(value, dict) else None
    return value
