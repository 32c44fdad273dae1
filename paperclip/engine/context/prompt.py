"""The execution input of a run, assembled by the prompt-rendering hooks from the rows it stands on."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from paperclip_hookspecs.org_chart import ChainOfCommand, Colleague
from paperclip_hookspecs.prompts import (
    AuthorKind,
    CommentAuthor,
    CommentSource,
    CommentTrust,
    ContinuationMessage,
    Lane,
    ParentTask,
    ProviderCarriers,
    SessionAttempt,
    TaskSource,
    WakeSource,
)
from paperclip_hookspecs.workspaces import ExecutionWorkspace
from sqlalchemy import or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from paperclip.domain.issues.issue_parts import TOLD
from paperclip.models import (
    Agent,
    Comment,
    Issue,
    Run,
    WakeCommentSnapshot,
    WakeRequest,
    WakeSnapshotComment,
)
from paperclip.prompts import AgentBrief, AssemblyRequest, assemble_execution_input
from paperclip.prompts.assemble import AssembledInput


def comment_source(comment: Comment, agents: dict[Any, str]) -> CommentSource:
    if comment.author_agent_id is not None:
        author = CommentAuthor(
            AuthorKind.AGENT, str(comment.author_agent_id), agents.get(comment.author_agent_id, "")
        )
        trust = CommentTrust.UNTRUSTED  # another agent's words inform, they do not direct
    else:
        author = CommentAuthor(
            AuthorKind.USER, comment.author_user_id or "", comment.author_user_id or ""
        )
        trust = CommentTrust.TRUSTED
    return CommentSource(
        id=str(comment.id),
        issue_id=str(comment.issue_id),
        body=comment.body,
        author=author,
        trust=trust,
        created_at=comment.created_at.isoformat(),
        edited=comment.edited_at is not None,
        deleted=comment.deleted_at is not None,
    )


def current_wake_comments(
    agent: Agent, comments: list[Comment], since: datetime | None
) -> list[Comment]:
    """The comments a run is woken for, all of them, oldest first: written by others since this
    agent's previous run on the issue started (the prompt renders a window of them)."""
    return [
        c
        for c in comments
        if c.author_agent_id != agent.id and (since is None or c.created_at > since)
    ]


def build_execution_input(
    *,
    agent: Agent,
    issue: Issue | None,
    parent: Issue | None,
    comments: list[Comment],
    since: datetime | None,
    wake: WakeRequest,
    agent_names: dict[Any, str],
    run_id: str,
    hooks: Any = None,
    workspace: ExecutionWorkspace | None = None,
    queue: Sequence[QueuedIssue] | None = None,
    ownership: bool = True,
    chain: ChainOfCommand | None = None,
) -> AssembledInput:
    """Assemble a fresh session's input (``queue``: a heartbeat's open assigned issues).

    The current wake comments are the ones written by others since this agent's
    previous run on the issue started; earlier ones are history.
    """
    current = current_wake_comments(agent, comments, since)
    current_ids = {c.id for c in current}
    history = [c for c in comments if c.id not in current_ids]
    task = (
        task_source(issue, parent, workspace, chain)
        if issue is not None
        else TaskSource(
            id=str(wake.id),
            identifier="",
            title=wake.reason or "Wake",
            description=queue_brief(queue),
            workspace=workspace,
        )
    )
    request = AssemblyRequest(
        task=task,
        wake=WakeSource(
            reason=wake_reason(wake),
            comments=tuple(comment_source(c, agent_names) for c in current),
        ),
        lane=Lane.NATIVE,
        attempt=SessionAttempt.FRESH,
        run_id=run_id,
        provider=agent.provider,
        agent=AgentBrief(name=agent.name, instructions=agent.role),
        carriers=carriers_of(hooks, agent.provider),
        history=tuple(comment_source(c, agent_names) for c in history),
        ownership=ownership,
    )
    return assemble_execution_input(request, hooks)


def wake_reason(wake: WakeRequest) -> str:
    """Why the agent woke, as its prompt says it: the wake's source (``assignment``,
    ``comment``, ``heartbeat``...); for a part that ended or a report's blocker, what
    happened (its reason)."""
    return wake.reason if wake.source in TOLD and wake.reason else wake.source


class ParentRow(Protocol):
    id: Any
    identifier: str
    title: str
    description: str


def task_source(
    issue: Issue,
    parent: ParentRow | None,
    workspace: ExecutionWorkspace | None,
    chain: ChainOfCommand | None = None,
) -> TaskSource:
    """The issue as the prompt hooks see it, as it is now."""
    return TaskSource(
        id=str(issue.id),
        identifier=issue.identifier,
        title=issue.title,
        description=issue.description,
        status=issue.status,
        priority=issue.priority,
        parent=ParentTask(str(parent.id), parent.identifier, parent.title, parent.description)
        if parent
        else None,
        workspace=workspace,
        chain=chain,
    )


class ColleagueRow(Protocol):
    id: Any
    name: str
    role: str
    status: str


def chain_of_command(
    manager: ColleagueRow | None, reports: Sequence[ColleagueRow], report_count: int
) -> ChainOfCommand | None:
    """The agent's place in the org chart as its brief tells it; None for an agent with
    neither a manager nor a report (a company without an org chart is told nothing)."""
    if manager is None and not reports:
        return None
    return ChainOfCommand(
        manager=_colleague(manager) if manager is not None else None,
        reports=tuple(_colleague(r) for r in reports),
        more_reports=max(0, report_count - len(reports)),
    )


