"""A pass's claim: one statement takes the queued wakes and reads what their runs stand on.

It locks, in this order, the wakes a run may start for now (oldest first,
``FOR UPDATE SKIP LOCKED``: replicas claim side by side), their issues (``FOR
NO KEY UPDATE``, in id order), the issues' worktree rows (``FOR UPDATE``) and
projects (``FOR KEY SHARE``); and it reads with them everything a new run's
prompt and wake snapshot are made of: the agent (its manager and reports),
the issue and its parent (and the parent's worktree, a part's branch point),
the issue's comments (with their authors' names), when the agent's previous
run on the issue started, whether the wake is a conversation turn's, the
budgets that cover the run, and a heartbeat's queue. One round trip, where
reading them one by one through the ORM took a dozen.

A wake is skipped, and stays queued, while its agent is paused, while its
issue has an active run (it waits for it to end) or an active hold, while a
run of its agent is active when it is a heartbeat (a heartbeat is for an idle
agent), and while its issue's worktree lives on a runner not connected here
or is being removed (it waits for that runner, and never holds up the others).
"""

from __future__ import annotations

import uuid
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg

from paperclip.engine.context.prompt import OPEN, QUEUE_SHOWN
from paperclip.engine.workspaces.placement import ParentWorkspace, ProjectSource, WorkspaceRow
from paperclip.models import (
    AgentStatus,
    BudgetScope,
    HoldStatus,
    RunStatus,
    WakeStatus,
    WorkspaceStatus,
)

REPORTS_SHOWN = 20
"""An agent's brief names at most this many of its direct reports."""


def _quoted(*values: str) -> str:
    return ", ".join(f"'{v}'" for v in values)


