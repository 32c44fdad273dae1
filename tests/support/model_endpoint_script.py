"""What the scripted model endpoint answers: steps, and their rendering in the two OpenAI wires.

A script is a list of :class:`Step` objects, one per model request of a
conversation. A step holds the outputs of one model response (assistant text,
function calls: a shell command, an MCP tool) or an error, and may be slow
(``delay``) or held at a named gate until the test releases it. Each response
reports its :class:`Usage` (the step's own, or one derived from the step and
its place in the conversation: :func:`usage_of`), so a test can compare what a
CLI recorded with what the endpoint sent.

The same step renders as a Responses API stream (``/v1/responses``, what Codex
and Pi speak) and as a Chat Completions stream (``/v1/chat/completions``, what
OpenCode, Pi and OpenClaw speak), so one script serves every provider.
"""

from __future__ import annotations

import itertools
import json
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

_ids = itertools.count(1)


def _next_id(prefix: str) -> str:
    return f"{prefix}_{next(_ids):06d}"


@dataclass(frozen=True, slots=True)
class Text:
    """An assistant message, streamed word by word."""

    text: str


@dataclass(frozen=True, slots=True)
class FunctionCall:
    """A call of a tool the client offered: ``name`` and JSON ``arguments``.

    ``namespace`` groups tools in the Responses wire (Codex offers MCP tools as
    ``{"type": "namespace", "name": "mcp__<server>"}`` and expects the call to
    carry it with the tool's bare name). The Chat Completions wire has no
    namespaces: there ``name`` is sent as it is.
    """

    name: str
    arguments: Mapping[str, Any]
    namespace: str | None = None
    call_id: str | None = None
    """The model's id for the call (``call_...``); one is made up when None."""


@dataclass(frozen=True, slots=True)
class HttpError:
    """Answer the request with this HTTP status and an OpenAI-style error body."""

    status: int
    message: str
    code: str = "scripted_error"


