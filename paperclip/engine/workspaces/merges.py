"""Merging an issue's branch into its base branch: the request, made once, and its answer awaited.

A person asks (``POST …/issues/{i}/workspace/merge``). One transaction, under
the lock of the issue's workspace row, checks what the control plane can know
(a live worktree of a repository folder, no run of the issue active, its
runner connected and speaking ``workspace_merge``), then either finds the
request already made for the branch's head, or writes it (``workspace_merges``:
one pending request per issue and one merge per branch head, by partial
unique indexes) with a ``merge_workspace`` for the runner in its outbox.

The runner merges in the host repository and answers ``workspace_merged``,
which the replica holding its connection records once
(:func:`paperclip.engine.workspaces.reports.record_merged`: the
``workspace.merged`` activity and, when asked, the issue done, in one
transaction). The request waits for that answer, reading the row, for at most
``wait_seconds``; a second request for the same head waits for the first's
answer and gets the same. A request whose answer never came (its runner
stopped before sending it) is sent again by the next request after the wait:
the runner keeps its answers by request id, so it never merges twice.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import and_, exists, or_, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from paperclip.common.actor import Actor
from paperclip.common.queries import get_scoped
from paperclip.domain.companies.companies import company_writes
from paperclip.domain.workspaces.merges import MergeOutcome
from paperclip.engine.logs.outbox import enqueue_one
from paperclip.engine.workspaces.placement import spec_of
from paperclip.errors import ConflictError, NotFoundError, TimedOutError, UnavailableError
from paperclip.models import (
    ACTIVE_RUN_STATUSES,
    DEFAULT_MERGE_STRATEGY,
    Issue,
    IssueWorkspace,
    MergeStatus,
    Project,
    Run,
    Runner,
    RunnerMessage,
    WorkspaceMerge,
    WorkspaceStatus,
)
from paperclip.wire.messages import FEATURE_WORKSPACE_MERGE, MergeWorkspace
from paperclip.wire.workspace_rules import BASE_CHECKOUT_DIRTY, MERGE_CONFLICT, MERGE_NOT_SUPPORTED

POLL_SECONDS = 0.2
MAX_TITLE = 200
"""Characters of the issue's title in a merge commit's subject."""

WORKSPACE_NOT_READY = "workspace_not_ready"
RUNNER_UNAVAILABLE = "runner_unavailable"
RUN_ACTIVE = "run_active"
MERGE_TIMEOUT = "merge_timeout"


class WorkspaceMerges:
    """The merge request: checks, the exactly-once row, the runner's outbox, the wait."""

    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        links: Mapping[uuid.UUID, Any] | None = None,
        *,
        wait_seconds: float = 60.0,
    ) -> None:
        self.sessions = sessions
        self.links: Mapping[uuid.UUID, Any] = links if links is not None else {}
        """This replica's runner links by runner id; another replica's link polls its outbox."""
        self.wait_seconds = wait_seconds

    async def merge(
        self, actor: Actor, company_id: uuid.UUID, issue_id: uuid.UUID, *, close_issue: bool
    ) -> MergeOutcome:
        """Merge the issue's branch into its base branch (or find it merged for this head), and
        wait for the runner's answer. Raises the refusal (409), ``runner_unavailable`` (503) or
        ``merge_timeout`` (504: the merge may still be made; asking again answers it)."""
        request_id, runner_id, sent = await self._request(actor, company_id, issue_id, close_issue)
        if sent and (link := self.links.get(runner_id)) is not None:
            link.kick()
        row = await self._answer(request_id)
        if row.status == MergeStatus.PENDING:
            raise TimedOutError(
                f"the runner holding the worktree did not answer within {self.wait_seconds:.0f} s; "
                "the merge may still be made: ask again to get its result",
                code=MERGE_TIMEOUT,
            )
        if row.status == MergeStatus.REFUSED:
            raise _refusal(row)
        async with self.sessions() as session:
            status = await session.scalar(select(Issue.status).where(Issue.id == issue_id))
        return MergeOutcome(
            strategy=row.strategy,
            branch=row.branch,
            base_ref=row.base_ref or "",
            commit=row.commit or "",
            merged_commits=row.merged_commits or 0,
            issue_status=str(status),
        )

    async def _request(
        self, actor: Actor, company_id: uuid.UUID, issue_id: uuid.UUID, close_issue: bool
    ) -> tuple[uuid.UUID, uuid.UUID, bool]:
        """The request's id, its runner, and whether a message was queued for it now."""
        async with company_writes(self.sessions, company_id) as session:
            issue = await get_scoped(session, Issue, company_id, issue_id, "issue", source="path")
            ws = await _locked_workspace(session, company_id, issue_id)
            await _check(session, ws)
            assert ws.head_commit is not None and ws.runner_id is not None  # checked
            for _ in range(2):  # a second look only if a request was made meanwhile
                earlier = await _earlier(session, issue_id, ws.head_commit)
                if earlier is not None:
                    if earlier.status == MergeStatus.MERGED or not await self._unanswered(
                        session, earlier
                    ):
                        return earlier.id, ws.runner_id, False
                    # Unanswered past the wait: its runner may have stopped before answering.
                    # The same request again (a runner answers a request id once).
                    earlier.sent_at = datetime.now(UTC)
                    earlier.runner_id = ws.runner_id
                    await self._send(session, ws, earlier, issue.title)
                    return earlier.id, ws.runner_id, True
                request_id = await _insert(session, actor, ws, close_issue)
                if request_id is not None:
                    row = await session.get(WorkspaceMerge, request_id)
                    assert row is not None
                    await self._send(session, ws, row, issue.title)
                    return request_id, ws.runner_id, True
        raise AssertionError("a merge request neither found nor made")  # pragma: no cover

    async def _unanswered(self, session: AsyncSession, row: WorkspaceMerge) -> bool:
        """Whether the request went unanswered: its runner took it (its outbox row is gone)
        longer than the wait ago, and said nothing."""
        if row.sent_at >= datetime.now(UTC) - timedelta(seconds=self.wait_seconds):
            return False
        queued = await session.scalar(
            select(
                exists().where(
                    RunnerMessage.runner_id == row.runner_id,
                    RunnerMessage.type == "merge_workspace",
                    RunnerMessage.payload["request_id"].astext == str(row.id),
                )
            )
        )
        return not queued

    async def _send(
        self, session: AsyncSession, ws: IssueWorkspace, row: WorkspaceMerge, title: str
    ) -> None:
        assert ws.runner_id is not None
        subject = " ".join(title.split())[:MAX_TITLE]
        message = f"Merge {row.branch}: {subject}" if subject else f"Merge {row.branch}"
        await enqueue_one(
            session,
            ws.runner_id,
            MergeWorkspace(
                seq=0,
                request_id=row.id,
                issue_id=row.issue_id,
                workspace=spec_of(ws),
                strategy=row.strategy,  # type: ignore[arg-type]
                message=message,
            ),
            attach=False,
        )

    async def _answer(self, request_id: uuid.UUID) -> WorkspaceMerge:
        """The request once answered, or as it is when the wait is over."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.wait_seconds
        while True:
            async with self.sessions() as session:
                row = await session.get(WorkspaceMerge, request_id)
            if row is None:
                raise NotFoundError(
                    "this issue's merge request is gone (the issue was deleted)",
                    code="issue_not_found",
                )
            if row.status != MergeStatus.PENDING or loop.time() >= deadline:
                return row
            await asyncio.sleep(POLL_SECONDS)


async def _earlier(session: AsyncSession, issue_id: uuid.UUID, head: str) -> WorkspaceMerge | None:
    """The issue's pending request, or its merge of ``head`` (locked)."""
    return (
        await session.execute(
            select(WorkspaceMerge)
            .where(
                WorkspaceMerge.issue_id == issue_id,
                or_(
                    WorkspaceMerge.status == MergeStatus.PENDING,
                    and_(
                        WorkspaceMerge.status == MergeStatus.MERGED,
                        WorkspaceMerge.head_commit == head,
                    ),
                ),
            )
            .order_by(WorkspaceMerge.created_at)
            .limit(1)
            .with_for_update()
        )
    ).scalar_one_or_none()


