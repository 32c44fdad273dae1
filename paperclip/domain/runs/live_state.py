"""What an issue is doing now, in words: its live state, read with the issue list itself.

Each issue of a list page carries its latest run (a lateral join), its newest
pending interaction and its newest active hold (each a lateral ``LIMIT 1``: an
EXISTS that also says what it found), all in the list's own statement. From
those, one state, in this order:

- ``running``: its latest run is queued or running;
- ``waiting``: a question, confirmation, approval, stage or blocker waits on a
  person;
- ``held``: an active hold keeps it from running;
- ``failed``: its latest run failed, nobody dismissed it, and the issue is open
  (not done, cancelled or parked in the backlog: the inbox's rule);
- ``idle``: none of these.

A failure reads as one plain sentence (:func:`failure_reason`); its code stays
beside it for scripts and for the reader who wants it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import Select, true
from sqlalchemy import select as sa_select

from paperclip.models import (
    HoldStatus,
    Interaction,
    InteractionStatus,
    Issue,
    IssueStatus,
    Run,
    RunStatus,
    TaskHold,
)

LiveStateName = Literal["running", "waiting", "held", "failed", "idle"]

PARKED = (IssueStatus.DONE, IssueStatus.CANCELLED, IssueStatus.BACKLOG)
"""An issue in one of these no longer waits on its failed run (as in the inbox)."""

FAILURES = {
    "provider_turn_failed": "The model's provider ended the turn with an error",
    "finish_not_called": "The agent stopped without reporting its work",
    "budget_exceeded": "A budget ran out during the run",
    "runner_unavailable": "No runner could take the run",
    "runner_gone": "Its runner went away during the run",
    "runner_restarted": "Its runner restarted during the run",
    "provider_exited": "The agent's program stopped during the run",
    "provider_spawn_failed": "The agent's program could not be started on the runner",
    "provider_not_installed": "The agent's provider is not installed",
    "launch_not_allowed": "No runner offers the agent's launch profile",
    "model_profile_not_allowed": "No runner allows the agent's model settings",
    "resume_failed": "The run could not go on after its runner came back",
    "turn_lost": "The run's turn was lost",
    "run_retries_exhausted": "The run was started again too many times",
    "workspace_not_allowed": "The runner may not use the project's repository",
    "workspace_unavailable": "The issue's worktree could not be made",
    "workspace_busy": "The issue's worktree was busy",
    "rate_limited": "The model's rate limit was reached",
    "plugin_failed": "A plugin failed during the run",
}
"""Each run error code as people say it; a code not listed reads from its message."""

ASKS = {
    "question": "The agent asks",
    "confirmation": "The agent asks to confirm",
    "approval": "Waiting for approval",
    "execution_stage": "A stage waits to be resolved",
    "dependency": "Blocked by",
}

REASON_MAX = 240


def _sentence(text: str) -> str:
    """``text`` as one sentence: its first line, bounded, ending with a full stop."""
    line = next((part.strip() for part in text.splitlines() if part.strip()), "")
    if len(line) > REASON_MAX:
        line = line[: REASON_MAX - 1].rstrip() + "…"
    if line and line[-1] not in ".!?…":
        line += "."
    return line


def failure_reason(code: str | None, message: str | None) -> str:
    """A failed run's reason as one plain sentence: what its code means, and what its
    message adds."""
    base = FAILURES.get(code or "")
    # A provider's own wording often wraps the message: "turn_failed: the model is down (other)".
    detail = re.sub(r"^[a-z][a-z0-9_]*: ", "", (message or "").strip())
    detail = re.sub(r" \([a-z][a-z0-9_]*\)$", "", detail)
    if base and detail and code not in ("budget_exceeded", "finish_not_called"):
        return _sentence(f"{base}: {detail}")
    if base:
        return _sentence(base)
    if detail:
        return _sentence(detail[0].upper() + detail[1:])
    return _sentence(f"The run failed ({code})" if code else "The run failed")


@dataclass(frozen=True, slots=True)
class LiveState:
    """An issue's state now: which one, since when, its run, why, and the code behind it."""

    state: LiveStateName
    since: datetime | None
    run_id: Any
    reason: str
    code: str | None


