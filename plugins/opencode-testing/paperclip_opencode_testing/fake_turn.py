"""One prompt of the fake OpenCode server: its steps, as the events OpenCode 1.18 sends.

Each step is one assistant message (one model response): ``step-start``, its
text or tool part, ``step-finish`` with the response's tokens and cost, then
the message completed with ``finish`` (``stop`` or ``tool-calls``), its
``tokens`` and ``cost``: sent twice, as OpenCode 1.18.33 sends it. OpenCode
counts input tokens without the cached ones (``cache.read``) and output
tokens without the reasoning ones. Tools are called for real: MCP tools
through :mod:`paperclip_provider_kit.mcp_client`, ``bash`` in a shell.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from paperclip_provider_kit.mcp_client import call_tool
from paperclip_provider_kit.script import timing_step
from paperclip_provider_kit.usage import ScriptedUsage

Publish = Callable[[str, Mapping[str, Any]], None]
_ids = itertools.count(1)


def new_id(prefix: str) -> str:
    """An id of OpenCode's form (``msg_…``, ``prt_…``): ascending within the process."""
    return f"{prefix}_{time.time_ns() // 1000:014x}{next(_ids):06d}fake"


def now_ms() -> int:
    return int(time.time() * 1000)


def tokens_of(usage: ScriptedUsage) -> dict[str, Any]:
    """A response's usage as OpenCode counts it: input without the cached tokens, output
    without the reasoning ones."""
    return {
        "total": usage.total_tokens,
        "input": usage.input_tokens - usage.cached_input_tokens,
        "output": usage.output_tokens - usage.reasoning_tokens,
        "reasoning": usage.reasoning_tokens,
        "cache": {"write": 0, "read": usage.cached_input_tokens},
    }


class PromptFailed(Exception):
    """A ``fail`` step, or a wait that ran out: the prompt ends with ``session.error``."""


