from __future__ import annotations

import uuid
from typing import Annotated

from litestar import Controller, get
from litestar.params import Parameter

from paperclip.api.access import Access, access
from paperclip.api.cursors import Pages
from paperclip.api.errors import error_responses
from paperclip.api.pagination import Page
from paperclip.api.params import PAGE_SIZE_DEFAULT, PAGE_SIZE_MAX, Limit, PageCursor
from paperclip.api.schemas import (
    RunEventOut,
    RunEventPage,
    RunOut,
    RunStatusName,
    RunTurnList,
    RunTurnOut,
)
from paperclip.services.runs import RunQueries

SEQ_MAX = 2**31 - 1
"""Largest ``after_seq``: a run event's ``seq`` is a 32-bit column."""


class RunController(Controller):
    path = "/companies/{company_id:uuid}/runs"
    tags = ["runs"]

    @get("/", opt=access(Access.READ), responses=error_responses(404))
    async def list_runs(
        self,
        company_id: uuid.UUID,
        runs: RunQueries,
        pages: Pages,
        agent_id: uuid.UUID | None = None,
        issue_id: uuid.UUID | None = None,
        status: RunStatusName | None = None,
        cursor: PageCursor = None,
        limit: Limit = PAGE_SIZE_DEFAULT,
    ) -> Page[RunOut]:
        rows, end = await runs.list(
            company_id,
            agent_id=agent_id,
            issue_id=issue_id,
            status=status,
            after=pages.after(cursor),
            limit=limit,
        )
        return pages.page([RunOut.of(r) for r in rows], end)

    @get("/{run_id:uuid}", opt=access(Access.READ), responses=error_responses(404))
    async def get_run(self, company_id: uuid.UUID, run_id: uuid.UUID, runs: RunQueries) -> RunOut:
        return RunOut.of(await runs.get(company_id, run_id))

    @get("/{run_id:uuid}/events", opt=access(Access.READ), responses=error_responses(404))
    async def list_run_events(
        self,
        company_id: uuid.UUID,
        run_id: uuid.UUID,
        runs: RunQueries,
        after_seq: Annotated[
            int, Parameter(ge=0, le=SEQ_MAX, description="Return events with a greater seq.")
        ] = 0,
        limit: Annotated[int, Parameter(ge=1, le=PAGE_SIZE_MAX * 5)] = PAGE_SIZE_MAX,
    ) -> RunEventPage:
        rows = await runs.events(company_id, run_id, after_seq=after_seq, limit=limit)
        return RunEventPage(
            [RunEventOut.of(r) for r in rows], rows[-1].seq if len(rows) == limit else None
        )

    @get("/{run_id:uuid}/turns", opt=access(Access.READ), responses=error_responses(404))
    async def list_run_turns(
        self, company_id: uuid.UUID, run_id: uuid.UUID, runs: RunQueries
    ) -> RunTurnList:
        """The run's turns, first to last: a run lost with its runner goes on in a next one."""
        return RunTurnList([RunTurnOut.of(t) for t in await runs.turns(company_id, run_id)])
