"""Which runner an issue's run goes to, and the worktree its turn works in.

An issue of a project gets one worktree, made on the runner host its first
run went to; every later run and turn of the issue goes to that host while the
worktree lives there (a run waits for it, like a run waits for a runner
offering its provider). A worktree being released is waited for; once
released, the next run makes it again (from the kept branch) on any runner
that speaks workspaces.
"""

from __future__ import annotations

import posixpath
import uuid
from dataclasses import dataclass
from typing import Protocol

from paperclip_hookspecs.workspaces import ExecutionWorkspace
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from paperclip.models import Issue, IssueWorkspace, Project, WorkspaceStatus
from paperclip.wire.messages import WorkspaceSpec

LIVE = (WorkspaceStatus.REQUESTED, WorkspaceStatus.READY)
"""A worktree that exists (or is being made) on its runner host."""


@dataclass(frozen=True, slots=True)
class Placement:
    """Where a run of an issue may start."""

    workspace: bool = False
    """It works in a worktree: only a runner that speaks workspaces may take it."""
    runner_id: uuid.UUID | None = None
    """The runner host holding the worktree (None: any runner that speaks workspaces)."""
    wait: bool = False
    """The worktree is being removed: nothing starts until it is."""


SCRATCH = Placement()


class WorkspaceElsewhere(Exception):
    """The issue's worktree lives on another runner host than the one picked (a race with
    another replica): the run starts there, not here."""


async def placement_of(session: AsyncSession, issue_id: uuid.UUID | None) -> Placement:
    """Where a run of ``issue_id`` may start (a run without an issue: anywhere)."""
    if issue_id is None:
        return SCRATCH
    row = (
        await session.execute(
            select(Issue.project_id, IssueWorkspace.status, IssueWorkspace.runner_id)
            .outerjoin(IssueWorkspace, IssueWorkspace.issue_id == Issue.id)
            .where(Issue.id == issue_id)
        )
    ).one_or_none()
    if row is None:
        return SCRATCH
    return placement_from(*row)


def placement_from(
    project_id: uuid.UUID | None, status: str | None, runner_id: uuid.UUID | None
) -> Placement:
    """Where a run of an issue of ``project_id`` may start, given its worktree's ``status``
    and ``runner_id`` (both None: it has none)."""
    if status in LIVE and runner_id is not None:
        return Placement(workspace=True, runner_id=runner_id)
    if status == WorkspaceStatus.RELEASING:
        return Placement(workspace=True, runner_id=runner_id, wait=True)
    return Placement(workspace=True) if project_id is not None else SCRATCH


@dataclass(frozen=True, slots=True)
class TurnWorkspace:
    """The worktree of a turn: what the runner is asked for, and what the prompt names."""

    spec: WorkspaceSpec
    view: ExecutionWorkspace


def workspace_key(issue: Issue) -> str:
    """The worktree's folder under a runner's workspaces folder: unique per issue."""
    return f"{issue.company_id}/{issue.identifier}"


@dataclass(frozen=True, slots=True)
class ProjectSource:
    """What a worktree is made from: a project's row, as a claim read it (``FOR KEY SHARE``)."""

    id: uuid.UUID
    name: str
    repo_path: str | None
    repo_url: str | None
    default_branch: str | None
    branch_prefix: str
    hooks_enabled: bool


@dataclass(frozen=True, slots=True)
class WorkspaceRow:
    """An issue's worktree row: as a claim read it (locked), or as the claim writes it."""

    issue_id: uuid.UUID
    company_id: uuid.UUID
    status: str
    runner_id: uuid.UUID | None
    project_id: uuid.UUID | None
    key: str
    branch: str
    repo_path: str | None
    repo_url: str | None
    base_ref: str | None
    base_commit: str | None
    hooks_enabled: bool
    path: str | None


@dataclass(frozen=True, slots=True)
class ParentWorkspace:
    """The worktree row of the issue a part belongs under, as a claim read it."""

    project_id: uuid.UUID | None
    runner_id: uuid.UUID | None
    branch: str
    repo_path: str | None
    repo_url: str | None