# Literal statuses, not parameters: a plan made without their values could not use the
# partial indexes built for them.
CLAIM = f"""
WITH claimed AS MATERIALIZED (
    SELECT w.id, w.company_id, w.agent_id, w.issue_id, w.source, w.reason, w.created_at
    FROM wake_requests w
    JOIN agents a ON a.id = w.agent_id
    WHERE w.status = '{WakeStatus.QUEUED}' AND a.status = '{AgentStatus.ACTIVE}'
      AND NOT EXISTS (
        SELECT FROM runs r
        WHERE r.issue_id = w.issue_id AND r.status IN ({_quoted(RunStatus.QUEUED, RunStatus.RUNNING)}))
      AND NOT EXISTS (
        SELECT FROM task_holds h WHERE h.issue_id = w.issue_id AND h.status = '{HoldStatus.ACTIVE}')
      AND (w.source <> 'heartbeat' OR NOT EXISTS (
        SELECT FROM runs r
        WHERE r.agent_id = w.agent_id AND r.status IN ({_quoted(RunStatus.QUEUED, RunStatus.RUNNING)})))
      AND NOT EXISTS (
        SELECT FROM issue_workspaces iw
        WHERE iw.issue_id = w.issue_id
          AND (iw.status = '{WorkspaceStatus.RELEASING}'
               OR (iw.status IN ({_quoted(WorkspaceStatus.REQUESTED, WorkspaceStatus.READY)})
                   AND iw.runner_id <> ALL($2::uuid[]))))
    ORDER BY w.created_at
    LIMIT $1
    FOR UPDATE OF w SKIP LOCKED
), issue AS MATERIALIZED (
    SELECT i.id, i.company_id, i.identifier, i.title, i.description, i.status, i.priority,
        i.parent_id, i.project_id
    FROM issues i WHERE i.id IN (SELECT issue_id FROM claimed)
    ORDER BY i.id
    FOR NO KEY UPDATE
), workspace AS MATERIALIZED (
    SELECT iw.issue_id, iw.company_id, iw.status, iw.runner_id, iw.project_id, iw.key,
        iw.branch, iw.repo_path, iw.repo_url, iw.base_ref, iw.base_commit, iw.hooks_enabled,
        iw.path
    FROM issue_workspaces iw WHERE iw.issue_id IN (SELECT id FROM issue)
    ORDER BY iw.issue_id
    FOR UPDATE
), project AS MATERIALIZED (
    SELECT p.id, p.name, p.repo_path, p.repo_url, p.default_branch, p.branch_prefix,
        p.hooks_enabled
    FROM projects p WHERE p.id IN (SELECT project_id FROM issue)
    ORDER BY p.id
    FOR KEY SHARE
)
SELECT c.id, c.company_id, c.agent_id, c.issue_id, c.source, c.reason,
    a.name, a.role, a.provider, a.provider_config,
    ROW(i.id, i.company_id, i.identifier, i.title, i.description, i.status, i.priority,
        i.parent_id, i.project_id) AS issue,
    ROW(par.id, par.identifier, par.title, par.description,
        pws.project_id, pws.runner_id, pws.branch, pws.repo_path, pws.repo_url) AS parent,
    (SELECT max(r.started_at) FROM runs r
     WHERE r.agent_id = c.agent_id AND r.issue_id = c.issue_id) AS since,
    ARRAY(
        SELECT ROW(cm.id, cm.issue_id, cm.author_agent_id, cm.author_user_id, cm.body,
            cm.revision, cm.created_at, cm.edited_at, author.name)
        FROM comments cm LEFT JOIN agents author ON author.id = cm.author_agent_id
        WHERE cm.issue_id = c.issue_id AND cm.deleted_at IS NULL
        ORDER BY cm.created_at, cm.id
    ) AS comments,
    EXISTS (
        SELECT FROM conversation_turns ct
        WHERE ct.wake_request_id = c.id AND ct.company_id = c.company_id
    ) AS chat,
    ROW(ws.issue_id, ws.company_id, ws.status, ws.runner_id, ws.project_id, ws.key, ws.branch,
        ws.repo_path, ws.repo_url, ws.base_ref, ws.base_commit, ws.hooks_enabled, ws.path)
        AS workspace,
    ws_project.name AS workspace_project,
    ROW(p.id, p.name, p.repo_path, p.repo_url, p.default_branch, p.branch_prefix,
        p.hooks_enabled) AS project,
    ARRAY(
        SELECT ROW(b.id, b.scope, b.monthly_limit_micros, b.run_reserve_micros, b.currency)
        FROM budgets b
        WHERE b.company_id = c.company_id
          AND ((b.scope = '{BudgetScope.COMPANY}' AND b.scope_id = c.company_id)
               OR (b.scope = '{BudgetScope.AGENT}' AND b.scope_id = c.agent_id)
               OR (b.scope = '{BudgetScope.PROJECT}' AND b.scope_id = i.project_id))
        ORDER BY b.id
    ) AS budgets,
    (SELECT co.time_zone FROM companies co WHERE co.id = c.company_id) AS time_zone,
    CASE WHEN c.source = 'heartbeat' THEN ARRAY(
        SELECT ROW(q.identifier, q.status, q.priority, q.title)
        FROM issues q
        WHERE q.company_id = a.company_id AND q.assignee_agent_id = a.id
          AND q.status IN ({_quoted(*OPEN)})
        ORDER BY q.updated_at DESC
        LIMIT {QUEUE_SHOWN}
    ) END AS queue,
    ROW(boss.id, boss.name, boss.role, boss.status) AS manager,
    ARRAY(
        SELECT ROW(rep.id, rep.name, rep.role, rep.status)
        FROM agents rep WHERE rep.reports_to = a.id
        ORDER BY rep.name, rep.id
        LIMIT {REPORTS_SHOWN}
    ) AS reports,
    (SELECT count(*) FROM agents rep WHERE rep.reports_to = a.id) AS report_count
FROM claimed c
JOIN agents a ON a.id = c.agent_id
LEFT JOIN issue i ON i.id = c.issue_id
LEFT JOIN issues par ON par.id = i.parent_id
LEFT JOIN issue_workspaces pws ON pws.issue_id = par.id
LEFT JOIN agents boss ON boss.id = a.reports_to
LEFT JOIN workspace ws ON ws.issue_id = c.issue_id
LEFT JOIN projects ws_project ON ws_project.id = ws.project_id
LEFT JOIN project p ON p.id = i.project_id
ORDER BY c.created_at
"""


@dataclass(frozen=True, slots=True)
class ClaimedWake:
    id: uuid.UUID
    company_id: uuid.UUID
    agent_id: uuid.UUID
    issue_id: uuid.UUID | None
    source: str
    reason: str


@dataclass(frozen=True, slots=True)
class ClaimedAgent:
    id: uuid.UUID
    company_id: uuid.UUID
    name: str
    role: str
    provider: str
    provider_config: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ClaimedIssue:
    id: uuid.UUID
    company_id: uuid.UUID
    identifier: str
    title: str
    description: str
    status: str
    priority: str
    parent_id: uuid.UUID | None
    project_id: uuid.UUID | None