class PromptRun:
    """Runs one prompt's steps in a session."""

    def __init__(
        self,
        *,
        session_id: str,
        parent_id: str,
        model: tuple[str, str],
        cwd: str,
        mcp: Mapping[str, Mapping[str, Any]],
        publish: Publish,
        log: Callable[[Mapping[str, Any]], None],
        next_response: Callable[[], int],
    ) -> None:
        self.session_id = session_id
        self.parent_id = parent_id
        self.model = model
        self.cwd = cwd
        self.mcp = mcp
        self.publish = publish
        self.log = log
        self.next_response = next_response
        """The index of the session's next model response (its usage is derived from it)."""

    async def run(self, steps: list[dict[str, Any]]) -> None:
        """Every step, in order; raises PromptFailed or CancelledError (an abort)."""
        for index, step in enumerate(steps):
            await self._step(step, last=index == len(steps) - 1)

    async def _step(self, step: Mapping[str, Any], last: bool) -> None:
        if await timing_step(step, PromptFailed):
            return
        if "fail" in step:
            raise PromptFailed(str(step["fail"]))
        elif "exit" in step:
            os._exit(int(step["exit"]))
        elif "message" in step:
            text = str(step["message"])
            await self._message(lambda message: self._text(message, text), "stop", step)
        elif "call_tool" in step:
            call = step["call_tool"]
            await self._message(lambda message: self._mcp(message, call), "tool-calls", step)
        elif "shell" in step:
            command = str(step["shell"])
            await self._message(lambda message: self._bash(message, command), "tool-calls", step)

    async def _message(
        self, body: Callable[[str], Awaitable[None]], finish: str, step: Mapping[str, Any]
    ) -> None:
        message_id = new_id("msg")
        info: dict[str, Any] = {
            "id": message_id,
            "parentID": self.parent_id,
            "role": "assistant",
            "mode": "build",
            "agent": "build",
            "path": {"cwd": self.cwd, "root": "/"},
            "cost": 0,
            "tokens": {"input": 0, "output": 0, "reasoning": 0, "cache": {"read": 0, "write": 0}},
            "modelID": self.model[1],
            "providerID": self.model[0],
            "time": {"created": now_ms()},
            "sessionID": self.session_id,
        }
        self.publish("message.updated", {"sessionID": self.session_id, "info": dict(info)})
        self._part(message_id, {"type": "step-start"})
        await body(message_id)
        usage = ScriptedUsage.for_response(self.next_response(), step.get("usage"))
        tokens, cost = tokens_of(usage), usage.cost or 0  # dollars; 0: no price known
        finished = {"type": "step-finish", "reason": finish, "tokens": tokens, "cost": cost}
        self._part(message_id, finished)
        self.log(usage.log_entry(messageID=message_id))
        info.update(tokens=tokens, cost=cost, finish=finish)
        info["time"] = {**info["time"], "completed": now_ms()}
        for _ in range(2):  # OpenCode sends the completed message twice
            self.publish("message.updated", {"sessionID": self.session_id, "info": info})

    def _part(self, message_id: str, part: Mapping[str, Any], part_id: str | None = None) -> str:
        part_id = part_id or new_id("prt")
        full = {"id": part_id, "messageID": message_id, "sessionID": self.session_id, **part}
        self.publish(
            "message.part.updated", {"sessionID": self.session_id, "part": full, "time": now_ms()}
        )
        return part_id

    async def _text(self, message_id: str, text: str) -> None:
        part_id = self._part(message_id, {"type": "text", "text": "", "time": {"start": now_ms()}})
        for piece in re.findall(r"\S+\s*|\s+", text) or [""]:
            delta = {"messageID": message_id, "partID": part_id, "field": "text", "delta": piece}
            self.publish("message.part.delta", {"sessionID": self.session_id, **delta})
        done = {"type": "text", "text": text, "time": {"start": now_ms(), "end": now_ms()}}
        self._part(message_id, done, part_id)

    async def _mcp(self, message_id: str, call: Mapping[str, Any]) -> None:
        name = str(call.get("name"))
        server = call.get("server") or next(iter(self.mcp), None)
        settings = self.mcp.get(str(server)) if server is not None else None
        arguments = dict(call.get("arguments") or {})

        async def execute() -> tuple[bool, str]:
            if settings is None:
                return False, f"no MCP server {server!r} is configured"
            return await call_tool(settings, name, arguments)

        await self._tool(message_id, f"{server}_{name}", arguments, execute)

    async def _bash(self, message_id: str, command: str) -> None:
        async def execute() -> tuple[bool, str]:
            process = await asyncio.create_subprocess_shell(
                command,
                cwd=_existing_dir(self.cwd),
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
            )
            output, _ = await process.communicate()
            return True, output.decode(errors="replace")

        await self._tool(message_id, "bash", {"command": command, "description": command}, execute)

    async def _tool(
        self,
        message_id: str,
        tool: str,
        arguments: Mapping[str, Any],
        execute: Callable[[], Awaitable[tuple[bool, str]]],
    ) -> None:
        call_id = new_id("call")
        base = {"type": "tool", "tool": tool, "callID": call_id}
        part_id = self._part(
            message_id, {**base, "state": {"status": "pending", "input": {}, "raw": ""}}
        )
        started = now_ms()
        running = {"status": "running", "input": dict(arguments), "time": {"start": started}}
        self._part(message_id, {**base, "state": running}, part_id)
        ok, text = await execute()
        self.log(
            {
                "type": "tool_result",
                "tool": tool,
                "arguments": dict(arguments),
                "ok": ok,
                "text": text,
            }
        )
        times = {"start": started, "end": now_ms()}
        if ok:
            state = {
                "status": "completed",
                "input": dict(arguments),
                "output": text,
                "metadata": {"truncated": False},
                "title": tool,
                "time": times,
            }
        else:
            state = {"status": "error", "input": dict(arguments), "error": text, "time": times}
        self._part(message_id, {**base, "state": state}, part_id)


def _existing_dir(path: str) -> str | None:
    return path if os.path.isdir(path) else None
