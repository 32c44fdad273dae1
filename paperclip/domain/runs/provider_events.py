"""The providers' own protocols in a run's log, read for :mod:`paperclip.domain.runs.transcript`.

Each provider streams its protocol as it is: Codex's app-server notifications,
OpenCode's bus events, Pi's RPC events, a gateway's agent streams. A reader
takes one event and returns the entries it completes, keeping what is not
complete yet (streamed text, a tool call begun) in the transcript's state.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, Protocol


class Fold(Protocol):
    """What a reader keeps between events (``paperclip.domain.runs.transcript.Transcript``)."""

    text: dict[str, str]
    started: dict[str, Mapping[str, Any]]
    ended: set[str]

    def flush(self, event: Mapping[str, Any] | None = None) -> list[Any]: ...

    def duration(self, call_id: str, end: Mapping[str, Any]) -> int | None: ...


Entries = list[Any]
MakeEntry = Callable[..., Entries]
"""``entry(kind, text, **details)``: an entry completed by the event being read."""


def _tool_name(name: Any) -> str:
    """A tool's name without the ``paperclip`` MCP server's prefix some providers give it."""
    return str(name or "?").removeprefix("paperclip__").removeprefix("paperclip_")


def _texts(content: Any) -> str:
    """The text parts of an MCP result or a message's content, joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, Mapping):
        content = content.get("content")
    if not isinstance(content, list):
        return ""
    return "\n".join(
        str(part.get("text", ""))
        for part in content
        if isinstance(part, Mapping) and part.get("type", "text") == "text"
    )


def _error_text(error: Any) -> str | None:
    if not error:
        return None
    if isinstance(error, Mapping):
        data = error.get("data")
        if isinstance(data, Mapping) and data.get("message"):
            return str(data["message"])
        return str(error.get("message") or error.get("name") or json.dumps(error))
    return str(error)


# Codex (app-server notifications)


def _codex_delta(t: Fold, p: Mapping[str, Any], e: Mapping[str, Any], entry: MakeEntry) -> Entries:
    key = str(p.get("itemId"))
    t.text[key] = t.text.get(key, "") + str(p.get("delta") or "")
    return []


def _codex_started(
    t: Fold, p: Mapping[str, Any], e: Mapping[str, Any], entry: MakeEntry
) -> Entries:
    item = p.get("item") or {}
    if item.get("type") in ("mcpToolCall", "commandExecution", "dynamicToolCall"):
        t.started[str(item.get("id"))] = e
    return []


def _codex_completed(
    t: Fold, p: Mapping[str, Any], e: Mapping[str, Any], entry: MakeEntry
) -> Entries:
    item = p.get("item") or {}
    kind, key = item.get("type"), str(item.get("id"))
    streamed = t.text.pop(key, "")
    if kind == "agentMessage":
        text = str(item.get("text") or streamed)
        return entry("message", text) if text.strip() else []
    duration = item.get("durationMs")
    if duration is None and item.get("completedAtMs") and item.get("startedAtMs"):
        duration = item["completedAtMs"] - item["startedAtMs"]
    if duration is None:
        duration = t.duration(key, e)
    t.started.pop(key, None)
    if kind in ("mcpToolCall", "dynamicToolCall"):
        result = item.get("result") or item.get("contentItems")
        return entry(
            "tool",
            str(item.get("tool") or "?"),
            server=item.get("server"),
            arguments=item.get("arguments"),
            result=_texts(result) if result is not None else None,
            error=_error_text(item.get("error")),
            status=item.get("status"),
            duration_ms=duration,
        )
    if kind == "commandExecution":
        command = item.get("command")
        line = " ".join(command) if isinstance(command, list) else str(command or "")
        return entry(
            "command",
            line,
            exit_code=item.get("exitCode"),
            output=item.get("aggregatedOutput"),
            status=item.get("status"),
            duration_ms=duration,
        )
    if kind == "fileChange":
        changes = [
            f"{(c.get('kind') or {}).get('type', 'change')} {c.get('path')}"
            for c in item.get("changes") or []
            if isinstance(c, Mapping)
        ]
        return entry("files", ", ".join(changes) or "files changed", changes=item.get("changes"))
    if kind == "reasoning":
        summary = item.get("summary") or []
        text = " ".join(str(s) for s in summary) if isinstance(summary, list) else str(summary)
        return entry("reasoning", text) if text.strip() else []
    if kind == "userMessage":
        size = len(_texts(item.get("content")))
        return entry("prompt", f"{size} characters sent to the model")
    return []


