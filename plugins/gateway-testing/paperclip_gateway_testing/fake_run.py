"""One agent run of the fake gateway: its script's steps as OpenClaw 2026.9's ``agent`` events.

Steps (one key each), read from ``DIR/<agent id>.json`` (a list, or
``{"turns": [[...], ...]}``: the session's n-th run takes ``turns[n]``):

- ``{"message": "text"}``: assistant text (the run's reply when last).
- ``{"call_tool": {"name": "finish", "arguments": {...}}}``: a call of the run's
  tool through the gateway's MCP server ``paperclip`` (``paperclip__<name>``).
- ``{"sleep": s}``, ``{"touch_file": path}``, ``{"wait_for_file": path, "timeout": s}``.
- ``{"fail": "reason"}``: the run ends with status ``error``.
- ``{"drop_connection": true}``: close the WebSocket of the client that started the run
  (the run goes on, as a gateway's does).
- ``{"exit": status}``: the gateway process exits at once.
- ``{"session_taken": true}`` (a turn's first step): the request is accepted, then refused
  as OpenClaw refuses one whose session other work took as it started (its restart
  recovery): ``UNAVAILABLE``, ``SESSION_WORK_START_CHANGED``; nothing runs, and the key
  keeps that refusal. The session's next request takes the next turn.

Each model step (``message``, ``call_tool``) is one model call: ``lifecycle``
``model``, then ``usage`` (the run's output tokens so far) before its tool item,
or after its text. The run's final answer carries the run's usage, summed, in
``result.meta.agentMeta.usage`` (``input`` without the cached tokens, which
are ``cacheRead``; ``reasoningTokens`` when there are any; ``cost.total`` in
dollars, 0 for a model without a price), and the last call's in
``lastCallUsage``, as OpenClaw 2026.9.6 answers; ``agent.wait`` answers
without it. A step's ``usage`` option sets its call's numbers
(:mod:`paperclip_provider_kit.usage`); else they are those of its place among
the gateway's calls.
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from paperclip_provider_kit.script import timing_step
from paperclip_provider_kit.usage import ScriptedUsage, UsageError

Emit = Callable[[str, Mapping[str, Any]], None]
CallTool = Callable[[str, Mapping[str, Any]], Awaitable[tuple[bool, str]]]


class RunFailed(Exception):
    pass


def _now() -> int:
    return int(time.time() * 1000)


class AgentRun:
    """One ``agent`` request's run: its events, its outcome."""

    def __init__(
        self,
        *,
        run_id: str,
        session_key: str,
        steps: list[dict[str, Any]],
        emit: Emit,
        call_tool: CallTool,
        drop: Callable[[], Awaitable[None]],
        model: str = "fake",
        next_response: Callable[[], int] = lambda: 0,
        log: Callable[[Mapping[str, Any]], None] = lambda entry: None,
    ) -> None:
        self.run_id = run_id
        self.session_key = session_key
        self.steps = steps
        self._emit = emit
        self._call_tool = call_tool
        self._drop = drop
        self._seq = 0
        self.session_id = str(uuid.uuid4())
        self.reply: str | None = None
        self.status = "running"
        self.error: str | None = None
        self.aborted = False
        self.tools: list[str] = []
        self.done = asyncio.Event()
        self.model = model
        self._next_response = next_response
        self._log = log
        self.calls: list[ScriptedUsage] = []
        """Each model call's usage, in order."""

    async def execute(self) -> None:
        started = _now()
        self._agent("lifecycle", {"phase": "start", "startedAt": started}, session=True)
        try:
            for step in self.steps:
                await self._step(step)
            self.status = "ok"
        except asyncio.CancelledError:
            self.aborted, self.status = True, "ok"
        except RunFailed as exc:
            self.status, self.error = "error", str(exc)
        end = {
            "phase": "end",
            "startedAt": started,
            "endedAt": _now(),
            "aborted": self.aborted,
            "stopReason": "stop" if self.status == "ok" else "error",
            "terminalReceipt": {"runId": self.run_id, "successfulToolNames": self.tools},
        }
        self._agent("lifecycle", end, session=True)
        if self.reply is not None:
            message = {"role": "assistant", "content": [{"type": "text", "text": self.reply}]}
            chat = {"runId": self.run_id, "sessionKey": self.session_key, "agentId": "main"}
            self._emit(
                "chat",
                {
                    **chat,
                    "seq": self._seq,
                    "state": "final",
                    "stopReason": "stop",
                    "message": message,
                },
            )
        self.done.set()

    def final(self, waited: bool = False) -> dict[str, Any]:
        """The ``agent`` request's final answer; ``agent.wait``'s (``waited``) has no usage."""
        payloads = [{"text": self.reply, "mediaUrl": None}] if self.reply else []
        meta: dict[str, Any] = {"aborted": self.aborted}
        if self.calls and not waited:
            meta["agentMeta"] = {
                "sessionId": self.session_id,
                "provider": "fake",
                "model": self.model,
                "usage": _openclaw_usage(self.calls),
                "lastCallUsage": _openclaw_usage(self.calls[-1:]),
            }
        answer: dict[str, Any] = {
            "runId": self.run_id,
            "status": self.status,
            "summary": "completed" if self.status == "ok" else "failed",
            "result": {"payloads": payloads, "meta": meta},
        }
        if self.error is not None:
            answer["error"] = {"message": self.error}
        return answer

    async def _step(self, step: Mapping[str, Any]) -> None:
        if await timing_step(step, RunFailed):
            return
        if "fail" in step:
            raise RunFailed(str(step["fail"]))
        elif "drop_connection" in step:
            await self._drop()
        elif "exit" in step:
            os._exit(int(step["exit"]))
        elif "message" in step:
            self._model(step)
            text = str(step["message"])
            item = f"{self.session_id}:{self._seq}"
            self._agent("assistant", {"text": text, "delta": text, "itemId": item})
            self._output()
            self.reply = text
        elif "call_tool" in step:
            self._model(step)
            self._output()
            call = step["call_tool"]
            name = f"paperclip__{call.get('name')}"
            call_id = f"call_fake{self._seq:06d}"
            tool = {
                "itemId": f"tool:{call_id}",
                "toolCallId": call_id,
                "name": name,
                "kind": "tool",
            }
            self._agent(
                "item", {**tool, "phase": "start", "status": "running", "startedAt": _now()}
            )
            ok, _ = await self._call_tool(str(call.get("name")), dict(call.get("arguments") or {}))
            if ok:
                self.tools.append(name)
            status = "completed" if ok else "failed"
            self._agent("item", {**tool, "phase": "end", "status": status, "endedAt": _now()})

    def _model(self, step: Mapping[str, Any]) -> None:
        """A model call: its usage counted, its ``lifecycle`` ``model`` event."""
        try:
            usage = ScriptedUsage.for_response(self._next_response(), step.get("usage"))
        except UsageError as exc:
            raise RunFailed(f"fake: {exc}") from None
        self.calls.append(usage)
        self._log(usage.log_entry(runId=self.run_id))
        model = {"phase": "model", "provider": "fake", "model": self.model}
        self._agent("lifecycle", model, session=True)

    def _output(self) -> None:
        """OpenClaw's ``usage`` event: the run's output tokens so far."""
        self._agent("usage", {"outputTokens": sum(u.output_tokens for u in self.calls)})

    def _agent(self, stream: str, data: Mapping[str, Any], session: bool = False) -> None:
        self._seq += 1
        payload: dict[str, Any] = {
            "runId": self.run_id,
            "stream": stream,
            "data": dict(data),
            "sessionKey": self.session_key,
            "agentId": "main",
            "seq": self._seq,
            "ts": _now(),
        }
        if session:
            payload["sessionId"] = self.session_id
        self._emit("agent", payload)


def _openclaw_usage(calls: list[ScriptedUsage]) -> dict[str, Any]:
    """Model calls' usage, summed, as OpenClaw reports it."""
    cached = sum(u.cached_input_tokens for u in calls)
    usage: dict[str, Any] = {
        "input": sum(u.input_tokens for u in calls) - cached,
        "output": sum(u.output_tokens for u in calls),
        "cacheRead": cached,
        "cacheWrite": 0,
    }
    reasoning = sum(u.reasoning_tokens for u in calls)
    if reasoning:
        usage["reasoningTokens"] = reasoning
    usage["total"] = sum(u.total_tokens for u in calls)
    usage["cost"] = {"total": sum(u.cost for u in calls) or 0}
    return usage
