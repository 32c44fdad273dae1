"""The read side of runs and their event logs."""

from __future__ import annotations

import uuid

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from paperclip.common.queries import Cursor, SortKey, get_scoped, keyset_page
from paperclip.domain.companies.companies import require_company
from paperclip.domain.costs.cost_reports import Totals, run_totals
from paperclip.models import Agent, Issue, Run, RunEvent, RunTurn, ToolCall


class RunQueries:
    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self.sessions = sessions

    async def list(
        self,
        company_id: uuid.UUID,
        *,
        agent_id: uuid.UUID | None,
        issue_id: uuid.UUID | None,
        status: str | None,
        after: Cursor | None,
        limit: int,
        sort: SortKey = "created",
    ) -> tuple[list[Run], Cursor | None]:
        async with self.sessions() as session:
            await require_company(session, company_id)
            # A filter naming another company's row is answered like any foreign id.
            if agent_id is not None:
                await get_scoped(
                    session, Agent, company_id, agent_id, "agent", field="agent_id", source="query"
                )
            if issue_id is not None:
                await get_scoped(
                    session, Issue, company_id, issue_id, "issue", field="issue_id", source="query"
                )
            stmt = select(Run).where(Run.company_id == company_id)
            if agent_id is not None:
                stmt = stmt.where(Run.agent_id == agent_id)
            if issue_id is not None:
                stmt = stmt.where(Run.issue_id == issue_id)
            if status is not None:
                stmt = stmt.where(Run.status == status)
            return await keyset_page(session, stmt, Run, after, limit, sort)

    async def get(self, company_id: uuid.UUID, run_id: uuid.UUID) -> Run:
        async with self.sessions() as session:
            return await get_scoped(session, Run, company_id, run_id, "run")

    async def get_with_usage(self, company_id: uuid.UUID, run_id: uuid.UUID) -> tuple[Run, Totals]:
        """The run and its usage, summed over its cost events."""
        async with self.sessions() as session:
            run = await get_scoped(session, Run, company_id, run_id, "run")
            return run, await run_totals(session, run_id)

    async def events(
        self, company_id: uuid.UUID, run_id: uuid.UUID, *, after_seq: int, limit: int
    ) -> list[RunEvent]:
        async with self.sessions() as session:
            await get_scoped(session, Run, company_id, run_id, "run")
            stmt = (
                select(RunEvent)
                .where(RunEvent.run_id == run_id, RunEvent.seq > after_seq)
                .order_by(RunEvent.seq)
                .limit(limit)
            )
            return list((await session.execute(stmt)).scalars().all())

    async def turns(self, company_id: uuid.UUID, run_id: uuid.UUID) -> list[RunTurn]:
        """The run's turns, first to last (a run has a handful: no paging)."""
        async with self.sessions() as session:
            await get_scoped(session, Run, company_id, run_id, "run")
            stmt = select(RunTurn).where(RunTurn.run_id == run_id).order_by(RunTurn.number)
            return list((await session.execute(stmt)).scalars().all())

    async def tool_calls(
        self,
        company_id: uuid.UUID,
        run_id: uuid.UUID,
        *,
        tool: str | None,
        after: int | None,
        limit: int,
    ) -> tuple[list[ToolCall], int | None]:
        """One page of the run's tool journal in the order the calls were journaled, and the
        position (a journal row's id) the next page starts after, or None on the last page."""
        async with self.sessions() as session:
            await get_scoped(session, Run, company_id, run_id, "run")
            stmt = select(ToolCall).where(
                ToolCall.company_id == company_id, ToolCall.run_id == run_id
            )
            if tool is not None:
                stmt = stmt.where(ToolCall.tool == tool)
            if after is not None:
                stmt = stmt.where(ToolCall.id > after)
            rows = list(
                (await session.execute(stmt.order_by(ToolCall.id).limit(limit + 1))).scalars()
            )
            if len(rows) > limit:
                return rows[:limit], rows[limit - 1].id
            return rows, None