def _codex_turn(t: Fold, p: Mapping[str, Any], e: Mapping[str, Any], entry: MakeEntry) -> Entries:
    turn = p.get("turn") or {}
    if e.get("type") == "turn/started":
        return entry("turn", f"{e.get('turn', '')} started".strip())
    status = str(turn.get("status") or "ended")
    error = _error_text(turn.get("error"))
    text = f"{e.get('turn', '')} {status}".strip() + (f": {error}" if error else "")
    return [*t.flush(e), *entry("turn", text, status=status, error=error)]


def _codex_error(t: Fold, p: Mapping[str, Any], e: Mapping[str, Any], entry: MakeEntry) -> Entries:
    message = _error_text(p.get("error")) or "an error"
    retry = " (retrying)" if p.get("willRetry") else ""
    return entry("error", message + retry)


# OpenCode (the server's bus events)


def _opencode_delta(
    t: Fold, p: Mapping[str, Any], e: Mapping[str, Any], entry: MakeEntry
) -> Entries:
    if p.get("field", "text") == "text":
        key = str(p.get("partID"))
        t.text[key] = t.text.get(key, "") + str(p.get("delta") or "")
    return []


def _opencode_part(
    t: Fold, p: Mapping[str, Any], e: Mapping[str, Any], entry: MakeEntry
) -> Entries:
    part = p.get("part") or {}
    key = str(part.get("id"))
    if part.get("type") in ("text", "reasoning"):
        if not (part.get("time") or {}).get("end"):
            return []
        text = str(part.get("text") or t.text.get(key, ""))
        t.text.pop(key, None)
        kind = "message" if part["type"] == "text" else "reasoning"
        return entry(kind, text) if text.strip() else []
    if part.get("type") != "tool":
        return []
    state = part.get("state") or {}
    call = str(part.get("callID"))
    if state.get("status") in ("pending", "running"):
        t.started.setdefault(call, e)
        return []
    times = state.get("time") or {}
    duration = times["end"] - times["start"] if times.get("end") and times.get("start") else None
    if duration is None:
        duration = t.duration(call, e)
    t.started.pop(call, None)
    return entry(
        "tool",
        _tool_name(part.get("tool")),
        arguments=state.get("input"),
        result=state.get("output"),
        error=_error_text(state.get("error")),
        status=state.get("status"),
        duration_ms=duration,
    )


def _opencode_idle(
    t: Fold, p: Mapping[str, Any], e: Mapping[str, Any], entry: MakeEntry
) -> Entries:
    # ``session.status`` idle, then ``session.idle``: the turn's end, said twice.
    if e.get("type") == "session.status" and (p.get("status") or {}).get("type") != "idle":
        return []
    turn = str(e.get("turn", ""))
    if turn in t.ended:
        return []
    t.ended.add(turn)
    return [*t.flush(e), *entry("turn", f"{turn} ended".strip())]


def _opencode_error(
    t: Fold, p: Mapping[str, Any], e: Mapping[str, Any], entry: MakeEntry
) -> Entries:
    return entry("error", _error_text(p.get("error")) or "the session failed")


# Pi (RPC events)


def _pi_update(t: Fold, p: Mapping[str, Any], e: Mapping[str, Any], entry: MakeEntry) -> Entries:
    update = p.get("assistantMessageEvent") or {}
    if update.get("type") == "text_delta":
        t.text["pi"] = t.text.get("pi", "") + str(update.get("delta") or "")
    return []


def _pi_message(t: Fold, p: Mapping[str, Any], e: Mapping[str, Any], entry: MakeEntry) -> Entries:
    message = p.get("message") or {}
    if message.get("role") != "assistant":
        return []
    streamed = t.text.pop("pi", "")
    text = _texts(message.get("content")) or streamed
    return entry("message", text) if text.strip() else []