def with_live_state(stmt: Select[Any]) -> Select[Any]:
    """``stmt`` (a select of ``Issue``) with the columns its live state is made of."""
    latest = (
        sa_select(
            Run.id.label("run_id"),
            Run.status.label("run_status"),
            Run.phase.label("run_phase"),
            Run.created_at.label("run_created_at"),
            Run.started_at.label("run_started_at"),
            Run.finished_at.label("run_finished_at"),
            Run.error_code.label("run_error_code"),
            Run.error_message.label("run_error_message"),
            Run.dismissed_at.label("run_dismissed_at"),
        )
        .where(Run.issue_id == Issue.id)
        .order_by(Run.created_at.desc(), Run.id.desc())
        .limit(1)
        .lateral("latest_run")
    )
    waiting = (
        sa_select(
            Interaction.kind.label("ask_kind"),
            Interaction.title.label("ask_title"),
            Interaction.created_at.label("ask_at"),
        )
        .where(Interaction.issue_id == Issue.id, Interaction.status == InteractionStatus.PENDING)
        .order_by(Interaction.created_at.desc())
        .limit(1)
        .lateral("waiting")
    )
    held = (
        sa_select(
            TaskHold.kind.label("hold_kind"),
            TaskHold.reason.label("hold_reason"),
            TaskHold.created_at.label("hold_at"),
        )
        .where(TaskHold.issue_id == Issue.id, TaskHold.status == HoldStatus.ACTIVE)
        .order_by(TaskHold.created_at.desc())
        .limit(1)
        .lateral("held")
    )
    joined = (
        Issue.__table__.outerjoin(latest, true()).outerjoin(waiting, true()).outerjoin(held, true())
    )
    return stmt.add_columns(*latest.c, *waiting.c, *held.c).select_from(joined)


def live_state(issue: Issue, row: Any) -> LiveState:
    """The live state of ``issue`` from the columns :func:`with_live_state` added to ``row``."""
    m = row._mapping
    run_id, status = m["run_id"], m["run_status"]
    if status in (RunStatus.QUEUED, RunStatus.RUNNING):
        if status == RunStatus.QUEUED:
            reason = "Starting: waiting for a runner."
        elif m["run_phase"] == "resuming":
            reason = "Going on after its runner went away."
        else:
            reason = "The agent is working."
        since = m["run_started_at"] or m["run_created_at"]
        return LiveState("running", since, run_id, reason, str(status))
    if m["ask_kind"] is not None:
        kind = m["ask_kind"]
        reason = _sentence(f"{ASKS.get(kind, 'Waiting on a person')}: {m['ask_title']}")
        return LiveState("waiting", m["ask_at"], run_id, reason, kind)
    if m["hold_kind"] is not None:
        reason = _sentence(f"Held: {m['hold_reason']}")
        return LiveState("held", m["hold_at"], run_id, reason, m["hold_kind"])
    failed = status == RunStatus.FAILED and m["run_dismissed_at"] is None
    if failed and issue.status not in PARKED:
        reason = failure_reason(m["run_error_code"], m["run_error_message"])
        return LiveState(
            "failed", m["run_finished_at"], run_id, reason, m["run_error_code"] or "failed"
        )
    if run_id is None:
        return LiveState("idle", None, None, "No run yet.", None)
    ended = {
        RunStatus.SUCCEEDED: "The last run succeeded.",
        RunStatus.CANCELLED: "The last run was cancelled.",
    }.get(status, "The last run failed; nothing waits on it.")
    return LiveState("idle", m["run_finished_at"], run_id, ended, str(status))
