"""Request and response bodies of the API (msgspec structs; Litestar validates and documents them)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Literal

import msgspec
from msgspec import UNSET, UnsetType
from paperclip_hookspecs.providers import ProviderKind

from paperclip.http.fields import (
    Body,
    HeartbeatSeconds,
    IdempotencyKey,
    JsonObject,
    LongText,
    Name,
    ProviderName,
    Role,
    ShortText,
    Title,
)
from paperclip.models import Agent, Comment, Issue, Run, RunEvent, RunTurn, WakeRequest
from paperclip.services.live_state import failure_reason

IssueStatusName = Literal[
    "backlog", "todo", "in_progress", "in_review", "blocked", "done", "cancelled"
]
IssuePriorityName = Literal["low", "medium", "high", "urgent"]
RunStatusName = Literal["queued", "running", "succeeded", "failed", "cancelled"]


# Companies


# Agents


class AgentCreate(msgspec.Struct, forbid_unknown_fields=True):
    name: Name
    provider: ProviderName
    role: Role = ""
    provider_config: JsonObject = msgspec.field(default_factory=dict)
    default_project_id: uuid.UUID | None = None
    """The project of the issues it is given without one."""
    heartbeat_seconds: HeartbeatSeconds | None = None
    """Wake it this often while it is idle, to look at its open issues (null: never)."""


class AgentUpdate(msgspec.Struct, forbid_unknown_fields=True):
    name: Name | UnsetType = UNSET
    role: Role | UnsetType = UNSET
    provider: ProviderName | UnsetType = UNSET
    provider_config: JsonObject | UnsetType = UNSET
    default_project_id: uuid.UUID | UnsetType | None = UNSET
    heartbeat_seconds: HeartbeatSeconds | UnsetType | None = UNSET


class CapabilitiesOut(msgspec.Struct):
    """What the agent's provider can do, as its plugin declares it (``ProviderCapabilities``)."""

    steer: bool
    follow_up: bool
    resume: bool
    mcp_tools: bool
    fresh_retry: bool
    system_prompt: bool


class AgentOut(msgspec.Struct):
    id: uuid.UUID
    company_id: uuid.UUID
    name: str
    role: str
    provider: str
    provider_config: JsonObject
    status: Literal["active", "paused"]
    created_at: datetime
    updated_at: datetime
    default_project_id: uuid.UUID | None
    """The project of an issue created for (or assigned to) it without one."""
    capabilities: CapabilitiesOut | None = None
    """The provider's capabilities; null when no installed plugin provides it."""
    heartbeat_seconds: int | None = None
    heartbeat_due_at: datetime | None = None

    @classmethod
    def of(cls, row: Agent, kinds: Sequence[ProviderKind] = ()) -> AgentOut:
        kind = next((k for k in kinds if k.name == row.provider), None)
        out = msgspec.convert(row, cls, from_attributes=True)
        if kind is None:
            return out
        caps = kind.capabilities
        capabilities = CapabilitiesOut(
            steer=caps.steer,
            follow_up=caps.follow_up,
            resume=caps.resume,
            mcp_tools=caps.mcp_tools,
            fresh_retry=caps.fresh_retry,
            system_prompt=caps.system_prompt,
        )
        return msgspec.structs.replace(out, capabilities=capabilities)


class WakeupCreate(msgspec.Struct, forbid_unknown_fields=True):
    issue_id: uuid.UUID | None = None
    reason: ShortText = ""
    payload: JsonObject = msgspec.field(default_factory=dict)
    idempotency_key: IdempotencyKey | None = None


class WakeRequestOut(msgspec.Struct):
    id: uuid.UUID
    company_id: uuid.UUID
    agent_id: uuid.UUID
    issue_id: uuid.UUID | None
    source: str
    reason: str
    payload: JsonObject
    idempotency_key: str | None
    coalesced_count: int
    status: str
    claimed_at: datetime | None
    run_id: uuid.UUID | None
    created_at: datetime
    deduplicated: bool = False

    @classmethod
    def of(cls, row: WakeRequest, *, deduplicated: bool = False) -> WakeRequestOut:
        out = msgspec.convert(row, cls, from_attributes=True)
        return msgspec.structs.replace(out, deduplicated=deduplicated) if deduplicated else out


# Issues


class IssueCreate(msgspec.Struct, forbid_unknown_fields=True):
    title: Title
    description: LongText = ""
    status: IssueStatusName = "todo"
    priority: IssuePriorityName = "medium"
    assignee_agent_id: uuid.UUID | None = None
    parent_id: uuid.UUID | None = None
    project_id: uuid.UUID | None = None
    """Its project; none given, the assignee's default project (if any)."""


class IssueUpdate(msgspec.Struct, forbid_unknown_fields=True):
    title: Title | UnsetType = UNSET
    description: LongText | UnsetType = UNSET
    status: IssueStatusName | UnsetType = UNSET
    priority: IssuePriorityName | UnsetType = UNSET
    assignee_agent_id: uuid.UUID | UnsetType | None = UNSET
    parent_id: uuid.UUID | UnsetType | None = UNSET
    project_id: uuid.UUID | UnsetType | None = UNSET