def _pi_tool_start(
    t: Fold, p: Mapping[str, Any], e: Mapping[str, Any], entry: MakeEntry
) -> Entries:
    t.started[str(p.get("toolCallId"))] = e
    return []


def _pi_tool_end(t: Fold, p: Mapping[str, Any], e: Mapping[str, Any], entry: MakeEntry) -> Entries:
    call = str(p.get("toolCallId"))
    start = t.started.get(call) or {}
    arguments = (start.get("payload") or {}).get("args")
    text = _texts(p.get("result"))
    failed = bool(p.get("isError"))
    return entry(
        "tool",
        _tool_name(p.get("toolName")),
        arguments=arguments,
        result=None if failed else text,
        error=(text or "failed") if failed else None,
        duration_ms=t.duration(call, e),
    )


def _pi_end(t: Fold, p: Mapping[str, Any], e: Mapping[str, Any], entry: MakeEntry) -> Entries:
    return [*t.flush(e), *entry("turn", f"{e.get('turn', '')} ended".strip())]


# A gateway (OpenClaw agent streams)


def _gateway_text(t: Fold, p: Mapping[str, Any], e: Mapping[str, Any], entry: MakeEntry) -> Entries:
    data = p.get("data") or {}
    key = f"gateway:{data.get('itemId')}"
    done = [
        message
        for other in [k for k in t.text if k != key]
        for message in entry("message", t.text.pop(other))
        if message.text.strip()
    ]  # another item began: the previous message is complete
    if isinstance(data.get("text"), str):
        t.text[key] = data["text"]  # the text so far, whole
    else:
        t.text[key] = t.text.get(key, "") + str(data.get("delta") or "")
    return done


def _gateway_item(t: Fold, p: Mapping[str, Any], e: Mapping[str, Any], entry: MakeEntry) -> Entries:
    data = p.get("data") or {}
    call = str(data.get("toolCallId") or data.get("itemId"))
    if data.get("phase") != "end":
        t.started[call] = e
        return []
    status = data.get("status")
    failed = status not in (None, "completed", "ok")
    name = _tool_name(data.get("name"))
    return [
        *t.flush(e),
        *entry(
            "tool",
            name,
            arguments=data.get("args") or data.get("arguments"),
            result=_texts(data.get("result")) or None,
            error=(_error_text(data.get("error")) or str(status)) if failed else None,
            duration_ms=t.duration(call, e),
        ),
    ]


def _gateway_lifecycle(
    t: Fold, p: Mapping[str, Any], e: Mapping[str, Any], entry: MakeEntry
) -> Entries:
    data = p.get("data") or {}
    if data.get("phase") != "end":
        return []
    reason = data.get("stopReason") or "ended"
    error = _error_text(data.get("error"))
    text = f"{e.get('turn', '')} {reason}".strip() + (f": {error}" if error else "")
    return [*t.flush(e), *entry("turn", text)]


def _gateway_chat_error(
    t: Fold, p: Mapping[str, Any], e: Mapping[str, Any], entry: MakeEntry
) -> Entries:
    return entry("error", str(p.get("errorMessage") or "the agent run failed"))


Reader = Callable[[Fold, Mapping[str, Any], Mapping[str, Any], MakeEntry], Entries]

PROVIDER_READERS: dict[str, Reader] = {
    "item/agentMessage/delta": _codex_delta,
    "item/started": _codex_started,
    "item/completed": _codex_completed,
    "turn/started": _codex_turn,
    "turn/completed": _codex_turn,
    "error": _codex_error,
    "message.part.delta": _opencode_delta,
    "message.part.updated": _opencode_part,
    "session.status": _opencode_idle,
    "session.idle": _opencode_idle,
    "session.error": _opencode_error,
    "message_update": _pi_update,
    "message_end": _pi_message,
    "tool_execution_start": _pi_tool_start,
    "tool_execution_end": _pi_tool_end,
    "agent_end": _pi_end,
    "agent.assistant": _gateway_text,
    "agent.item": _gateway_item,
    "agent.lifecycle": _gateway_lifecycle,
    "chat.error": _gateway_chat_error,
}
"""Event type -> its reader, for every provider protocol."""
