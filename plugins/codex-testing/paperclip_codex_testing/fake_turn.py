"""One turn of the fake app-server: its steps, and the items and requests they produce.

Shapes follow what codex-cli 0.171.0 sends (the conformance tests in the core
tests compare them): items carry ``startedAtMs``/``completedAtMs``, tool calls
are gated by approval, every server request is followed by
``serverRequest/resolved``, and ``turn/completed`` carries the final message.
Shell commands run in the thread's sandbox as far as git goes
(:mod:`paperclip_codex_testing.fake_sandbox`); an escalated one that the client
accepts runs outside it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from paperclip_provider_kit.script import timing_step

from paperclip_codex_testing.fake_sandbox import (
    SANDBOXED_MODES,
    TIMEOUT_SECONDS,
    Shell,
    looks_denied,
)
from paperclip_codex_testing.fake_script import Script
from paperclip_codex_testing.fake_tools import (
    DECLINED_BY_USER,
    REFUSED_UNDER_NEVER,
    McpClient,
    at_path,
    needs_approval,
    structured,
)
from paperclip_codex_testing.fake_usage import ThreadUsage

RESPONSES = frozenset({"message", "call_tool", "shell", "request_approval"})
"""Steps that are one model response each (``page_tool`` is one per page)."""


class Host(Protocol):
    """What a turn needs from the server it runs in."""

    config: dict[str, Any]
    tools: dict[str, dict[str, dict[str, Any]]]
    """Per MCP server: the tools listed at thread start, by name."""
    shell: Shell

    def notify(self, method: str, params: Mapping[str, Any]) -> None: ...

    def mcp(self, server: str, settings: Mapping[str, Any]) -> McpClient:
        """The kept client of one MCP server."""
        ...

    def ask(self, method: str, params: Mapping[str, Any], wait_seconds: float) -> Awaitable[Any]:
        """Send a server request; its answer (raises on error or timeout)."""
        ...

    def log(self, entry: Mapping[str, Any]) -> None: ...

    def save(self, thread: ThreadState) -> None: ...  # its usage too, for a later process

    def item_id(self, prefix: str) -> str: ...


@dataclass(slots=True)
class ThreadState:
    id: str
    cwd: str | None
    model: str | None
    approval_policy: str
    sandbox: str = "read-only"
    """The sandbox mode: ``thread/start``'s, else ``sandbox_mode``'s, else Codex's default."""
    turns: int = 0
    created_at: int = field(default_factory=lambda: int(time.time()))
    script: Script | None = None
    usage: ThreadUsage = field(default_factory=ThreadUsage)


@dataclass(slots=True)
class TurnRun:
    id: str
    thread: ThreadState
    steps: list[dict[str, Any]]
    interrupt: asyncio.Event = field(default_factory=asyncio.Event)
    steers: list[list[dict[str, Any]]] = field(default_factory=list)
    task: asyncio.Task[None] | None = None
    last_message: dict[str, Any] | None = None
    last_result: Any = None
    """The structured result of the turn's latest tool call (what a model reads next)."""


class Failure(Exception):
    """A step ended the turn as failed."""


class Interrupted(Exception):
    """The client interrupted the turn."""


def now_ms() -> int:
    return int(time.time() * 1000)


def turn_shape(
    turn_id: str, status: str, error: Any = None, items: list[Any] | None = None
) -> dict[str, Any]:
    return {
        "id": turn_id,
        "items": items or [],
        "itemsView": "summary" if items is not None else "notLoaded",
        "status": status,
        "error": error,
    }