def base_branch(
    project: ProjectSource, parent: ParentWorkspace | None, runner_id: uuid.UUID
) -> str | None:
    """What a new worktree branches from: the project's default branch, or for a part of an
    issue that has a worktree of the same project on the same runner host, the parent's
    branch (the part's work then merges into the parent's). A parent's branch lives only in
    its host's repository (a URL project's branches are not pushed): on another host, or
    from a URL, the part starts from the default branch."""
    if (
        parent is not None
        and parent.project_id == project.id
        and parent.runner_id == runner_id
        and project.repo_url is None
        and (parent.repo_path, parent.repo_url) == (project.repo_path, project.repo_url)
    ):
        return parent.branch
    return project.default_branch


class IssueSource(Protocol):
    id: uuid.UUID
    company_id: uuid.UUID
    identifier: str


def open_workspace(
    issue: IssueSource,
    row: WorkspaceRow | None,
    project: ProjectSource | None,
    *,
    row_project: str | None,
    runner_id: uuid.UUID,
    workspace_dir: str,
    parent: ParentWorkspace | None = None,
) -> tuple[TurnWorkspace | None, WorkspaceRow | None]:
    """The worktree a new run of ``issue`` works in, made on ``runner_id`` unless it already
    lives there (None for an issue without a project), and the row to write for it (None:
    the row stays as it is). ``parent``: the worktree row of the issue's parent, if any
    (see :func:`base_branch`).

    ``row`` is the issue's worktree row and ``project`` the issue's project, both locked by
    the caller (the row ``FOR UPDATE``; the project ``FOR KEY SHARE``: shared with other
    runs, not with a change of its source, which waits, then sees this worktree and is
    refused: no worktree is made from a source just replaced); ``row_project`` is the name
    of the project the live row was made from.
    """
    if row is not None and row.status in LIVE:
        if row.runner_id != runner_id:
            raise WorkspaceElsewhere(issue.id)
        return _turn_workspace(row, row_project or "", workspace_dir), None
    if row is not None and row.status == WorkspaceStatus.RELEASING:
        raise WorkspaceElsewhere(issue.id)
    if project is None:
        return None, None
    key = row.key if row is not None else workspace_key(issue)
    # Made (again) from the project as it is now: a released worktree's branch is kept,
    # and so is its base commit when the source did not change.
    same_source = row is not None and (row.repo_path, row.repo_url) == (
        project.repo_path,
        project.repo_url,
    )
    written = WorkspaceRow(
        issue_id=issue.id,
        company_id=row.company_id if row is not None else issue.company_id,
        status=WorkspaceStatus.REQUESTED,
        runner_id=runner_id,
        project_id=project.id,
        key=key,
        branch=row.branch if row is not None else project.branch_prefix + issue.identifier,
        repo_path=project.repo_path,
        repo_url=project.repo_url,
        base_ref=base_branch(project, parent, runner_id),
        base_commit=row.base_commit if row is not None and same_source else None,
        hooks_enabled=project.hooks_enabled,
        path=posixpath.join(workspace_dir, key) if workspace_dir else None,
    )
    return _turn_workspace(written, project.name, workspace_dir), written


async def workspace_of(
    session: AsyncSession, issue_id: uuid.UUID | None, workspace_dir: str
) -> TurnWorkspace | None:
    """The live worktree a later turn of an issue's run goes on in, if it has one."""
    if issue_id is None:
        return None
    row = await session.get(IssueWorkspace, issue_id)
    if row is None or row.status not in LIVE:
        return None
    project = await session.get(Project, row.project_id) if row.project_id else None
    return _turn_workspace(row, project.name if project is not None else "", workspace_dir)


def spec_of(row: IssueWorkspace | WorkspaceRow) -> WorkspaceSpec:
    return WorkspaceSpec(
        key=row.key,
        branch=row.branch,
        repo_path=row.repo_path,
        repo_url=row.repo_url,
        base_ref=row.base_ref,
        base_commit=row.base_commit,
        hooks=row.hooks_enabled,
    )


def _turn_workspace(
    row: IssueWorkspace | WorkspaceRow, project: str, workspace_dir: str
) -> TurnWorkspace:
    path = row.path or (posixpath.join(workspace_dir, row.key) if workspace_dir else row.key)
    view = ExecutionWorkspace(
        path=path,
        branch=row.branch,
        base_ref=row.base_ref or "",
        base_commit=row.base_commit or "",
        project=project,
        repository=row.repo_path or row.repo_url or "",
    )
    return TurnWorkspace(spec_of(row), view)