async def _insert(
    session: AsyncSession, actor: Actor, ws: IssueWorkspace, close_issue: bool
) -> uuid.UUID | None:
    """A new pending request for the worktree's head (None: the unique indexes found one)."""
    project = await session.get(Project, ws.project_id) if ws.project_id else None
    made = await session.execute(
        insert(WorkspaceMerge)
        .values(
            id=uuid.uuid4(),
            company_id=ws.company_id,
            issue_id=ws.issue_id,
            runner_id=ws.runner_id,
            status=MergeStatus.PENDING,
            strategy=project.merge_strategy if project is not None else DEFAULT_MERGE_STRATEGY,
            branch=ws.branch,
            base_ref=ws.base_ref,
            head_commit=ws.head_commit,
            close_issue=close_issue,
            actor_type=actor.type,
            actor_id=actor.id,
        )
        .on_conflict_do_nothing()
        .returning(WorkspaceMerge.id)
    )
    return made.scalar_one_or_none()


async def _locked_workspace(
    session: AsyncSession, company_id: uuid.UUID, issue_id: uuid.UUID
) -> IssueWorkspace:
    ws = (
        await session.execute(
            select(IssueWorkspace)
            .where(IssueWorkspace.issue_id == issue_id, IssueWorkspace.company_id == company_id)
            .with_for_update()
        )
    ).scalar_one_or_none()
    if ws is None:
        raise NotFoundError(
            "this issue has no worktree to merge: it belongs to no project, or no run of it "
            "started yet",
            code="workspace_not_found",
        )
    return ws