@dataclass(frozen=True, slots=True)
class Usage:
    """The tokens one response reports, in OpenAI's accounting: cached input tokens are
    part of the input tokens, reasoning tokens part of the output tokens."""

    input_tokens: int
    output_tokens: int
    cached_input_tokens: int = 0
    reasoning_tokens: int = 0

    def __post_init__(self) -> None:
        if not 0 <= self.cached_input_tokens <= self.input_tokens:
            raise ValueError(f"cached input tokens must be within the input tokens: {self}")
        if not 0 <= self.reasoning_tokens <= self.output_tokens:
            raise ValueError(f"reasoning tokens must be within the output tokens: {self}")

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def as_dict(self) -> dict[str, int]:
        """The four counts by the names the control plane's API uses."""
        return {
            "input_tokens": self.input_tokens,
            "cached_input_tokens": self.cached_input_tokens,
            "output_tokens": self.output_tokens,
            "reasoning_tokens": self.reasoning_tokens,
        }

    def responses_wire(self) -> dict[str, Any]:
        """``response.completed``'s ``usage`` (Responses API)."""
        return {
            "input_tokens": self.input_tokens,
            "input_tokens_details": {"cached_tokens": self.cached_input_tokens},
            "output_tokens": self.output_tokens,
            "output_tokens_details": {"reasoning_tokens": self.reasoning_tokens},
            "total_tokens": self.total_tokens,
        }

    def chat_wire(self) -> dict[str, Any]:
        """The usage chunk's ``usage`` (Chat Completions, ``stream_options.include_usage``)."""
        return {
            "prompt_tokens": self.input_tokens,
            "completion_tokens": self.output_tokens,
            "total_tokens": self.total_tokens,
            "prompt_tokens_details": {"cached_tokens": self.cached_input_tokens},
            "completion_tokens_details": {"reasoning_tokens": self.reasoning_tokens},
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Usage:
        known = {"input_tokens", "output_tokens", "cached_input_tokens", "reasoning_tokens"}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown usage key(s) {sorted(unknown)}; known: {sorted(known)}")
        return cls(**{key: int(value) for key, value in data.items()})


def total(usages: Sequence[Usage]) -> dict[str, int]:
    """The sums of a run's usages, by the names the control plane's API uses."""
    sums = dict.fromkeys(Usage(0, 0).as_dict(), 0)
    for usage in usages:
        for key, value in usage.as_dict().items():
            sums[key] += value
    return sums


@dataclass(frozen=True, slots=True)
class Step:
    """One model response."""

    outputs: tuple[Text | FunctionCall, ...] = ()
    error: HttpError | None = None
    delay: float = 0.0
    """Seconds to wait after the stream opened, before the first output (a slow model)."""
    hold: str | None = None
    """A gate name: the stream opens, then waits until the test releases the gate."""
    usage: Usage | None = None
    """The tokens the response reports at its end; None: derived (:func:`usage_of`)."""
    respond: Callable[[Any], Step] | None = None
    """A model that reads its conversation: the response is made, when the request
    arrives, from the request (a ``model_endpoint.Received``), e.g. to follow a
    cursor a tool result gave. See :func:`reply`."""

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Step:
        """A step from its JSON form (see :func:`load_script`)."""
        known = {"text", "shell", "tool", "call", "error", "delay", "hold", "outputs", "usage"}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown step key(s) {sorted(unknown)}; known: {sorted(known)}")
        outputs: list[Text | FunctionCall] = []
        for part in data.get("outputs", [data]):
            outputs += _outputs_of(part)
        error = data.get("error")
        return cls(
            outputs=tuple(outputs),
            error=HttpError(int(error["status"]), str(error["message"])) if error else None,
            delay=float(data.get("delay", 0.0)),
            hold=data.get("hold"),
            usage=Usage.from_json(data["usage"]) if data.get("usage") else None,
        )


def _outputs_of(part: Mapping[str, Any]) -> list[Text | FunctionCall]:
    found: list[Text | FunctionCall] = []
    if "text" in part:
        found.append(Text(str(part["text"])))
    if "shell" in part:
        found.append(codex_shell(str(part["shell"])))
    if "tool" in part:
        tool = part["tool"]
        found.append(mcp_tool(str(tool["name"]), tool.get("arguments") or {}, tool.get("server")))
    if "call" in part:
        call = part["call"]
        found.append(
            FunctionCall(str(call["name"]), call.get("arguments") or {}, call.get("namespace"))
        )
    return found


def say(text: str, **options: Any) -> Step:
    """A step whose response is one assistant message."""
    return Step(outputs=(Text(text),), **options)


def calls(*outputs: Text | FunctionCall, **options: Any) -> Step:
    """A step whose response carries these outputs, in order."""
    return Step(outputs=tuple(outputs), **options)


def reply(respond: Callable[[Any], Step]) -> Step:
    """A step made from the request when it arrives (``respond(received) -> Step``)."""
    return Step(respond=respond)


def mcp_tool(name: str, arguments: Mapping[str, Any], server: str | None = None) -> FunctionCall:
    """Codex's form of an MCP tool call: namespace ``mcp__<server>``, the tool's bare name."""
    return FunctionCall(name, arguments, namespace=f"mcp__{server or 'paperclip'}")


def codex_shell(
    cmd: str, *, escalate: bool = False, justification: str | None = None
) -> FunctionCall:
    """Codex's shell tool (``exec_command``); ``escalate`` asks to run outside the sandbox."""
    arguments: dict[str, Any] = {"cmd": cmd, "yield_time_ms": 10_000}
    if escalate:
        arguments["sandbox_permissions"] = "require_escalated"
        arguments["justification"] = justification or "The command needs to leave the sandbox."
    return FunctionCall("exec_command", arguments)


def load_script(data: Sequence[Mapping[str, Any]]) -> list[Step]:
    """Steps from JSON: ``[{"text": ...} | {"tool": {"name", "arguments", "server"}} |
    {"shell": "cmd"} | {"call": {"name", "arguments", "namespace"}} |
    {"error": {"status", "message"}} | {"outputs": [...]}, ...]``, each with optional
    ``delay`` (seconds), ``hold`` (a gate name) and ``usage`` (``{"input_tokens",
    "output_tokens", "cached_input_tokens", "reasoning_tokens"}``)."""
    return [Step.from_json(item) for item in data]


def usage_of(step: Step, index: int) -> Usage:
    """What the ``index``-th response of a conversation reports: the step's own usage, or
    one derived from the step: the input grows with the conversation (and from the second
    request on, part of it is cached), the output with what the step says; every count
    differs from one step to the next, so a usage counted twice or lost shows."""
    if step.usage is not None:
        return step.usage
    said = sum(
        len(o.text) if isinstance(o, Text) else len(o.name) + len(json.dumps(dict(o.arguments)))
        for o in step.outputs
    )
    return Usage(
        input_tokens=1000 + 150 * index,
        output_tokens=10 * (index + 2) + said % 10,
        cached_input_tokens=100 * index,
        reasoning_tokens=2 + index,
    )


# Rendering: each function yields the SSE ``data`` payloads of one response.


def _chunks(text: str) -> list[str]:
    return re.findall(r"\S+\s*|\s+", text) or [""]


def responses_events(step: Step, model: str, usage: Usage) -> Iterator[dict[str, Any]]:
    """The Responses API stream of a step: created, items added/streamed/done, completed
    (with ``usage``)."""
    response_id = _next_id("resp")
    base = {"id": response_id, "object": "response", "model": model, "created_at": int(time.time())}
    yield {"type": "response.created", "response": {**base, "status": "in_progress", "output": []}}
    done_items: list[dict[str, Any]] = []
    for index, output in enumerate(step.outputs):
        if isinstance(output, Text):
            item = yield from _responses_text(output, index)
        else:
            item = yield from _responses_call(output, index)
        done_items.append(item)
    yield {
        "type": "response.completed",
        "response": {
            **base,
            "status": "completed",
            "output": done_items,
            "usage": usage.responses_wire(),
        },
    }


def _responses_text(output: Text, index: int) -> Iterator[dict[str, Any]]:
    item_id = _next_id("msg")
    item: dict[str, Any] = {
        "type": "message",
        "id": item_id,
        "role": "assistant",
        "status": "in_progress",
        "content": [],
    }
    yield {"type": "response.output_item.added", "output_index": index, "item": item}
    part = {"type": "output_text", "text": "", "annotations": []}
    where = {"item_id": item_id, "output_index": index, "content_index": 0}
    yield {"type": "response.content_part.added", **where, "part": part}
    for chunk in _chunks(output.text):
        yield {"type": "response.output_text.delta", **where, "delta": chunk}
    yield {"type": "response.output_text.done", **where, "text": output.text}
    full = {**part, "text": output.text}
    yield {"type": "response.content_part.done", **where, "part": full}
    done = {**item, "status": "completed", "content": [full]}
    yield {"type": "response.output_item.done", "output_index": index, "item": done}
    return done


def _responses_call(output: FunctionCall, index: int) -> Iterator[dict[str, Any]]:
    item_id = _next_id("fc")
    arguments = json.dumps(dict(output.arguments))
    item: dict[str, Any] = {
        "type": "function_call",
        "id": item_id,
        "call_id": output.call_id or _next_id("call"),
        "name": output.name,
        "arguments": "",
        "status": "in_progress",
    }
    if output.namespace is not None:
        item["namespace"] = output.namespace
    yield {"type": "response.output_item.added", "output_index": index, "item": item}
    where = {"item_id": item_id, "output_index": index}
    yield {"type": "response.function_call_arguments.delta", **where, "delta": arguments}
    yield {"type": "response.function_call_arguments.done", **where, "arguments": arguments}
    done = {**item, "arguments": arguments, "status": "completed"}
    yield {"type": "response.output_item.done", "output_index": index, "item": done}
    return done


def chat_chunks(step: Step, model: str, usage: Usage | None) -> Iterator[dict[str, Any]]:
    """The Chat Completions stream of a step: role, content or tool-call deltas, finish, and
    the usage chunk (when the client asked for it: ``usage`` is not None)."""
    base = {
        "id": _next_id("chatcmpl"),
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    yield chunk({"role": "assistant", "content": ""})
    tool_index = 0
    for output in step.outputs:
        if isinstance(output, Text):
            for piece in _chunks(output.text):
                yield chunk({"content": piece})
            continue
        call = {
            "index": tool_index,
            "id": output.call_id or _next_id("call"),
            "type": "function",
            "function": {"name": output.name, "arguments": json.dumps(dict(output.arguments))},
        }
        yield chunk({"tool_calls": [call]})
        tool_index += 1
    yield chunk({}, "tool_calls" if tool_index else "stop")
    if usage is not None:
        yield {**base, "choices": [], "usage": usage.chat_wire()}


@dataclass(slots=True)
class Conversation:
    """A model's script and how far its conversation has got."""

    steps: list[Step]
    position: int = 0
    exhausted: list[int] = field(default_factory=list)
    """Indices of requests that arrived after the last step (answered with an error)."""

    def next_step(self) -> tuple[int, Step | None]:
        index = self.position
        self.position += 1
        if index < len(self.steps):
            return index, self.steps[index]
        self.exhausted.append(index)
        return index, None
