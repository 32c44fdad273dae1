"""The contract package's tool client against the runner's real MCP bridge.

``paperclip_hookspecs.tools.ToolClient`` is for providers that are not MCP
clients; it must list and call the run's tools exactly as the bridge serves
them, report a refusal as a result the model can act on, and name an
authentication failure.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from paperclip_hookspecs.providers import McpEndpoint
from paperclip_hookspecs.tools import ToolClient, ToolClientError

from paperclip.runner.mcp_bridge import McpBridge, ToolCallResult
from paperclip.wire.tools import TOOLS


class Journal:
    """The control plane's side, as far as the bridge sees it: one answer per call."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, dict[str, Any]]] = []

    async def __call__(
        self, run_id: str, call_id: str, tool: str, arguments: dict[str, Any]
    ) -> ToolCallResult:
        self.calls.append((run_id, tool, arguments))
        if tool == "block":
            return ToolCallResult({"error": {"code": "already_finished"}}, is_error=True)
        return ToolCallResult({"accepted": True, "tool": tool})


@pytest.fixture
async def bridge() -> AsyncIterator[tuple[McpBridge, Journal]]:
    journal = Journal()
    served = McpBridge(TOOLS, journal, shutdown_grace_seconds=1)
    await served.start()
    served.open_run("run-a", "token-a")
    try:
        yield served, journal
    finally:
        await served.stop()


async def test_lists_and_calls_the_runs_tools(bridge):
    served, journal = bridge
    async with ToolClient(McpEndpoint("paperclip", served.url, "token-a"), timeout=10) as tools:
        listed = await tools.list_tools()
        outcome = await tools.call_tool("finish", {"outcome": "done", "summary": "Fixed."})

    assert [t.name for t in listed] == [t.name for t in TOOLS]
    finish = next(t for t in listed if t.name == "finish")
    assert finish.input_schema["required"] == ["outcome", "summary"]
    assert finish.annotations  # the catalog's annotations come through
    assert not outcome.is_error
    assert outcome.value() == {"accepted": True, "tool": "finish"}
    assert journal.calls == [("run-a", "finish", {"outcome": "done", "summary": "Fixed."})]


async def test_a_refusal_is_a_result_for_the_model_not_an_exception(bridge):
    served, journal = bridge
    async with ToolClient(McpEndpoint("paperclip", served.url, "token-a"), timeout=10) as tools:
        refused = await tools.call_tool("block", {"reason": "stuck"})
        invalid = await tools.call_tool("finish", {"outcome": "maybe"})

    assert refused.is_error and refused.value() == {"error": {"code": "already_finished"}}
    assert invalid.is_error and "Invalid arguments for finish" in invalid.text
    assert [c[1] for c in journal.calls] == ["block"]  # the invalid call never left the runner


async def test_a_wrong_token_is_named_not_retried(bridge):
    served, journal = bridge
    tools = ToolClient(McpEndpoint("paperclip", served.url, "not-a-token"), timeout=10)
    with pytest.raises(ToolClientError) as refused:
        await tools.list_tools()
    assert refused.value.status == 401
    assert journal.calls == []


async def test_an_endpoint_that_is_not_there_fails_fast():
    tools = ToolClient(McpEndpoint("paperclip", "http://127.0.0.1:9/mcp", "t"), timeout=5)
    with pytest.raises(ToolClientError, match="cannot reach"):
        await tools.call_tool("finish", {})
    with pytest.raises(ValueError):
        ToolClient(McpEndpoint("paperclip", "file:///etc/passwd", "t"))
