"""What runners report about worktrees, recorded once.

- ``workspace_report``: a run's worktree is ready for a turn, or a turn ended
  and left this work product. The issue's workspace row keeps the latest
  state and diff (for the API); the run's log gets a ``workspace.ready`` or
  ``workspace.state`` event (the state without the diff). A replay finds the
  event already logged (``(run, source_instance, source_seq)`` is unique) and
  changes nothing.
- ``workspace_released``: the worktree is gone (its branch kept); the row says
  so, with the ref holding what was uncommitted.
- ``workspace_merged``: the runner merged the issue's branch into its base
  branch, or says why not; the merge request keeps the answer. A merge is one
  ``workspace.merged`` activity entry (with the issue set ``done`` when the
  request asked for it, in the same transaction); a refusal records nothing.
  Only the first answer of the runner asked counts.
- ``runner_status``: the disk a runner's worktrees and mirrors use.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import msgspec
from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession

from paperclip.common.activity import record_activity
from paperclip.common.actor import SYSTEM, Actor
from paperclip.domain.issues.issues import update_issue
from paperclip.engine.logs.events import NewEvent, append_events
from paperclip.models import (
    Issue,
    IssueStatus,
    IssueWorkspace,
    MergeStatus,
    Run,
    Runner,
    WorkspaceMerge,
    WorkspaceStatus,
)
from paperclip.wire.messages import (
    RunnerStatus,
    WorkspaceMerged,
    WorkspaceReleased,
    WorkspaceReport,
)

READY_EVENT = "workspace.ready"
STATE_EVENT = "workspace.state"


async def record_report(
    session: AsyncSession, run: Run, source_instance: str, message: WorkspaceReport
) -> None:
    """Keep a runner's report about ``run``'s worktree (the run locked under the caller's fence)."""
    if run.issue_id is None:
        return
    state = msgspec.to_builtins(message.state)
    kind = READY_EVENT if message.moment == "ready" else STATE_EVENT
    logged = await append_events(
        session, run, source_instance, [NewEvent(message.seq, kind, state, message.turn)]
    )
    if not logged:
        return  # a replay: recorded the first time
    row = await session.get(IssueWorkspace, run.issue_id, with_for_update=True)
    if row is None:
        return
    if row.status == WorkspaceStatus.REQUESTED:
        row.status = WorkspaceStatus.READY
        record_activity(
            session,
            SYSTEM,
            "workspace.ready",
            entity_type="issue",
            entity_id=run.issue_id,
            company_id=run.company_id,
            details={"path": message.state.path, "branch": message.state.branch},
        )
    row.path = message.state.path
    row.base_ref = message.state.base_ref
    row.base_commit = row.base_commit or message.state.base_commit
    row.head_commit = message.state.head
    row.state = state
    row.diff = message.diff
    row.diff_truncated = message.diff_truncated
    row.state_at = datetime.now(UTC)
    row.state_run_id = run.id
    row.disk_bytes = message.state.disk_bytes


async def record_released(
    session: AsyncSession,
    runner_id: uuid.UUID,
    message: WorkspaceReleased,
    *,
    retry_after: timedelta,
) -> None:
    """The runner removed the issue's worktree, or says why it could not (tried again later)."""
    row = await session.get(IssueWorkspace, message.issue_id, with_for_update=True)
    if row is None or row.status != WorkspaceStatus.RELEASING or row.runner_id != runner_id:
        return  # a replay, or a worktree forgotten meanwhile
    now = datetime.now(UTC)
    if message.error_code is not None:
        row.status = WorkspaceStatus.READY
        row.error_code, row.error_message = message.error_code, message.error
        row.release_after = now + retry_after
        return
    row.status = WorkspaceStatus.RELEASED
    row.saved_ref = message.saved_ref
    row.released_at = now
    row.release_after = None
    row.error_code = row.error_message = None
    record_activity(
        session,
        SYSTEM,
        "workspace.released",
        entity_type="issue",
        entity_id=row.issue_id,
        company_id=row.company_id,
        details={"branch": row.branch, "saved_ref": message.saved_ref},
    )


async def record_merged(
    session: AsyncSession, runner_id: uuid.UUID, message: WorkspaceMerged
) -> None:
    """The runner's answer to a merge request, kept once; a merge is its activity entry."""
    request = await session.get(WorkspaceMerge, message.request_id)
    if request is None or request.status != MergeStatus.PENDING or request.runner_id != runner_id:
        return  # a replay, an answer repeated, or a request another runner was asked again
    # The issue (when it is closed), then the worktree, then the request: the order a run's
    # claim and a new merge request take them in too.
    if request.close_issue and message.status == "merged":
        await session.get(Issue, request.issue_id, with_for_update=True)
    ws = await session.get(IssueWorkspace, request.issue_id, with_for_update=True)
    await session.refresh(request, with_for_update=True)
    if request.status != MergeStatus.PENDING or request.runner_id != runner_id:
        return
    request.answered_at = datetime.now(UTC)
    if message.status != "merged":
        request.status = MergeStatus.REFUSED
        request.error_code = message.error_code or "merge_refused"
        request.error_message = message.error or "the runner refused the merge; nothing changed"
        request.conflicts, request.files = list(message.conflicts), list(message.files)
        return
    request.status = MergeStatus.MERGED
    request.commit, request.merged_head = message.commit, message.head
    request.merged_commits = message.merged_commits
    if ws is not None and message.head and ws.status != WorkspaceStatus.RELEASED:
        # What is left to review is what the branch has beyond what was merged.
        ws.base_commit = message.head
        if message.state is not None:
            ws.state = msgspec.to_builtins(message.state)
            ws.diff, ws.diff_truncated = message.diff, message.diff_truncated
            ws.head_commit = message.state.head
            ws.state_at = datetime.now(UTC)
    actor = Actor(type=request.actor_type, id=request.actor_id)  # type: ignore[arg-type]
    record_activity(
        session,
        actor,
        "workspace.merged",
        entity_type="issue",
        entity_id=request.issue_id,
        company_id=request.company_id,
        details={
            "strategy": request.strategy,
            "commit": message.commit,
            "head": message.head,
            "merged_commits": message.merged_commits,
            "branch": request.branch,
            "base_ref": request.base_ref,
            "by": f"{request.actor_type}:{request.actor_id}",
            "request_id": str(request.id),
        },
    )
    if request.close_issue:
        issue = await session.get(Issue, request.issue_id)
        if issue is not None and issue.status != IssueStatus.DONE:
            await update_issue(
                session, actor, request.company_id, request.issue_id, {"status": IssueStatus.DONE}
            )


async def record_status(session: AsyncSession, runner_id: uuid.UUID, status: RunnerStatus) -> None:
    await session.execute(
        update(Runner)
        .where(Runner.id == runner_id)
        .values(
            workspace_bytes=status.workspace_bytes + status.mirror_bytes,
            workspace_count=status.workspace_count,
            status_at=datetime.now(UTC),
        )
    )