class TurnRunner:
    """Runs one turn's steps against the host's wire."""

    def __init__(self, host: Host, run: TurnRun, consume_steer: bool) -> None:
        self.host = host
        self.run = run
        self.consume_steer = consume_steer
        self.ids = {"threadId": run.thread.id, "turnId": run.id}
        self.prompt = ""
        """The text of the turn's input, as the model would read it."""

    async def execute(self, user_input: list[Any], done: Callable[[], None]) -> None:
        """Run the turn to its end and send ``turn/completed`` (after ``done()``)."""
        run = self.run
        self.host.notify(
            "thread/status/changed",
            {"threadId": run.thread.id, "status": {"type": "active", "activeFlags": []}},
        )
        self.host.notify(
            "turn/started", {"threadId": run.thread.id, "turn": turn_shape(run.id, "inProgress")}
        )
        self._user_message(user_input)
        self.prompt = "\n".join(
            str(part.get("text", ""))
            for part in user_input
            if isinstance(part, dict) and part.get("type") == "text"
        )
        status, error = "completed", None
        try:
            for step in run.steps:
                if run.interrupt.is_set():
                    raise Interrupted
                self._consume_steers()
                await self._interruptible(self._step(step))
                if RESPONSES & step.keys():
                    self._used(step.get("usage"))
            self._consume_steers()
        except Interrupted:
            status = "interrupted"
        except Failure as exc:
            status, error = "failed", {"message": str(exc), "codexErrorInfo": "other"}
            self.host.notify("error", {"error": error, "willRetry": False, **self.ids})
        except Exception as exc:  # a fake bug still ends the turn, or the client would wait forever
            status, error = "failed", {"message": f"fake app-server error: {exc!r}"}
        done()
        self.host.notify(
            "thread/status/changed", {"threadId": run.thread.id, "status": {"type": "idle"}}
        )
        items = [run.last_message] if run.last_message else []
        self.host.notify(
            "turn/completed",
            {"threadId": run.thread.id, "turn": turn_shape(run.id, status, error, items)},
        )

    async def _interruptible(self, work: Any) -> None:
        step = asyncio.ensure_future(work)
        stop = asyncio.ensure_future(self.run.interrupt.wait())
        try:
            await asyncio.wait({step, stop}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
        if not step.done():
            step.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await step
            raise Interrupted
        step.result()

    def _consume_steers(self) -> None:
        if not self.consume_steer:
            return
        while self.run.steers:
            self._user_message(self.run.steers.pop(0))

    # Steps

    async def _step(self, step: dict[str, Any]) -> None:
        if "message" in step:
            self._message(str(step["message"]))
        elif "call_tool" in step:
            await self._call_tool(step["call_tool"])
        elif "page_tool" in step:
            await self._page_tool(step["page_tool"])
        elif "shell" in step:
            await self._shell(step["shell"])
        elif await timing_step(step, Failure):
            pass
        elif "fail" in step:
            raise Failure(str(step["fail"]))
        elif "expect_prompt" in step:
            # A model that does its work only when its prompt asked for it.
            if str(step["expect_prompt"]) not in self.prompt:
                raise Failure(f"the prompt does not say {step['expect_prompt']!r}")
        elif "request_approval" in step:
            await self._request_approval(str(step["request_approval"]))
        elif "notify" in step:
            self.host.notify(str(step["notify"]["method"]), step["notify"].get("params") or {})
        elif "exit" in step:
            os._exit(int(step["exit"]))

    def _used(self, option: Any) -> None:
        """The model response just done reports its usage (``thread/tokenUsage/updated``)."""
        usage = self.run.thread.usage
        self.host.log({"type": "usage", **self.ids, **usage.add(self.run.id, option)})
        self.host.save(self.run.thread)
        self.host.notify("thread/tokenUsage/updated", usage.notification(self.run.thread.id) or {})

    def _user_message(self, content: list[Any]) -> None:
        content = [
            {**part, "text_elements": []} if part.get("type") == "text" else part
            for part in content
            if isinstance(part, dict)
        ]
        item = {
            "type": "userMessage",
            "id": self.host.item_id("msg"),
            "clientId": None,
            "content": content,
        }
        self._started(item)
        self._completed(item)

    def _message(self, text: str) -> None:
        item = {"type": "agentMessage", "id": self.host.item_id("msg"), "text": "", "phase": None}
        self._started(item)
        for chunk in re.findall(r"\S+\s*|\s+", text):
            self.host.notify(
                "item/agentMessage/delta", {**self.ids, "itemId": item["id"], "delta": chunk}
            )
        self.run.last_message = self._completed({**item, "text": text})

    async def _call_tool(self, call: dict[str, Any]) -> None:
        servers = self.host.config.get("mcp_servers") or {}
        server = call.get("server") or (next(iter(servers)) if len(servers) == 1 else "paperclip")
        name, arguments = call["name"], call.get("arguments") or {}
        listed = self.host.tools.get(server, {}).get(name)
        annotations = (listed or {}).get("annotations") or {}
        item: dict[str, Any] = {
            "type": "mcpToolCall",
            "id": self.host.item_id("call"),
            "server": server,
            "tool": name,
            "status": "inProgress",
            "arguments": arguments,
            "readOnlyHint": annotations.get("readOnlyHint") if listed else None,
            "result": None,
            "error": None,
            "durationMs": None,
        }
        self._started(item)
        started = time.monotonic()
        settings = servers.get(server)
        outcome: dict[str, Any] | str
        if not isinstance(settings, dict):
            ok, outcome = False, f"unknown MCP server {server!r}"
        else:
            refusal = await self._tool_refusal(server, settings, name, arguments, listed)
            if refusal is not None:
                ok, outcome = False, refusal
            else:
                ok, outcome = await self.host.mcp(server, settings).call(name, arguments)
        record: dict[str, Any] = {
            "type": "tool_result",
            "server": server,
            "name": name,
            "arguments": arguments,
            "ok": ok,
        }
        if ok:
            assert isinstance(outcome, dict)
            result = {
                "content": outcome.get("content", []),
                "structuredContent": outcome.get("structuredContent"),
                "_meta": None,
            }
            failed = bool(outcome.get("isError"))
            item |= {"status": "failed" if failed else "completed", "result": result}
            # The tool answered (ok), with a refusal when isError: what the model reads.
            record |= {"isError": failed, "result": result}
            self.run.last_result = structured(outcome)
        else:
            item |= {"status": "failed", "error": {"message": str(outcome)}}
            record["error"] = str(outcome)
            self.run.last_result = None
        seconds = time.monotonic() - started
        record["duration_ms"] = round(seconds * 1000, 3)  # what a load benchmark reads
        self.host.log(record)
        self._completed(item | {"durationMs": int(seconds * 1000)})

    async def _page_tool(self, page: dict[str, Any]) -> None:
        """Call a cursor-paged tool page by page, as a model following ``next_cursor`` does."""
        argument = str(page.get("cursor_argument", "cursor"))
        next_field = str(page.get("next_cursor", "next_cursor"))
        start = page.get("start_cursor")
        cursor = at_path(self.run.last_result, str(start)) if start else None
        limit = int(page.get("max_pages", 100))
        for _ in range(limit):
            arguments = dict(page.get("arguments") or {})
            if cursor is not None:
                arguments[argument] = cursor
            await self._call_tool({**page, "arguments": arguments})
            self._used(page.get("usage"))
            cursor = at_path(self.run.last_result, next_field)
            if cursor is None:
                return
        raise Failure(f"page_tool {page['name']} had more than {limit} pages")

    async def _tool_refusal(
        self,
        server: str,
        settings: Mapping[str, Any],
        name: str,
        arguments: Mapping[str, Any],
        listed: Mapping[str, Any] | None,
    ) -> str | None:
        """Why Codex would not call this tool now, or None (asking the client if it must)."""
        mode = str(settings.get("default_tools_approval_mode", "auto"))
        if not needs_approval(mode, (listed or {}).get("annotations")):
            return None
        if self.run.thread.approval_policy == "never":
            self.host.log({"type": "approval", "method": "mcp_tool_call", "decision": "refused"})
            return REFUSED_UNDER_NEVER
        params = {
            **self.ids,
            "serverName": server,
            "environmentId": None,
            "mode": "form",
            "_meta": {
                "codex_approval_kind": "mcp_tool_call",
                "persist": ["session", "always"],
                "tool_name": name,
                "tool_title": (listed or {}).get("title"),
                "tool_params": dict(arguments),
            },
            "message": f'Allow the {server} MCP server to run tool "{name}"?',
            "requestedSchema": {"type": "object", "properties": {}},
        }
        answer = await self._ask("mcpServer/elicitation/request", params)
        action = answer.get("action") if isinstance(answer, dict) else None
        return None if action == "accept" else DECLINED_BY_USER

    async def _shell(self, shell: dict[str, Any]) -> None:
        command = str(shell["command"])
        if not shell.get("escalate"):
            sandboxed = self.run.thread.sandbox in SANDBOXED_MODES
            await self._execute(self._command_item(command), command, sandboxed=sandboxed)
            return
        if self.run.thread.approval_policy == "never":
            # Codex refuses it to the model at once: no item, no request.
            self.host.log({"type": "approval", "method": "escalation", "decision": "refused"})
            return
        item, accepted = await self._approval("commandExecution", command)
        if accepted:  # Codex runs it outside the sandbox, as the item it already began
            await self._execute(item, command, sandboxed=False, begun=True)
        else:
            self._completed(item | {"status": "declined"})

    async def _execute(
        self, item: dict[str, Any], command: str, *, sandboxed: bool, begun: bool = False
    ) -> None:
        """Run a shell command and report it as Codex does: its item begins when the
        command ends or outlives the early-exit window, and a sandbox denial that ended
        within it reaches the model with no item at all."""
        shown = begun

        def begin(pid: int) -> None:
            nonlocal shown
            if not shown:
                shown = True
                self._started(item | {"processId": str(pid)})

        item.setdefault("startedAtMs", now_ms())
        cwd = _existing(self.run.thread.cwd)
        try:
            done = await self.host.shell.run(command, cwd, sandboxed=sandboxed, alive=begin)
        except TimeoutError:
            raise Failure(f"shell command timed out after {TIMEOUT_SECONDS:g}s") from None
        denied = sandboxed and looks_denied(done.exit_code, done.output)
        self.host.log(done.log_entry(command, sandboxed=sandboxed, denied=denied))
        if denied and not shown:
            return
        begin(done.pid)
        self._completed(item | done.completion())

    def _command_item(self, command: str, source: str = "unifiedExecStartup") -> dict[str, Any]:
        return {
            "type": "commandExecution",
            "id": self.host.item_id("call"),
            "command": f"/bin/bash -lc {command!r}",
            "cwd": self.run.thread.cwd,
            "processId": None,
            "source": source,
            "status": "inProgress",
            "commandActions": [{"type": "unknown", "command": command}],
            "aggregatedOutput": None,
            "exitCode": None,
            "durationMs": None,
        }

    async def _request_approval(self, kind: str, command: str = "echo fake") -> None:
        item, accepted = await self._approval(kind, command)
        self._completed(item | {"status": "completed" if accepted else "declined"})

    async def _approval(self, kind: str, command: str) -> tuple[dict[str, Any], bool]:
        """Begin the item, ask the client; (the item, whether it accepted)."""
        if kind == "fileChange":
            item: dict[str, Any] = {
                "type": "fileChange",
                "id": self.host.item_id("call"),
                "changes": [],
                "status": "inProgress",
            }
            method = "item/fileChange/requestApproval"
            params: dict[str, Any] = {**self.ids, "itemId": item["id"], "reason": "fake"}
        else:
            item = self._command_item(command, source="agent")
            method = "item/commandExecution/requestApproval"
            params = {
                "kind": "command",
                **self.ids,
                "itemId": item["id"],
                "startedAtMs": now_ms(),
                "environmentId": "local",
                "reason": "The command needs to leave the sandbox.",
                "command": item["command"],
                "cwd": self.run.thread.cwd,
                "commandActions": item["commandActions"],
                "availableDecisions": ["accept", "acceptForSession", "decline", "cancel"],
            }
        self._started(item)
        answer = await self._ask(method, params)
        decision = answer.get("decision") if isinstance(answer, dict) else None
        return item, decision in ("accept", "acceptForSession")

    async def _ask(self, method: str, params: Mapping[str, Any]) -> Any:
        try:
            answer = await self.host.ask(method, params, 30)
        except (TimeoutError, RuntimeError) as exc:
            answer = {"error": str(exc)}
        decision = (
            answer.get("decision", answer.get("action")) if isinstance(answer, dict) else None
        )
        self.host.log({"type": "approval", "method": method, "decision": decision})
        return answer

    def _started(self, item: dict[str, Any]) -> None:
        item.setdefault("startedAtMs", now_ms())
        self.host.notify("item/started", {"item": dict(item, completedAtMs=None), **self.ids})

    def _completed(self, item: dict[str, Any]) -> dict[str, Any]:
        done = {**item, "completedAtMs": now_ms()}
        self.host.notify(
            "item/completed", {"item": done, **self.ids, "completedAtMs": done["completedAtMs"]}
        )
        return done


def _existing(path: str | None) -> str | None:
    return path if path and os.path.isdir(path) else None
