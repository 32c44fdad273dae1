"""The runner's MCP bridge, driven by the MCP SDK's own client over real loopback HTTP."""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from paperclip.runner.mcp_bridge import McpBridge, ToolCallResult
from paperclip.wire.tools import TOOLS

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    },
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


class Recorder:
    """A dispatch that records its calls and answers with what it was asked."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, str, dict[str, Any]]] = []
        self.release: asyncio.Event | None = None  # when set, calls wait for it
        self.entered = asyncio.Condition()

    async def __call__(
        self, run_id: str, call_id: str, name: str, arguments: dict[str, Any]
    ) -> ToolCallResult:
        self.calls.append((run_id, call_id, name, arguments))
        async with self.entered:
            self.entered.notify_all()
        if self.release is not None:
            await self.release.wait()
        return ToolCallResult({"run": run_id, "tool": name, "arguments": arguments})

    async def wait_for_calls(self, n: int) -> None:
        async with self.entered:
            await asyncio.wait_for(self.entered.wait_for(lambda: len(self.calls) >= n), 10)


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
async def bridge(recorder: Recorder) -> AsyncIterator[McpBridge]:
    bridge = McpBridge(TOOLS, recorder, max_calls_per_run=4, shutdown_grace_seconds=1)
    await bridge.start()
    bridge.open_run("run-a", "token-a")
    try:
        yield bridge
    finally:
        await bridge.stop()


@asynccontextmanager
async def connect(
    url: str, token: str | None, *, modern: bool = False
) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    timeout = httpx2.Timeout(10, read=60)
    async with (
        httpx2.AsyncClient(headers=headers, timeout=timeout) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        if modern:
            await session.discover()
        else:
            await session.initialize()
        yield session


async def raw_post(url: str, headers: dict[str, str], body: bytes | None = None) -> httpx2.Response:
    async with httpx2.AsyncClient(timeout=10) as http:
        return await http.post(
            url, headers={**MCP_HEADERS, **headers}, content=body or json.dumps(INITIALIZE).encode()
        )


def payload(result: Any) -> Any:
    return json.loads(result.content[0].text)


async def test_lists_the_catalog(bridge: McpBridge) -> None:
    assert bridge.url.startswith("http://127.0.0.1:") and bridge.url.endswith("/mcp")
    async with connect(bridge.url, "token-a") as session:
        listed = await session.list_tools()
    assert [(t.name, t.description, t.input_schema) for t in listed.tools] == [
        (t.name, t.description, t.input_schema) for t in TOOLS
    ]


async def test_tools_carry_annotations_that_let_clients_call_them_unprompted(
    bridge: McpBridge,
) -> None:
    # Codex refuses an unannotated tool under approval policy "never" (issue 9).
    async with connect(bridge.url, "token-a") as session:
        listed = await session.list_tools()
    hints = {
        t.name: (t.annotations.read_only_hint, t.annotations.destructive_hint)
        for t in listed.tools
        if t.annotations is not None
    }
    assert hints == {
        "get_task_context": (True, False),
        "read_current_wake_comments": (True, False),
        "post_comment": (False, False),
        "report_progress": (False, False),
        "request_human_input": (False, False),
        "finish": (False, False),
        "block": (False, False),
        "delegate": (False, False),
    }
    assert all(t.annotations and t.annotations.open_world_hint is False for t in listed.tools)
    assert all(t.title for t in listed.tools)


async def test_call_is_dispatched_as_the_run_of_the_token(
    bridge: McpBridge, recorder: Recorder
) -> None:
    async with connect(bridge.url, "token-a") as session:
        result = await session.call_tool("post_comment", {"body": "hello"})
    assert not result.is_error
    expected = {"run": "run-a", "tool": "post_comment", "arguments": {"body": "hello"}}
    assert payload(result) == expected
    assert result.structured_content == expected
    [(run_id, call_id, name, arguments)] = recorder.calls
    assert (run_id, name, arguments) == ("run-a", "post_comment", {"body": "hello"})
    assert uuid.UUID(call_id).version == 4


async def test_each_call_gets_a_fresh_call_id(bridge: McpBridge, recorder: Recorder) -> None:
    async with connect(bridge.url, "token-a") as session:
        for _ in range(3):
            await session.call_tool("get_task_context", {})
    assert len({call_id for _, call_id, _, _ in recorder.calls}) == 3


async def test_dispatch_error_flag_reaches_the_model() -> None:
    async def dispatch(
        run_id: str, call_id: str, name: str, arguments: dict[str, Any]
    ) -> ToolCallResult:
        return ToolCallResult({"error": "task is closed"}, is_error=True)

    bridge = McpBridge(TOOLS, dispatch)
    await bridge.start()
    try:
        bridge.open_run("run-a", "token-a")
        async with connect(bridge.url, "token-a") as session:
            result = await session.call_tool("block", {"reason": "stuck"})
        assert result.is_error and payload(result) == {"error": "task is closed"}
    finally:
        await bridge.stop()


async def test_two_runs_are_kept_apart(bridge: McpBridge, recorder: Recorder) -> None:
    bridge.open_run("run-b", "token-b")
    async with connect(bridge.url, "token-a") as a, connect(bridge.url, "token-b") as b:
        ra, rb = await asyncio.gather(
            a.call_tool("report_progress", {"summary": "from a"}),
            b.call_tool("report_progress", {"summary": "from b"}),
        )
    assert payload(ra)["run"] == "run-a" and payload(ra)["arguments"] == {"summary": "from a"}
    assert payload(rb)["run"] == "run-b" and payload(rb)["arguments"] == {"summary": "from b"}
    assert sorted((run, args["summary"]) for run, _, _, args in recorder.calls) == [
        ("run-a", "from a"),
        ("run-b", "from b"),
    ]


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer wrong"},
        {"Authorization": "Bearer"},
        {"Authorization": "Basic token-a"},
        {"Authorization": "token-a"},
    ],
    ids=["missing", "unknown", "empty", "other-scheme", "no-scheme"],
)
async def test_requests_without_a_valid_token_are_401(
    bridge: McpBridge, recorder: Recorder, headers: dict[str, str]
) -> None:
    response = await raw_post(bridge.url, headers)
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"
    assert recorder.calls == []


async def test_valid_token_passes_and_scheme_is_case_insensitive(bridge: McpBridge) -> None:
    response = await raw_post(bridge.url, {"Authorization": "bearer token-a"})
    assert response.status_code == 200


async def test_sdk_client_with_a_wrong_token_cannot_connect(bridge: McpBridge) -> None:
    with pytest.raises(ExceptionGroup) as info:
        async with connect(bridge.url, "wrong"):
            pass
    assert info.group_contains(MCPError)


async def test_closed_run_token_is_refused_at_once(bridge: McpBridge, recorder: Recorder) -> None:
    async with connect(bridge.url, "token-a") as session:
        await session.call_tool("get_task_context", {})
        bridge.close_run("run-a")
        with pytest.raises(MCPError):
            await session.call_tool("get_task_context", {})
    assert len(recorder.calls) == 1
    assert (await raw_post(bridge.url, {"Authorization": "Bearer token-a"})).status_code == 401


async def test_reopening_a_run_replaces_its_token(bridge: McpBridge) -> None:
    bridge.open_run("run-a", "token-a2")
    assert (await raw_post(bridge.url, {"Authorization": "Bearer token-a"})).status_code == 401
    assert (await raw_post(bridge.url, {"Authorization": "Bearer token-a2"})).status_code == 200


def test_a_token_belongs_to_one_run() -> None:
    bridge = McpBridge(TOOLS, Recorder())
    bridge.open_run("run-a", "token-a")
    with pytest.raises(ValueError):
        bridge.open_run("run-b", "token-a")
    with pytest.raises(ValueError):
        bridge.open_run("run-b", "")
    with pytest.raises(ValueError):
        bridge.open_run("run-b", "two words")


@pytest.mark.parametrize(
    ("name", "arguments", "problem"),
    [
        ("post_comment", {}, "'body' is a required property"),
        ("post_comment", {"body": ""}, "should be non-empty"),
        ("post_comment", {"body": 42}, "is not of type 'string'"),
        ("post_comment", {"body": "x", "run_id": "run-b"}, "Additional properties"),
        ("finish", {"outcome": "abandoned", "summary": "s"}, "is not one of"),
        ("report_progress", {"summary": "x" * 2_001}, "is too long"),
    ],
)
async def test_invalid_arguments_never_reach_dispatch(
    bridge: McpBridge, recorder: Recorder, name: str, arguments: dict[str, Any], problem: str
) -> None:
    async with connect(bridge.url, "token-a") as session:
        result = await session.call_tool(name, arguments)
    assert result.is_error
    text = result.content[0].text
    assert text.startswith(f"Invalid arguments for {name}:") and problem in text
    assert len(text) < 400
    assert recorder.calls == []


async def test_unknown_tool_is_an_error_result(bridge: McpBridge, recorder: Recorder) -> None:
    async with connect(bridge.url, "token-a") as session:
        result = await session.call_tool("rm_rf", {})
        assert result.is_error and "Unknown tool 'rm_rf'" in result.content[0].text
        # The connection is still good afterwards.
        assert not (await session.call_tool("get_task_context", {})).is_error
    assert [name for _, _, name, _ in recorder.calls] == ["get_task_context"]


async def test_dispatch_exception_is_an_error_result(caplog: pytest.LogCaptureFixture) -> None:
    async def dispatch(
        run_id: str, call_id: str, name: str, arguments: dict[str, Any]
    ) -> ToolCallResult:
        raise ConnectionError("control plane unreachable")

    bridge = McpBridge(TOOLS, dispatch)
    await bridge.start()
    try:
        bridge.open_run("run-a", "token-a")
        with caplog.at_level(logging.ERROR, logger="paperclip.runner.mcp"):
            async with connect(bridge.url, "token-a") as session:
                result = await session.call_tool("get_task_context", {})
        assert result.is_error and "failed" in result.content[0].text
        assert "control plane unreachable" not in result.content[0].text
        [record] = [
            r
            for r in caplog.records
            if r.name == "paperclip.runner.mcp" and r.levelno >= logging.ERROR
        ]
        assert record.exc_info is not None and isinstance(record.exc_info[1], ConnectionError)
    finally:
        await bridge.stop()


async def test_slow_dispatch_completes_when_released(bridge: McpBridge, recorder: Recorder) -> None:
    recorder.release = asyncio.Event()
    async with connect(bridge.url, "token-a") as session:
        call = asyncio.create_task(
            session.call_tool("finish", {"outcome": "done", "summary": "ok"})
        )
        await recorder.wait_for_calls(1)
        await asyncio.sleep(0.2)
        assert not call.done()
        recorder.release.set()
        result = await asyncio.wait_for(call, 10)
    assert not result.is_error and payload(result)["tool"] == "finish"


async def test_call_in_flight_when_the_run_closes_still_gets_its_answer(
    bridge: McpBridge, recorder: Recorder
) -> None:
    recorder.release = asyncio.Event()
    async with connect(bridge.url, "token-a") as session:
        # The SDK client lists the tools before it accepts a result; let it do so while it may.
        await session.list_tools()
        call = asyncio.create_task(session.call_tool("post_comment", {"body": "last words"}))
        await recorder.wait_for_calls(1)
        bridge.close_run("run-a")
        assert (await raw_post(bridge.url, {"Authorization": "Bearer token-a"})).status_code == 401
        recorder.release.set()
        result = await asyncio.wait_for(call, 10)
    assert payload(result)["arguments"] == {"body": "last words"}


async def test_concurrent_calls_on_one_run_all_complete(
    bridge: McpBridge, recorder: Recorder
) -> None:
    recorder.release = asyncio.Event()
    async with connect(bridge.url, "token-a") as session:
        calls = [
            asyncio.create_task(session.call_tool("report_progress", {"summary": f"step {i}"}))
            for i in range(4)
        ]
        # All four are inside dispatch at the same time before any is answered.
        await recorder.wait_for_calls(4)
        recorder.release.set()
        results = await asyncio.wait_for(asyncio.gather(*calls), 10)
    assert sorted(payload(r)["arguments"]["summary"] for r in results) == [
        f"step {i}" for i in range(4)
    ]


async def test_calls_beyond_the_per_run_limit_are_refused(
    bridge: McpBridge, recorder: Recorder
) -> None:
    bridge.open_run("run-b", "token-b")
    recorder.release = asyncio.Event()
    async with connect(bridge.url, "token-a") as a, connect(bridge.url, "token-b") as b:
        held = [asyncio.create_task(a.call_tool("get_task_context", {})) for _ in range(4)]
        await recorder.wait_for_calls(4)
        refused = await a.call_tool("get_task_context", {})
        assert refused.is_error and "Too many tool calls" in refused.content[0].text
        # The limit is per run: another run is not held up.
        other = asyncio.create_task(b.call_tool("get_task_context", {}))
        await recorder.wait_for_calls(5)
        recorder.release.set()
        await asyncio.wait_for(asyncio.gather(*held, other), 10)
        assert not (await a.call_tool("get_task_context", {})).is_error


async def test_oversized_bodies_are_refused(recorder: Recorder) -> None:
    bridge = McpBridge(TOOLS, recorder, max_body_bytes=4096)
    await bridge.start()
    try:
        bridge.open_run("run-a", "token-a")
        big = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "post_comment", "arguments": {"body": "x" * 10_000}},
            }
        ).encode()
        assert (
            await raw_post(bridge.url, {"Authorization": "Bearer token-a"}, big)
        ).status_code == 413
        assert (await raw_post(bridge.url, {}, big)).status_code == 401
        assert recorder.calls == []
    finally:
        await bridge.stop()


async def test_only_post_on_the_mcp_path_is_served(bridge: McpBridge) -> None:
    auth = {"Authorization": "Bearer token-a"}
    async with httpx2.AsyncClient(timeout=10) as http:
        get = await http.get(bridge.url, headers={**auth, "Accept": "text/event-stream"})
        assert get.status_code == 405 and get.headers["allow"] == "POST"
        assert (await http.get(bridge.url)).status_code == 401
        other = bridge.url.removesuffix("/mcp") + "/other"
        assert (await http.post(other, headers=auth, json=INITIALIZE)).status_code == 404


async def test_modern_protocol_clients_are_served(bridge: McpBridge, recorder: Recorder) -> None:
    async with connect(bridge.url, "token-a", modern=True) as session:
        listed = await session.list_tools()
        result = await session.call_tool("post_comment", {"body": "hi"})
    assert [t.name for t in listed.tools] == [t.name for t in TOOLS]
    assert payload(result)["run"] == "run-a"
    assert [(run, name) for run, _, name, _ in recorder.calls] == [("run-a", "post_comment")]


async def test_stop_is_graceful_bounded_and_idempotent(recorder: Recorder) -> None:
    bridge = McpBridge(TOOLS, recorder, shutdown_grace_seconds=1)
    await bridge.stop()  # before start: nothing to do
    await bridge.start()
    bridge.open_run("run-a", "token-a")
    recorder.release = asyncio.Event()  # never set: the call outlives the grace period
    async with connect(bridge.url, "token-a") as session:
        call = asyncio.create_task(session.call_tool("get_task_context", {}))
        await recorder.wait_for_calls(1)
        await asyncio.wait_for(bridge.stop(), 5)
        await bridge.stop()
        with pytest.raises(Exception):  # noqa: B017 - the transport's error type is the SDK's business
            await asyncio.wait_for(call, 10)
    with pytest.raises(httpx2.ConnectError):
        await raw_post(bridge.url, {"Authorization": "Bearer token-a"})
    with pytest.raises(RuntimeError):
        await bridge.start()