class IssueOut(msgspec.Struct):
    id: uuid.UUID
    company_id: uuid.UUID
    identifier: str
    number: int
    title: str
    description: str
    status: IssueStatusName
    priority: IssuePriorityName
    assignee_agent_id: uuid.UUID | None
    parent_id: uuid.UUID | None
    project_id: uuid.UUID | None
    """Its runs work in a worktree of this project's repository (null: a scratch folder)."""
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, row: Issue) -> IssueOut:
        return msgspec.convert(row, cls, from_attributes=True)

    @classmethod
    def of_columns(cls, columns: Mapping[str, Any]) -> IssueOut:
        """From the columns of a plain read (``paperclip.services.issue_reads``)."""
        return cls(**columns)


# Comments


class CommentCreate(msgspec.Struct, forbid_unknown_fields=True):
    body: Body
    idempotency_key: IdempotencyKey | None = None


class CommentUpdate(msgspec.Struct, forbid_unknown_fields=True):
    body: Body


class CommentOut(msgspec.Struct):
    id: uuid.UUID
    company_id: uuid.UUID
    issue_id: uuid.UUID
    author_agent_id: uuid.UUID | None
    author_user_id: str | None
    body: str
    revision: str
    created_by_run_id: uuid.UUID | None
    edited_at: datetime | None
    deleted_at: datetime | None
    created_at: datetime

    @classmethod
    def of(cls, row: Comment) -> CommentOut:
        return msgspec.convert(row, cls, from_attributes=True)

    @classmethod
    def of_columns(cls, columns: Iterable[Any]) -> CommentOut:
        """From a row of a plain read, its columns in the order of these fields.

        ``paperclip.services.issue_reads.COMMENT_COLUMNS`` selects them so (a test
        pins it): a page is 50 of these, and by position is the cheapest way in.
        """
        return cls(*columns)


# Runs


class RunUsageOut(msgspec.Struct):
    """A run's usage, summed over its cost events."""

    input_tokens: int
    cached_input_tokens: int
    output_tokens: int
    reasoning_tokens: int
    cost_micros: int
    """In millionths of the currency: the sum of the events whose cost is known."""
    events: int
    unpriced_events: int


class RunOut(msgspec.Struct):
    id: uuid.UUID
    company_id: uuid.UUID
    agent_id: uuid.UUID
    issue_id: uuid.UUID | None
    status: RunStatusName
    phase: str
    provider: str
    session_ref: str | None
    execution_input_schema: str | None
    execution_input: JsonObject | None
    result: JsonObject | None
    error_code: str | None
    error_message: str | None
    controller_instance: str | None
    controller_epoch: int
    started_at: datetime | None
    finished_at: datetime | None
    created_at: datetime
    status_reason: str | None
    """The committed status decision (``task_completed``, ``finish_not_called``, ...)."""
    answer: str | None
    """The final prose of the run's turn, as the provider reported it."""
    presentation: JsonObject | None
    """The presentation decision, once recorded: ``presentationDecision`` (``answer`` or
    ``none``), ``reason``, and ``comment_id`` of the comment that presented the answer."""
    turn: int
    """Its current turn's number (a run lost with its runner goes on in a next turn)."""
    resume_attempts: int
    """Turns started again after a loss."""

    budget_stop_at: datetime | None = None
    """When a budget of the run ran out mid-turn: its tool calls are refused since."""
    usage: RunUsageOut | None = None
    """What the run used and cost (on a single run's answer)."""
    reason: str | None = None
    """A failed run's reason as one plain sentence (its code is ``error_code``)."""
    dismissed_at: datetime | None = None
    """When a person dismissed the failed run (it left the inbox)."""

    @classmethod
    def of(cls, row: Run, usage: RunUsageOut | None = None) -> RunOut:
        out = msgspec.convert(row, cls, from_attributes=True)
        reason = (
            failure_reason(row.error_code, row.error_message) if row.status == "failed" else None
        )
        return msgspec.structs.replace(out, usage=usage or out.usage, reason=reason)


class RunEventOut(msgspec.Struct):
    seq: int
    type: str
    payload: JsonObject
    turn: int
    """The run turn the event belongs to: the one whose provider emitted it, as its runner
    says (else the run's turn when the event was stored). A lost turn's events stay under
    it, so two ``turn/completed`` of one run under turns 1 and 2 are two turns' ends."""
    source_instance: str
    source_seq: int
    created_at: datetime

    @classmethod
    def of(cls, row: RunEvent) -> RunEventOut:
        return msgspec.convert(row, cls, from_attributes=True)


TurnKindName = Literal["initial", "continuation", "fresh_retry", "report_nudge"]
TurnStatusName = Literal["starting", "running", "completed", "failed", "lost"]


class RunTurnOut(msgspec.Struct):
    number: int
    """1 for the run's first turn, then 2, 3, ..."""
    kind: TurnKindName
    """``initial``; ``continuation``: the same provider session resumed after a loss;
    ``fresh_retry``: a new session with the full brief; ``report_nudge``: the same session
    asked for the report its last turn ended without."""
    status: TurnStatusName
    runner_id: uuid.UUID | None
    session_ref: str | None
    """The provider session it ran in (a Codex thread id), once known."""
    provider_turn_id: str | None
    input_schema: str | None
    """A continuation's input schema (``paperclip.native-continuation.v1``); the first turn's
    input is the run's ``execution_input``."""
    error_code: str | None
    error_message: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None

    @classmethod
    def of(cls, row: RunTurn) -> RunTurnOut:
        return msgspec.convert(row, cls, from_attributes=True)


class RunTurnList(msgspec.Struct):
    items: list[RunTurnOut]


class RunEventPage(msgspec.Struct):
    items: list[RunEventOut]
    next_after_seq: int | None
    """Pass as ``after_seq`` to continue; null when this page reached the end of the log so far."""


# API keys


