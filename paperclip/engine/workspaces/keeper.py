"""The worktrees of ended issues: removed once their retention passed, their branches kept.

An issue that is ``done`` or ``cancelled`` keeps its worktree for the
retention (``PAPERCLIP_WORKSPACE_RETENTION_HOURS``, counted from the issue's
last change), so a person can look at it or reopen the issue. Then the
replica holding a connection to the worktree's runner asks it to remove the
worktree (``release_workspace``, through the runner's outbox); the runner
first saves what is uncommitted to a ref, and answers ``workspace_released``.
An issue reopened before that keeps its worktree; one reopened after gets a
new worktree from its kept branch.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta

from sqlalchemy import and_, exists, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from paperclip.common.activity import record_activity
from paperclip.common.actor import SYSTEM
from paperclip.engine.links.link import RunnerLink
from paperclip.engine.logs import outbox
from paperclip.engine.loop import keep_running
from paperclip.engine.workspaces.placement import spec_of
from paperclip.models import (
    ACTIVE_RUN_STATUSES,
    Issue,
    IssueStatus,
    IssueWorkspace,
    Run,
    WorkspaceStatus,
)
from paperclip.wire.messages import FEATURE_WORKSPACES, ReleaseWorkspace

log = logging.getLogger(__name__)

ENDED = (IssueStatus.DONE, IssueStatus.CANCELLED)
BATCH = 50
"""Worktrees asked to be released per pass (and link): the next pass takes the rest."""


class WorkspaceKeeper:
    """The loop that releases ended issues' worktrees on the runners connected here."""

    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        links: Mapping[uuid.UUID, RunnerLink],
        *,
        retention: timedelta,
        pass_seconds: float,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.sessions = sessions
        self.links = links
        self.retention = retention
        self.pass_seconds = pass_seconds
        self.clock = clock

    async def run(self) -> None:
        """A pass every ``pass_seconds`` until cancelled; a failed pass is logged and retried."""
        await keep_running(
            self.sweep,
            every=self.pass_seconds,
            log=log,
            failure="releasing ended issues' worktrees failed",
        )

    async def sweep(self) -> int:
        """One pass: mark when each ended issue's worktree may go, ask for the due ones;
        how many were asked for."""
        now = self.clock()
        async with self.sessions.begin() as session:
            await self._mark(session)
        asked = 0
        for link in list(self.links.values()):
            if FEATURE_WORKSPACES in link.features and not link.closed.is_set():
                asked += await self._release_due(link, now)
        return asked

    async def _mark(self, session: AsyncSession) -> None:
        """The retention starts when an issue ended (its last change), and stops if it is reopened."""
        await session.execute(
            update(IssueWorkspace)
            .where(
                IssueWorkspace.status == WorkspaceStatus.READY,
                IssueWorkspace.release_after.is_(None),
                Issue.id == IssueWorkspace.issue_id,
                Issue.status.in_(ENDED),
            )
            .values(release_after=Issue.updated_at + self.retention)
        )
        await session.execute(
            update(IssueWorkspace)
            .where(
                IssueWorkspace.status == WorkspaceStatus.READY,
                IssueWorkspace.release_after.is_not(None),
                Issue.id == IssueWorkspace.issue_id,
                Issue.status.not_in(ENDED),
            )
            .values(release_after=None, error_code=None, error_message=None)
        )

    async def _release_due(self, link: RunnerLink, now: datetime) -> int:
        async with self.sessions.begin() as session:
            rows = (
                (
                    await session.execute(
                        select(IssueWorkspace)
                        .join(Issue, Issue.id == IssueWorkspace.issue_id)
                        .where(
                            IssueWorkspace.status == WorkspaceStatus.READY,
                            IssueWorkspace.release_after <= now,
                            IssueWorkspace.runner_id == link.runner_id,
                            Issue.status.in_(ENDED),
                            ~exists().where(
                                and_(
                                    Run.issue_id == IssueWorkspace.issue_id,
                                    Run.status.in_(ACTIVE_RUN_STATUSES),
                                )
                            ),
                        )
                        .order_by(IssueWorkspace.release_after)
                        .limit(BATCH)
                        .with_for_update(of=IssueWorkspace, skip_locked=True)
                    )
                )
                .scalars()
                .all()
            )
            for row in rows:
                await outbox.enqueue_one(
                    session,
                    link.runner_id,
                    ReleaseWorkspace(seq=0, issue_id=row.issue_id, workspace=spec_of(row)),
                    attach=False,
                )
                row.status = WorkspaceStatus.RELEASING
                record_activity(
                    session,
                    SYSTEM,
                    "workspace.releasing",
                    entity_type="issue",
                    entity_id=row.issue_id,
                    company_id=row.company_id,
                    details={"branch": row.branch},
                )
        if rows:
            link.kick()
            log.info(
                "asked runner %s to remove %d ended issues' worktrees", link.runner_id, len(rows)
            )
        return len(rows)