def _colleague(row: ColleagueRow) -> Colleague:
    return Colleague(str(row.id), row.name, row.role, str(row.status))


QUEUE_SHOWN = 50
"""A heartbeat's brief lists at most this many of the agent's open issues."""
OPEN = ("backlog", "todo", "in_progress", "in_review", "blocked")
"""The statuses of the issues a heartbeat's brief lists."""
QUEUE_RANK = {"urgent": 0, "high": 1, "medium": 2, "low": 3}


class QueuedIssue(Protocol):
    identifier: str
    status: str
    priority: str
    title: str


def queue_brief(queue: Sequence[QueuedIssue] | None) -> str:
    """A heartbeat's task: the agent's open assigned issues (the most recently updated
    ``QUEUE_SHOWN``), most urgent first."""
    if queue is None:
        return ""
    if not queue:
        return "You have no open assigned issue."
    ranked = sorted(queue, key=lambda i: QUEUE_RANK.get(i.priority, 4))
    lines = [f"Your open assigned issues ({len(ranked)}, most urgent first):"]
    lines += [f"- {i.identifier} [{i.status}, {i.priority}] {i.title}" for i in ranked]
    return "\n".join(lines)


def carriers_of(hooks: Any, provider: str) -> ProviderCarriers:
    """Where the provider carries the standing rules: its system prompt when its
    capabilities say ``system_prompt`` (then they travel as ``TurnInput.system``)."""
    kinds = hooks.providers() if hooks is not None and hasattr(hooks, "providers") else []
    kind = next((k for k in kinds if k.name == provider), None)
    return ProviderCarriers(default_rules=kind is not None and kind.capabilities.system_prompt)


@dataclass(frozen=True, slots=True)
class RunInput:
    """A new run's assembled input, and every current wake comment it stands on."""

    assembled: AssembledInput
    current: list[Any]
    """All of them, not only the window the prompt rendered: the wake snapshot's comments."""


def assemble_run_input(
    *,
    agent: Any,
    issue: Any,
    parent: Any,
    comments: list[Any],
    since: datetime | None,
    wake: Any,
    agent_names: dict[Any, str],
    run_id: str,
    hooks: Any = None,
    workspace: ExecutionWorkspace | None = None,
    queue: Sequence[QueuedIssue] | None = None,
    ownership: bool = True,
    chain: ChainOfCommand | None = None,
) -> RunInput:
    """A new run's input, from what its claim read (the issue's comments, oldest first, its
    parent, when the agent's previous run on it started, the comments' authors' names, a
    heartbeat's queue): the rows or anything with their attributes."""
    assembled = build_execution_input(
        queue=queue,
        agent=agent,
        issue=issue,
        parent=parent,
        comments=comments,
        since=since,
        wake=wake,
        agent_names=agent_names,
        run_id=run_id,
        hooks=hooks,
        workspace=workspace,
        ownership=ownership,
        chain=chain,
    )
    return RunInput(assembled, current_wake_comments(agent, comments, since))


async def agent_names(session: AsyncSession, comments: list[Comment]) -> dict[Any, str]:
    """The names of the agents who wrote ``comments``."""
    author_ids = {c.author_agent_id for c in comments if c.author_agent_id}
    if not author_ids:
        return {}
    rows = await session.execute(select(Agent.id, Agent.name).where(Agent.id.in_(author_ids)))
    return dict(rows.all())


async def retry_history(session: AsyncSession, run: Run) -> tuple[CommentSource, ...]:
    """The earlier thread of a run's fresh retry, oldest first.

    As the first turn saw it (the issue's comments that are not in the run's
    wake snapshot, written before the run started), and what the run itself
    posted since: the new session must see the work of the lost one. Others'
    comments written during the run are not history: a steer reaches the model
    through the unread-steers ledger, any other comment wakes a later run.
    """
    if run.issue_id is None:
        return ()
    current = (
        select(WakeSnapshotComment.comment_id)
        .join(WakeCommentSnapshot, WakeCommentSnapshot.id == WakeSnapshotComment.snapshot_id)
        .where(
            WakeCommentSnapshot.run_id == run.id, WakeCommentSnapshot.company_id == run.company_id
        )
    )
    before = [Comment.created_by_run_id == run.id]
    if run.started_at is not None:
        before.append(Comment.created_at <= run.started_at)
    rows = await session.execute(
        select(Comment)
        .where(
            Comment.company_id == run.company_id,
            Comment.issue_id == run.issue_id,
            Comment.deleted_at.is_(None),
            Comment.id.not_in(current),
            or_(*before),
        )
        .order_by(Comment.created_at, Comment.id)
    )
    comments = list(rows.scalars())
    names = await agent_names(session, comments)
    return tuple(comment_source(c, names) for c in comments)


async def steered_comments(
    session: AsyncSession, run: Run, steered: tuple[ContinuationMessage, ...]
) -> tuple[CommentSource, ...]:
    """The steered messages that are comments of the run's issue, in their order, as the
    current comments of the restart continuation that carries them (not answered cards)."""
    ids = {}
    for message in steered:
        try:
            ids[message.id] = uuid.UUID(message.id)
        except ValueError:
            continue
    if not ids or run.issue_id is None:
        return ()
    rows = await session.scalars(
        select(Comment).where(
            Comment.id.in_(list(ids.values())),
            Comment.company_id == run.company_id,
            Comment.issue_id == run.issue_id,
            Comment.deleted_at.is_(None),
        )
    )
    found = {str(c.id): c for c in rows}
    names = await agent_names(session, list(found.values()))
    return tuple(comment_source(found[m.id], names) for m in steered if m.id in found)