async def _check(session: AsyncSession, ws: IssueWorkspace) -> None:
    """What the control plane can check before asking the runner holding the worktree."""
    if ws.repo_url is not None:
        raise ConflictError(
            "this project's repository is a clone URL: its runner holds only a mirror, and "
            "pushing to the remote is not Paperclip's to do. Fetch the branch "
            f"{ws.branch} and merge it where the repository lives",
            code=MERGE_NOT_SUPPORTED,
        )
    if ws.status != WorkspaceStatus.READY or ws.head_commit is None or ws.runner_id is None:
        why = {
            WorkspaceStatus.REQUESTED: "is being made for the issue's first run",
            WorkspaceStatus.RELEASING: "is being removed (the issue ended)",
            WorkspaceStatus.RELEASED: "was removed; its branch is kept in the repository",
        }.get(WorkspaceStatus(ws.status), "has not reported its state yet")
        raise ConflictError(
            f"the issue's worktree {why}: there is no live worktree to merge from",
            code=WORKSPACE_NOT_READY,
        )
    active = await session.scalar(
        select(
            exists().where(and_(Run.issue_id == ws.issue_id, Run.status.in_(ACTIVE_RUN_STATUSES)))
        )
    )
    if active:
        raise ConflictError(
            "a run of this issue is active: its agent may still be writing to the branch. "
            "Merge once the run has ended",
            code=RUN_ACTIVE,
        )
    runner = await session.get(Runner, ws.runner_id)
    if runner is None or runner.revoked_at is not None or runner.replica is None:
        name = runner.name if runner is not None else "holding it"
        raise UnavailableError(
            f"the runner {name}, which holds the issue's worktree, is not connected; "
            "merge once it is back",
            code=RUNNER_UNAVAILABLE,
        )
    if FEATURE_WORKSPACE_MERGE not in (runner.offers or {}).get("features", []):
        raise ConflictError(
            f"the runner {runner.name}, which holds the issue's worktree, is of a version that "
            "cannot merge; upgrade it (or merge the branch on its host by hand)",
            code=MERGE_NOT_SUPPORTED,
        )


def _refusal(row: WorkspaceMerge) -> ConflictError:
    extra: dict[str, Any] = {}
    if row.conflicts or row.error_code == MERGE_CONFLICT:
        extra["conflicts"] = list(row.conflicts or [])
    if row.files or row.error_code == BASE_CHECKOUT_DIRTY:
        extra["files"] = list(row.files or [])
    return ConflictError(
        row.error_message or "the runner refused the merge; nothing changed",
        code=row.error_code or "merge_refused",
        extra=extra,
    )
