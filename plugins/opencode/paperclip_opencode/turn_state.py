"""Reading one session's OpenCode events: which are ours, when the turn is over, and its answer.

OpenCode (seen with 1.18.33) reports a prompt's progress as events of
``GET /event``: ``message.updated`` (a user message, then each assistant
message; ``info.time.completed`` and ``info.finish`` when it is done,
``info.error`` when it failed), ``message.part.updated`` / ``message.part.delta``
(text, tool and step parts), ``session.status`` (``busy`` / ``idle``),
``session.idle`` and ``session.error``. A prompt sent while the session is
busy is queued and runs after the current one, before the session goes idle.
So the turn is over at ``session.idle`` once every user message we sent has a
completed assistant answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from paperclip_provider_kit.values import dig

Outcome = Literal["completed", "failed", "interrupted"]
ABORTED = "MessageAbortedError"


def session_of(event: Mapping[str, Any]) -> str | None:
    """The session an event is about, if any."""
    props = event.get("properties")
    if not isinstance(props, Mapping):
        return None
    for holder in (props, props.get("info"), props.get("part")):
        if isinstance(holder, Mapping) and isinstance(holder.get("sessionID"), str):
            return str(holder["sessionID"])
    return None


@dataclass
class TurnTracker:
    """The state of one turn of one session, fed with that session's events in order."""

    session_id: str
    since_ms: float = 0.0
    """User messages created before this (milliseconds since the epoch) belong to earlier turns."""
    prompts_sent: int = 1
    """User messages sent in this turn: the prompt, and each queued follow-up."""
    users: list[str] = field(default_factory=list)
    answered: set[str] = field(default_factory=set)
    texts: dict[str, dict[str, str]] = field(default_factory=dict)
    """Assistant message id -> text part id -> text."""
    last_assistant: str | None = None
    error: str | None = None
    aborted: bool = False

    def feed(self, event: Mapping[str, Any]) -> Outcome | None:
        """Take one event of this session; the turn's outcome once it is over."""
        kind = event.get("type")
        props = event.get("properties")
        props = props if isinstance(props, Mapping) else {}
        if kind == "message.updated":
            self._message(props.get("info"))
        elif kind == "message.part.updated":
            self._part(props.get("part"))
        elif kind == "message.part.delta":
            self._delta(props)
        elif kind == "session.error":
            self._session_error(props.get("error"))
        elif kind == "session.idle" or (
            kind == "session.status" and dig(props, "status", "type") == "idle"
        ):
            return self._at_idle()
        return None

    @property
    def answer(self) -> str | None:
        """The final prose: the text of the last assistant message that has any."""
        for message_id in reversed(list(self.texts)):
            text = "".join(self.texts[message_id].values()).strip()
            if text:
                return text
        return None

    def _at_idle(self) -> Outcome | None:
        if self.aborted:
            return "interrupted"
        if self.error is not None:
            return "failed"
        if len(self.users) < self.prompts_sent or not set(self.users) <= self.answered:
            return None  # a queued follow-up is still to run (or an idle from before it)
        return "completed"

    def _message(self, info: Any) -> None:
        if not isinstance(info, Mapping) or not isinstance(info.get("id"), str):
            return
        message_id = str(info["id"])
        if info.get("role") == "user":
            created = dig(info, "time", "created")
            if isinstance(created, (int, float)) and created < self.since_ms:
                return
            if message_id not in self.users:
                self.users.append(message_id)
            return
        if info.get("role") != "assistant":
            return
        self.last_assistant = message_id
        self.texts.setdefault(message_id, {})
        error = info.get("error")
        if isinstance(error, Mapping):
            self._session_error(error)
        if isinstance(dig(info, "time", "completed"), (int, float)):
            parent = info.get("parentID")
            if isinstance(parent, str):
                self.answered.add(parent)

    def _part(self, part: Any) -> None:
        if not isinstance(part, Mapping) or part.get("type") != "text":
            return
        message_id, part_id = part.get("messageID"), part.get("id")
        if isinstance(message_id, str) and isinstance(part_id, str) and message_id in self.texts:
            self.texts[message_id][part_id] = str(part.get("text") or "")

    def _delta(self, props: Mapping[str, Any]) -> None:
        message_id, part_id = props.get("messageID"), props.get("partID")
        if props.get("field") != "text" or not isinstance(message_id, str):
            return
        if isinstance(part_id, str) and message_id in self.texts:
            parts = self.texts[message_id]
            parts[part_id] = parts.get(part_id, "") + str(props.get("delta") or "")

    def _session_error(self, error: Any) -> None:
        if not isinstance(error, Mapping):
            return
        name = str(error.get("name") or "error")
        if name == ABORTED:
            self.aborted = True
            return
        message = dig(error, "data", "message") or error.get("message") or name
        self.error = f"{name}: {message}"
