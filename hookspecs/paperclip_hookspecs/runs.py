"""What a run did, as hooks may see it: a read-only view (hook API 1.8).

Completion guards (``CompletionCheck.run``) and presentation decisions
(``ConversationTurn.run``) are given a :class:`RunView`: the comments the run
posted, its tool calls with their saved results, and its wake snapshot. The
core reads it in the transaction that asks the hook, so a plugin needs no
database session and never calls the HTTP API back (hooks run while the
control plane waits for their answer: see the package's documentation).

Every value is frozen. JSON values (a call's arguments and result) are frozen
too: objects are read-only mappings, arrays are tuples. The view is bounded:
the newest :data:`MAX_VIEW_COMMENTS` comments and :data:`MAX_VIEW_TOOL_CALLS`
calls, and a result longer than :data:`MAX_VIEW_RESULT_CHARS` characters of
JSON is left out (``result_omitted``); the ``*_omitted`` counts say what is
not shown.

:class:`RunBinding` and :class:`WakeSnapshot` are defined here and are also
importable from :mod:`paperclip_hookspecs.completion`, where they first were.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from types import MappingProxyType
from typing import TypeAlias

MAX_VIEW_COMMENTS = 100
"""At most this many comments of the run are shown: the newest."""
MAX_VIEW_TOOL_CALLS = 200
"""At most this many tool calls of the run are shown: the newest."""
MAX_VIEW_RESULT_CHARS = 65_536
"""A saved result longer than this (as JSON text) is left out of the view."""

JsonValue: TypeAlias = (
    bool | int | float | str | tuple["JsonValue", ...] | Mapping[str, "JsonValue"] | None
)
"""A frozen JSON value: objects are read-only mappings, arrays tuples."""


def frozen_json(value: object) -> JsonValue:
    """``value`` (decoded JSON) frozen: dicts become read-only mappings, lists tuples."""
    if isinstance(value, Mapping):
        return MappingProxyType({str(k): frozen_json(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return tuple(frozen_json(v) for v in value)
    if value is None or isinstance(value, bool | int | float | str):
        return value
    raise TypeError(f"not a JSON value: {type(value).__name__}")


def thawed_json(value: JsonValue) -> object:
    """A frozen JSON value as plain dicts and lists again (a fresh copy, e.g. for ``json.dumps``)."""
    if isinstance(value, Mapping):
        return {k: thawed_json(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [thawed_json(v) for v in value]
    return value


@dataclass(frozen=True, slots=True)
class RunBinding:
    """The run a report or a read receipt belongs to; anything else's is foreign."""

    run_id: str
    company_id: str
    issue_id: str
    agent_id: str


@dataclass(frozen=True, slots=True)
class WakeSnapshot:
    """The exact accepted comments a run was woken for (its current wake comments)."""

    revision: str
    """Revision of the snapshot as a whole: it changes when a comment is added, edited or removed."""
    comment_ids: tuple[str, ...]
    read_required: bool
    """The wake did not carry every comment in full (a truncated wake): a complete
    run-bound read is required before completion."""


@dataclass(frozen=True, slots=True)
class RunComment:
    """A comment the run posted on its task (``post_comment``), as it is now."""

    id: str
    body: str
    """The body as it is now (an edit shows; a deleted comment is not listed)."""
    revision: str
    """sha256 of the trimmed body."""
    created_at: datetime
    edited: bool = False


class ToolCallStatus(StrEnum):
    """Where a call stands in the run's tool journal."""

    PENDING = "pending"
    """Journaled, no result saved yet (a ``finish`` being checked is pending)."""
    SETTLED = "settled"
    """Its result is saved: what the model got."""


@dataclass(frozen=True, slots=True)
class RunToolCall:
    """One tool call of the run, as the journal holds it (core and plugin tools alike)."""

    call_id: str
    tool: str
    arguments: Mapping[str, JsonValue]
    status: ToolCallStatus
    is_error: bool
    """The call was refused or failed: ``result`` is ``{"error": {"code", "message", ...}}``."""
    result: Mapping[str, JsonValue] | None
    """The saved result the model got; None while pending, or when ``result_omitted``."""
    created_at: datetime
    """When it was journaled."""
    settled_at: datetime | None = None
    result_omitted: bool = False
    """The result is longer than :data:`MAX_VIEW_RESULT_CHARS`: it is not in the view."""

    @property
    def error_code(self) -> str | None:
        """The refusal's code (``read_current_wake_comments``, ...), for a call that is an error."""
        error = self.result.get("error") if self.is_error and self.result is not None else None
        code = error.get("code") if isinstance(error, Mapping) else None
        return code if isinstance(code, str) else None


@dataclass(frozen=True, slots=True)
class RunView:
    """What a run did so far, read by the core for the hook that asks (hook API 1.8)."""

    binding: RunBinding
    comments: tuple[RunComment, ...] = ()
    """The comments the run posted, oldest first (at most the newest :data:`MAX_VIEW_COMMENTS`)."""
    tool_calls: tuple[RunToolCall, ...] = ()
    """The run's tool calls in the order they were journaled (at most the newest
    :data:`MAX_VIEW_TOOL_CALLS`)."""
    snapshot: WakeSnapshot | None = None
    """The run's wake snapshot as it is now; None when the run was not woken by comments."""
    comments_omitted: int = 0
    """Older comments of the run that are not in ``comments``."""
    tool_calls_omitted: int = 0
    """Older calls of the run that are not in ``tool_calls``."""

    def calls_of(self, tool: str) -> tuple[RunToolCall, ...]:
        """The calls of one tool, in order."""
        return tuple(call for call in self.tool_calls if call.tool == tool)
