"""``delegate``: a part of the run's task handed to one of the agent's reports.

The part is a new issue (a part of the task, assigned to the report, which is
woken), written in the call's dispatch transaction: with the call's receipt
and result, so a replay after any restart gets the saved result and never a
second issue. Only an agent below the caller in the org chart may be given
one (docs/company.md).
"""

from __future__ import annotations

import uuid

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from paperclip.domain.agents.org_chart import reports_below
from paperclip.domain.issues.issues import create_issue
from paperclip.domain.runs.wakes import request_wake
from paperclip.engine.tools.base import ToolContext, ToolOutcome, error
from paperclip.models import Agent, AgentStatus, Issue, IssueStatus


async def delegate(ctx: ToolContext) -> ToolOutcome:
    run = ctx.locked
    if run.issue_id is None:
        return error("no_task", "this run has no task to hand a part of")
    if ctx.numbers is None:
        return error("unavailable", "issues cannot be made here")
    session = ctx.session
    chosen = await _report(session, run.company_id, run.agent_id, ctx.arguments["to"])
    if isinstance(chosen, ToolOutcome):
        return chosen
    task = await session.get_one(Issue, run.issue_id)
    number = await ctx.numbers.one(run.company_id)
    part = await create_issue(
        session,
        ctx.actor,
        run.company_id,
        number=number,
        title=ctx.arguments["title"],
        description=ctx.arguments.get("description", ""),
        status=IssueStatus.TODO,
        priority=task.priority,
        assignee=chosen,
        parent_id=task.id,
        project_id=task.project_id,
    )
    await request_wake(
        session,
        ctx.actor,
        company_id=run.company_id,
        agent_id=chosen.id,
        issue_id=part.id,
        source="assignment",
        reason=f"a part of {task.identifier}",
    )
    return ToolOutcome(
        {
            "issue_id": str(part.id),
            "identifier": part.identifier,
            "assignee": chosen.name,
            "_state_revision": str(part.id),
        }
    )


async def _report(
    session: AsyncSession, company_id: uuid.UUID, caller: uuid.UUID, to: str
) -> Agent | ToolOutcome:
    """The caller's report ``to`` names (by name, else by role), or the refusal to return."""
    below = await reports_below(session, company_id, caller)
    wanted = to.strip().lower()
    named = (
        await session.execute(
            select(Agent).where(Agent.company_id == company_id, func.lower(Agent.name) == wanted)
        )
    ).scalar_one_or_none()
    if named is None:
        by_role = [
            agent
            for agent in (
                await session.execute(
                    select(Agent)
                    .where(Agent.id.in_(below), func.lower(Agent.role) == wanted)
                    .order_by(Agent.name)
                )
            ).scalars()
        ]
        if len(by_role) > 1:
            names = ", ".join(agent.name for agent in by_role)
            return error(
                "ambiguous_report",
                f"several of your reports are {to!r} ({names}): name one of them",
            )
        named = by_role[0] if by_role else None
    if named is None:
        return error("unknown_report", f"no agent of your company is named {to!r}")
    if named.id not in below:
        return error(
            "not_your_report",
            f"{named.name} does not report to you, directly or through others: hand parts "
            "only to the agents below you",
        )
    if named.status == AgentStatus.PAUSED:
        return error("agent_paused", f"{named.name} is paused: it would not start the part")
    return named
