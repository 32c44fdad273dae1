"""One agent run of the fake Pi: a prompt's steps as Pi 0.73's events, steers and follow-ups.

Pi's loop: ``agent_start``; per model response a "turn" (``turn_start``, the
assistant message, its tool executions and results, ``turn_end``); steering
messages are read after a turn's tool calls, before the next model call; when
the model stops, follow-ups (and steers still queued) start another response;
``agent_end`` when nothing is left. An assistant message starts with no usage
and ends (``message_end``) with its response's: ``usage`` (``input`` without
the cached tokens, which are ``cacheRead``; ``output`` with the reasoning
ones; ``cost`` in dollars, 0 for a model Pi has no price for) and the model's
``responseId``.
"""

from __future__ import annotations

import asyncio
import os
import re
import time
import uuid
from collections.abc import Mapping
from typing import Any, Protocol

from paperclip_provider_kit.mcp_client import call_tool
from paperclip_provider_kit.script import timing_step
from paperclip_provider_kit.usage import ScriptedUsage

MODEL_STEPS = frozenset({"message", "call_tool", "shell", "fail"})
"""Steps that are a model response (a Pi "turn"); the others happen between them."""


def usage_of(usage: ScriptedUsage | None) -> dict[str, Any]:
    """A response's usage as Pi reports it (None: a response that used nothing)."""
    usage = usage or ScriptedUsage(0, 0, 0, 0)
    cost = usage.cost or 0
    return {
        "input": usage.input_tokens - usage.cached_input_tokens,
        "output": usage.output_tokens,
        "cacheRead": usage.cached_input_tokens,
        "cacheWrite": 0,
        "totalTokens": usage.total_tokens,
        "cost": {"input": cost, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": cost},
    }


class Host(Protocol):
    model: str
    tools: Mapping[str, Any] | None

    def send(self, message: Mapping[str, Any]) -> None: ...
    def log(self, entry: Mapping[str, Any]) -> None: ...
    def next_steps(self) -> list[dict[str, Any]]: ...
    def next_response(self) -> int: ...


class StepFailed(Exception):
    """A ``fail`` step, or a wait that ran out: the model call fails."""


def _now() -> int:
    return int(time.time() * 1000)


class AgentRun:
    """One ``prompt`` to its ``agent_end``."""

    def __init__(self, host: Host, prompt: str) -> None:
        self.host = host
        self.prompt = prompt
        self.steering: list[str] = []
        self.follow_ups: list[str] = []
        self.messages: list[dict[str, Any]] = []
        self.task: asyncio.Task[None] | None = None
        self.done = False
        self._calls = 0

    def start(self) -> None:
        self.task = asyncio.ensure_future(self._run())

    def queue(self, kind: str, text: str) -> None:
        (self.steering if kind == "steer" else self.follow_ups).append(text)
        self._queue_update()

    def abort(self) -> None:
        if self.task is not None:
            self.task.cancel()

    # The loop

    async def _run(self) -> None:
        send = self.host.send
        send({"type": "agent_start"})
        send({"type": "turn_start"})
        self._user(self.prompt)
        try:
            steps = self.host.next_steps()
            first = True
            while True:
                for step in steps:
                    if MODEL_STEPS & step.keys():
                        if not first:  # a new model call: queued steers are read first
                            send({"type": "turn_start"})
                            self._read_steers()
                        first = False
                    await self._step(step)
                pending = self.steering + self.follow_ups
                if not pending:
                    break
                # The model stopped with messages queued: it answers them (the script's next list).
                self.follow_ups.clear()
                send({"type": "turn_start"})
                self._read_steers(pending)
                steps = self.host.next_steps()
        except asyncio.CancelledError:
            self._assistant([], "aborted", "Request was aborted")
            send({"type": "turn_end", "message": self.messages[-1], "toolResults": []})
        except StepFailed as exc:
            self._assistant([], "error", str(exc))
            send({"type": "turn_end", "message": self.messages[-1], "toolResults": []})
        except Exception as exc:  # a bug of the fake: fail the call where it is seen
            self.host.log({"type": "fake_error", "error": repr(exc)})
            self._assistant([], "error", f"fake pi bug: {exc!r}")
        finally:
            self.done = True
            send({"type": "agent_end", "messages": self.messages})

    def _read_steers(self, texts: list[str] | None = None) -> None:
        if texts is None:
            texts, self.steering = self.steering, []
        else:
            self.steering = []
        if texts:
            self._queue_update()
        for text in texts:
            self._user(text)

    async def _step(self, step: Mapping[str, Any]) -> None:
        if await timing_step(step, StepFailed):
            return
        if "fail" in step:
            raise StepFailed(str(step["fail"]))
        elif "exit" in step:
            os._exit(int(step["exit"]))
        elif "message" in step:
            text = str(step["message"])
            usage = self._usage(step)
            self._assistant([{"type": "text", "text": text}], "stop", stream=text, usage=usage)
            self.host.send({"type": "turn_end", "message": self.messages[-1], "toolResults": []})
        elif "call_tool" in step:
            call = step["call_tool"]
            name, arguments = f"paperclip_{call.get('name')}", dict(call.get("arguments") or {})
            await self._tool_turn(name, arguments, call, self._usage(step))
        elif "shell" in step:
            await self._tool_turn("bash", {"command": str(step["shell"])}, None, self._usage(step))

    def _usage(self, step: Mapping[str, Any]) -> ScriptedUsage:
        """What the step's model response used: its ``usage`` option, or its place's."""
        return ScriptedUsage.for_response(self.host.next_response(), step.get("usage"))

    async def _tool_turn(
        self,
        name: str,
        arguments: dict[str, Any],
        mcp_call: Mapping[str, Any] | None,
        usage: ScriptedUsage,
    ) -> None:
        self._calls += 1
        call_id = f"call_fake{self._calls:06d}"
        tool_call = {"type": "toolCall", "id": call_id, "name": name, "arguments": arguments}
        self._assistant([tool_call], "toolUse", usage=usage)
        send = self.host.send
        send(
            {
                "type": "tool_execution_start",
                "toolCallId": call_id,
                "toolName": name,
                "args": arguments,
            }
        )
        ok, text = await self._execute(name, arguments, mcp_call)
        result = {"content": [{"type": "text", "text": text}], "details": {}}
        send(
            {
                "type": "tool_execution_end",
                "toolCallId": call_id,
                "toolName": name,
                "result": result,
                "isError": not ok,
            }
        )
        tool_result = {
            "role": "toolResult",
            "toolCallId": call_id,
            "toolName": name,
            "content": result["content"],
            "isError": not ok,
            "timestamp": _now(),
        }
        self._message(tool_result)
        send({"type": "turn_end", "message": self.messages[-2], "toolResults": [tool_result]})

    async def _execute(
        self, name: str, arguments: Mapping[str, Any], mcp_call: Mapping[str, Any] | None
    ) -> tuple[bool, str]:
        if mcp_call is not None:
            if self.host.tools is None:
                return False, f"Tool {name} not found"
            ok, text = await call_tool(self.host.tools, str(mcp_call.get("name")), arguments)
        else:
            process = await asyncio.create_subprocess_shell(
                str(arguments["command"]),
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
            )
            output, _ = await process.communicate()
            ok, text = process.returncode == 0, output.decode(errors="replace")
        self.host.log(
            {
                "type": "tool_result",
                "tool": name,
                "arguments": dict(arguments),
                "ok": ok,
                "text": text,
            }
        )
        return ok, text

    # Messages

    def _user(self, text: str) -> None:
        self._message(
            {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": _now()}
        )

    def _assistant(
        self,
        content: list[dict[str, Any]],
        stop: str,
        error: str | None = None,
        stream: str | None = None,
        usage: ScriptedUsage | None = None,
    ) -> None:
        message: dict[str, Any] = {
            "role": "assistant",
            "content": [],
            "api": "openai-completions",
            "provider": "paperclip",
            "model": self.host.model,
            "usage": usage_of(None),
            "stopReason": stop,
            "timestamp": _now(),
        }
        self.host.send({"type": "message_start", "message": dict(message)})
        if stream is not None:
            for piece in re.findall(r"\S+\s*|\s+", stream) or [""]:
                update = {"type": "text_delta", "contentIndex": 0, "delta": piece}
                self.host.send({"type": "message_update", "assistantMessageEvent": update})
        message["content"] = content
        if error is not None:
            message["errorMessage"] = error
        if usage is not None:
            message["usage"] = usage_of(usage)
            message["responseId"] = f"chatcmpl_fake{uuid.uuid4().hex[:12]}"
            self.host.log(usage.log_entry(responseId=message["responseId"]))
        self.messages.append(message)
        self.host.send({"type": "message_end", "message": message})

    def _message(self, message: dict[str, Any]) -> None:
        self.messages.append(message)
        self.host.send({"type": "message_start", "message": message})
        self.host.send({"type": "message_end", "message": message})

    def _queue_update(self) -> None:
        self.host.send(
            {
                "type": "queue_update",
                "steering": list(self.steering),
                "followUp": list(self.follow_ups),
            }
        )
