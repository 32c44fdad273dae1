"""A run's events as people read them: one entry per message, tool call, command, progress
report, turn and end, instead of one per streamed word.

Providers stream their own protocol into the run's log (Codex's app-server
methods, OpenCode's bus events, Pi's RPC events, a gateway's agent streams);
Paperclip adds its own (``progress``, ``run.finished``, steering, workspace).
:class:`Transcript` folds them, in ``seq`` order, into :class:`Entry` values:
streamed text is held until its message is complete, a tool call is shown once
with its arguments, result and duration. An event it does not know is
skipped: the log keeps it, ``GET …/events`` shows it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from paperclip.domain.runs.provider_events import PROVIDER_READERS

SHORT = 160
"""Arguments and results are cut to this many characters on a line of text."""


@dataclass(frozen=True)
class Entry:
    """One thing that happened in a run, as a person reads it."""

    kind: str
    """``message``, ``tool``, ``command``, ``files``, ``reasoning``, ``progress``, ``prompt``,
    ``turn``, ``steer``, ``workspace``, ``error`` or ``end``."""
    seq: int
    """The run event that completed it."""
    at: str
    """When that event was stored (ISO 8601)."""
    text: str
    """What it says: a message's text, a tool's name, a command line, a status."""
    details: dict[str, Any] = field(default_factory=dict)
    """What else is known: ``arguments``, ``result``, ``error``, ``duration_ms``, ``exit_code``…"""

    def as_json(self) -> dict[str, Any]:
        return asdict(self)

    def line(self) -> str:
        """The entry on one line (a message keeps its own lines, indented under the first)."""
        d = self.details
        if self.kind == "message":
            body = self.text.strip().replace("\n", "\n" + " " * 17)  # under the first line
            return f"{self._time()} agent   {body}"
        if self.kind == "tool":
            shown = f"{self.text}({_short(d.get('arguments'))})"
            if d.get("error"):
                shown += f" -> error: {_short(d['error'])}"
            elif d.get("result") is not None:
                shown += f" -> {_short(d['result'])}"
            return f"{self._time()} tool    {shown}{_duration(d)}"
        if self.kind == "command":
            code = d.get("exit_code")
            outcome = f" -> exit {code}" if code is not None else ""
            return f"{self._time()} shell   $ {self.text}{outcome}{_duration(d)}"
        labels = {"turn": "turn", "end": "run", "error": "error", "progress": "progress"}
        return f"{self._time()} {labels.get(self.kind, self.kind):<7} {self.text}"

    def _time(self) -> str:
        try:
            return datetime.fromisoformat(self.at).astimezone().strftime("%H:%M:%S")
        except ValueError:
            return " " * 8


class Transcript:
    """Folds a run's events, fed in ``seq`` order, into entries."""

    def __init__(self) -> None:
        self.text: dict[str, str] = {}
        """Streamed text not yet part of a complete message, by its item or part."""
        self.started: dict[str, Mapping[str, Any]] = {}
        """Tool calls begun and not ended, by call id: their start event."""
        self.ended: set[str] = set()
        """Turns whose end was shown (a provider may say it twice)."""

    def feed(self, event: Mapping[str, Any]) -> list[Entry]:
        """The entries this event completes (often none: a word of a message, a status)."""
        kind = str(event.get("type", ""))
        payload = event.get("payload") or {}
        if not isinstance(payload, Mapping):
            return []
        at = str(event.get("created_at", ""))
        seq = int(event.get("seq", 0))

        def entry(kind: str, text: str, **details: Any) -> list[Entry]:
            return [Entry(kind, seq, at, text, {k: v for k, v in details.items() if v is not None})]

        reader = READERS.get(kind)
        if reader is None:
            return []
        try:
            return list(reader(self, payload, event, entry))
        except (AttributeError, KeyError, TypeError, ValueError):
            return []  # not the shape its protocol has: the log keeps it, the transcript skips it

    def flush(self, event: Mapping[str, Any] | None = None) -> list[Entry]:
        """Streamed text never completed (a turn cut short), as messages."""
        seq = int((event or {}).get("seq", 0))
        at = str((event or {}).get("created_at", ""))
        pending = [Entry("message", seq, at, text) for text in self.text.values() if text.strip()]
        self.text.clear()
        return pending

    def duration(self, call_id: str, end: Mapping[str, Any]) -> int | None:
        """Milliseconds between a call's start event and its end event, by their stored times."""
        start = self.started.pop(call_id, None)
        if start is None:
            return None
        try:
            begun = datetime.fromisoformat(str(start["created_at"]))
            ended = datetime.fromisoformat(str(end["created_at"]))
        except (KeyError, ValueError):
            return None
        return round((ended - begun).total_seconds() * 1000)


# Paperclip's own events


def _progress(t: Transcript, p: Mapping[str, Any], e: Mapping[str, Any], entry: Any) -> list:
    return entry("progress", str(p.get("summary") or "").strip() or "(no summary)")


def _finished(t: Transcript, p: Mapping[str, Any], e: Mapping[str, Any], entry: Any) -> list:
    status = str(p.get("status") or "ended")
    code = p.get("error_code")
    return [*t.flush(e), *entry("end", f"{status} ({code})" if code else status, **p)]


def _steer(t: Transcript, p: Mapping[str, Any], e: Mapping[str, Any], entry: Any) -> list:
    done = "delivered to the turn" if e.get("type") == "steering_acknowledgement" else "refused"
    return entry("steer", f"a comment {done}", message_id=p.get("message_id"))


def _workspace(t: Transcript, p: Mapping[str, Any], e: Mapping[str, Any], entry: Any) -> list:
    files = p.get("files") or []
    state = "uncommitted changes" if p.get("dirty") else "clean"
    text = (
        f"{p.get('branch') or '?'} at {str(p.get('head') or '')[:7]}, "
        f"{p.get('ahead') or 0} ahead, {len(files)} files changed, {state}"
    )
    return entry("workspace", text)


# A line's parts


def _short(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, Mapping) and not value:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= SHORT else text[: SHORT - 1] + "…"


def _duration(details: Mapping[str, Any]) -> str:
    ms = details.get("duration_ms")
    if not isinstance(ms, int | float):
        return ""
    return f"  ({ms:.0f} ms)" if ms < 1000 else f"  ({ms / 1000:.1f} s)"


READERS: dict[str, Any] = {
    "progress": _progress,
    "run.finished": _finished,
    "steering_acknowledgement": _steer,
    "steer_refused": _steer,
    "workspace.ready": _workspace,
    "workspace.state": _workspace,
    **PROVIDER_READERS,
}
"""Event type -> what reads it: Paperclip's own, then each provider protocol's (their type
names do not overlap)."""