@dataclass(frozen=True, slots=True)
class ParentIssue:
    id: uuid.UUID
    identifier: str
    title: str
    description: str
    workspace: ParentWorkspace | None
    """The parent's worktree row, if it has one: a part's worktree branches from it."""


@dataclass(frozen=True, slots=True)
class Colleague:
    """The agent's manager or one of its reports, as its brief names them."""

    id: uuid.UUID
    name: str
    role: str
    status: str


@dataclass(frozen=True, slots=True)
class IssueComment:
    """A comment of the issue (not deleted), with what the prompt and the snapshot read."""

    id: uuid.UUID
    issue_id: uuid.UUID
    author_agent_id: uuid.UUID | None
    author_user_id: str | None
    body: str
    revision: str
    created_at: datetime
    edited_at: datetime | None
    deleted_at: None = None


@dataclass(frozen=True, slots=True)
class CoveringBudget:
    """A budget that covers the run (its company's, its agent's, its issue's project's)."""

    id: uuid.UUID
    scope: str
    monthly_limit_micros: int
    run_reserve_micros: int
    currency: str


@dataclass(frozen=True, slots=True)
class QueueEntry:
    identifier: str
    status: str
    priority: str
    title: str


@dataclass(frozen=True, slots=True)
class Claim:
    """A claimed wake (locked until the pass commits) and what its run stands on."""

    wake: ClaimedWake
    agent: ClaimedAgent
    issue: ClaimedIssue | None
    parent: ParentIssue | None
    since: datetime | None
    """When the agent's previous run on the issue started."""
    comments: list[IssueComment]
    """The issue's comments, oldest first."""
    agent_names: dict[uuid.UUID, str]
    """The names of the agents among the comments' authors."""
    chat: bool
    """A conversation turn names the wake."""
    workspace: WorkspaceRow | None
    workspace_project: str | None
    """The name of the project the worktree row was made from."""
    project: ProjectSource | None
    """The issue's project, as it is now."""
    budgets: tuple[CoveringBudget, ...]
    time_zone: str | None
    queue: list[QueueEntry] | None
    """A heartbeat's: the agent's open assigned issues."""
    manager: Colleague | None = None
    reports: tuple[Colleague, ...] = ()
    """The agent's direct reports, the first ``REPORTS_SHOWN`` by name."""
    report_count: int = 0


async def claim(
    driver: asyncpg.Connection, limit: int, runners: Collection[uuid.UUID]
) -> list[Claim]:
    """Claim up to ``limit`` queued wakes for the runners connected here, oldest first, in
    the caller's transaction (the wakes stay locked until it ends)."""
    return [_claim(row) for row in await driver.fetch(CLAIM, limit, list(runners))]


def _claim(row: Any) -> Claim:
    (wake_id, company_id, agent_id, issue_id, source, reason, name, role, provider, config) = row[
        :10
    ]
    issue, parent, since, comments, chat, workspace, workspace_project, project = row[10:18]
    budgets, time_zone, queue, manager, reports, report_count = row[18:24]
    return Claim(
        wake=ClaimedWake(wake_id, company_id, agent_id, issue_id, source, reason),
        agent=ClaimedAgent(agent_id, company_id, name, role, provider, config),
        issue=ClaimedIssue(*issue) if issue[0] is not None else None,
        parent=_parent(parent),
        since=since,
        comments=[IssueComment(*c[:8]) for c in comments],
        agent_names={c[2]: c[8] for c in comments if c[2] is not None and c[8] is not None},
        chat=chat,
        workspace=WorkspaceRow(*workspace) if workspace[0] is not None else None,
        workspace_project=workspace_project,
        project=ProjectSource(*project) if project[0] is not None else None,
        budgets=tuple(CoveringBudget(*b) for b in budgets),
        time_zone=time_zone,
        queue=[QueueEntry(*q) for q in queue] if queue is not None else None,
        manager=Colleague(*manager) if manager[0] is not None else None,
        reports=tuple(Colleague(*r) for r in reports),
        report_count=report_count,
    )


def _parent(row: Any) -> ParentIssue | None:
    if row[0] is None:
        return None
    workspace = ParentWorkspace(*row[4:9]) if row[4] is not None else None
    return ParentIssue(*row[:4], workspace=workspace)
