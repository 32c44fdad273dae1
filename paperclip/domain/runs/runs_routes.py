from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

import msgspec
from litestar import Controller, get
from litestar.params import Parameter

from paperclip.common.queries import Cursor
from paperclip.domain.runs.runs import RunQueries
from paperclip.domain.runs.schemas import (
    RunEventOut,
    RunEventPage,
    RunOut,
    RunStatusName,
    RunTurnList,
    RunTurnOut,
    RunUsageOut,
)
from paperclip.http.access import Access, access
from paperclip.http.cursors import Pages
from paperclip.http.errors import error_responses
from paperclip.http.pagination import Page
from paperclip.http.params import PAGE_SIZE_DEFAULT, PAGE_SIZE_MAX, Limit, PageCursor, Sort
from paperclip.models import ToolCall

SEQ_MAX = 2**31 - 1
"""Largest ``after_seq``: a run event's ``seq`` is a 32-bit column."""

ToolName = Annotated[
    str | None,
    Parameter(min_length=1, max_length=100, description="Only the calls of this tool."),
]


class ToolCallOut(msgspec.Struct):
    """One call of the run's tool journal: what the model asked, and the result it got."""

    call_id: str
    """The runner's id of the call; a replayed call carries the same one."""
    tool: str
    arguments: dict[str, Any]
    status: Literal["pending", "settled"]
    """``pending``: journaled, no result saved yet; ``settled``: ``result`` is what the model got."""
    is_error: bool
    """A refusal or failure: ``result`` is ``{"error": {"code", "message", ...}}``."""
    result: dict[str, Any] | None
    admitted_by: str
    """The control-plane instance that admitted it, at ``admitted_epoch`` of the run's fence."""
    admitted_epoch: int
    settled_by: str | None
    settled_epoch: int | None
    created_at: datetime
    settled_at: datetime | None

    @classmethod
    def of(cls, row: ToolCall) -> ToolCallOut:
        return msgspec.convert(row, cls, from_attributes=True)


def _position(row_id: int) -> Cursor:
    # The journal's order is its identity column; the signed cursor carries it as its id.
    return Cursor(datetime.fromtimestamp(0, UTC), uuid.UUID(int=row_id))


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
        sort: Sort = "created",
        cursor: PageCursor = None,
        limit: Limit = PAGE_SIZE_DEFAULT,
    ) -> Page[RunOut]:
        """The company's runs, filtered; ``sort=-created`` lists the newest first."""
        pages = pages.sorted(sort)
        rows, end = await runs.list(
            company_id,
            agent_id=agent_id,
            issue_id=issue_id,
            status=status,
            after=pages.after(cursor),
            limit=limit,
            sort=sort,
        )
        return pages.page([RunOut.of(r) for r in rows], end)

    @get("/{run_id:uuid}", opt=access(Access.READ), responses=error_responses(404))
    async def get_run(self, company_id: uuid.UUID, run_id: uuid.UUID, runs: RunQueries) -> RunOut:
        """The run, with its ``usage`` (tokens and cost, summed over its cost events)."""
        run, totals = await runs.get_with_usage(company_id, run_id)
        return RunOut.of(run, msgspec.convert(totals, RunUsageOut, from_attributes=True))

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

    @get(
        "/{run_id:uuid}/tool-calls",
        opt=access(Access.READ),
        responses=error_responses(404),
        description="The run's tool journal, in the order the calls were journaled: each call "
        "of a core or plugin tool, its arguments, its status (pending: no result saved yet) and "
        "the result the model got (a refusal: is_error, result.error.code).",
    )
    async def list_run_tool_calls(
        self,
        company_id: uuid.UUID,
        run_id: uuid.UUID,
        runs: RunQueries,
        pages: Pages,
        tool: ToolName = None,
        cursor: PageCursor = None,
        limit: Limit = PAGE_SIZE_DEFAULT,
    ) -> Page[ToolCallOut]:
        """The run's tool journal, paged (``description`` above is what the API document says)."""
        after = pages.after(cursor)
        rows, end = await runs.tool_calls(
            company_id,
            run_id,
            tool=tool,
            after=after.id.int if after is not None else None,
            limit=limit,
        )
        return pages.page([ToolCallOut.of(r) for r in rows], _position(end) if end else None)
