"""A company at a glance over HTTP: its inbox (what waits on a person) and its dashboard."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

import msgspec
from litestar import Controller, get

from paperclip.domain.holds.holds_routes import HoldOut
from paperclip.domain.holds.interactions_routes import InteractionOut
from paperclip.domain.issues.schemas import IssuePriorityName, IssueStatusName
from paperclip.domain.overview.dashboard import AgentLoad, DashboardQueries
from paperclip.domain.overview.inbox import InboxQueries
from paperclip.domain.runs.live_state import failure_reason
from paperclip.domain.runs.schemas import RunStatusName
from paperclip.http.access import Access, access
from paperclip.http.errors import error_responses
from paperclip.models import Issue, Run


class IssueBrief(msgspec.Struct):
    """The issue an item is about, enough to name and link it."""

    id: uuid.UUID
    identifier: str
    title: str
    status: IssueStatusName
    priority: IssuePriorityName
    assignee_agent_id: uuid.UUID | None

    @classmethod
    def of(cls, issue: Issue | None) -> IssueBrief | None:
        return None if issue is None else msgspec.convert(issue, cls, from_attributes=True)


class RunBrief(msgspec.Struct):
    """A run in a list: who, what, how far, and how it ended."""

    id: uuid.UUID
    agent_id: uuid.UUID
    issue: IssueBrief | None
    status: RunStatusName
    phase: str
    provider: str
    turn: int
    status_reason: str | None
    error_code: str | None
    error_message: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    reason: str | None = None
    """A failed run's reason as one plain sentence (its code is ``error_code``)."""

    @classmethod
    def of(cls, run: Run, issue: Issue | None) -> RunBrief:
        fields: dict[str, Any] = {
            name: getattr(run, name)
            for name in cls.__struct_fields__
            if name not in ("issue", "reason")
        }
        reason = (
            failure_reason(run.error_code, run.error_message) if run.status == "failed" else None
        )
        return msgspec.convert(fields | {"issue": IssueBrief.of(issue), "reason": reason}, cls)


class WaitingInteraction(InteractionOut):
    issue: IssueBrief | None = None


class StandingHold(HoldOut):
    issue: IssueBrief | None = None


class InboxCounts(msgspec.Struct):
    interactions: int
    holds: int
    failed_runs: int
    blocked_issues: int


class InboxTotal(InboxCounts):
    total: int
    """Everything that waits on a person: the four counts added up."""


class InboxOut(msgspec.Struct):
    interactions: list[WaitingInteraction]
    """Pending questions, confirmations, approvals, stages and blockers, newest first."""
    holds: list[StandingHold]
    """Active holds, newest first."""
    failed_runs: list[RunBrief]
    """Failed runs nothing ran after while their issue is open, newest first."""
    blocked_issues: list[IssueBrief]
    """Blocked issues no agent is on (no run or wake for them), latest changed first: a
    blocker past the top of the org chart."""
    counts: InboxCounts
    """Each list's full length (a list shows at most 100)."""


class AgentLoadOut(msgspec.Struct):
    agent_id: uuid.UUID
    name: str
    provider: str
    status: str
    active_runs: int
    queued_wakes: int
    open_issues: int
    runs_recent: int
    failed_recent: int

    @classmethod
    def of(cls, load: AgentLoad) -> AgentLoadOut:
        a = load.agent
        return cls(
            agent_id=a.id,
            name=a.name,
            provider=a.provider,
            status=a.status,
            active_runs=load.active_runs,
            queued_wakes=load.queued_wakes,
            open_issues=load.open_issues,
            runs_recent=load.runs_recent,
            failed_recent=load.failed_recent,
        )


class DashboardOut(msgspec.Struct):
    active_runs: list[RunBrief]
    """Queued and running runs, newest first (at most 50)."""
    recent_failures: list[RunBrief]
    """The last 10 failed runs, newest first."""
    agents: list[AgentLoadOut]
    """Each agent's load: runs now, wakes waiting, open issues, runs and failures lately."""
    issues_by_status: dict[str, int]
    since: datetime
    """Where "lately" (``runs_recent``, ``failed_recent``) starts: 24 hours ago."""


def _with_issue(out: Any, issue: Issue) -> Any:
    return msgspec.structs.replace(out, issue=IssueBrief.of(issue))


class OverviewController(Controller):
    path = "/companies/{company_id:uuid}"
    tags = ["overview"]

    @get(
        "/inbox",
        opt=access(Access.READ),
        responses=error_responses(404),
        description="What waits on a person across the company: pending interactions (cards, "
        "approvals, stages, blockers), active holds, failed runs not looked at yet (the "
        "latest run of an open issue, or of its agent without one), and blocked issues no agent "
        "is on. Each list newest first, at most 100 items, with full counts.",
    )
    async def inbox(self, company_id: uuid.UUID, inbox: InboxQueries) -> InboxOut:
        found = await inbox.inbox(company_id)
        return InboxOut(
            interactions=[
                _with_issue(WaitingInteraction.of(i), issue) for i, issue in found.interactions
            ],
            holds=[_with_issue(StandingHold.of(h), issue) for h, issue in found.holds],
            failed_runs=[RunBrief.of(r, issue) for r, issue in found.failed_runs],
            blocked_issues=[
                msgspec.convert(issue, IssueBrief, from_attributes=True)
                for issue in found.blocked_issues
            ],
            counts=InboxCounts(**found.counts),
        )

    @get(
        "/inbox/count",
        opt=access(Access.READ),
        responses=error_responses(404),
        description="How many things wait on a person (the inbox's counts, and their total), "
        "without the items: what the board's header shows.",
    )
    async def inbox_count(self, company_id: uuid.UUID, inbox: InboxQueries) -> InboxTotal:
        counts = await inbox.counts(company_id)
        return InboxTotal(total=sum(counts.values()), **counts)

    @get(
        "/dashboard",
        opt=access(Access.READ),
        responses=error_responses(404),
        description="The company at a glance: runs queued or running now, the latest failures, "
        "each agent's load, and the issues counted by status.",
    )
    async def dashboard(self, company_id: uuid.UUID, dashboard: DashboardQueries) -> DashboardOut:
        found = await dashboard.dashboard(company_id)
        return DashboardOut(
            active_runs=[RunBrief.of(r, issue) for r, issue in found.active_runs],
            recent_failures=[RunBrief.of(r, issue) for r, issue in found.recent_failures],
            agents=[AgentLoadOut.of(load) for load in found.agents],
            issues_by_status=found.issues_by_status,
            since=found.since,
        )
