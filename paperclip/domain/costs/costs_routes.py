"""Costs: what was spent (by agent, project, issue, model, provider or day), the cost events,
and the instance's model prices."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Annotated, Literal

import msgspec
from litestar import Controller, delete, get, put
from litestar.params import Parameter
from litestar.status_codes import HTTP_200_OK
from msgspec import Meta

from paperclip.common.actor import Actor
from paperclip.common.queries import Cursor
from paperclip.domain.costs.cost_reports import CostReports, GroupBy, Totals
from paperclip.domain.costs.prices import Price, PriceService
from paperclip.errors import InvalidInputError
from paperclip.http.access import Access, access
from paperclip.http.cursors import Pages
from paperclip.http.errors import error_responses
from paperclip.http.pagination import Page
from paperclip.http.params import PAGE_SIZE_DEFAULT, Limit, PageCursor
from paperclip.models import CostEvent

# gt=-1, not ge=0: the OpenAPI document drops a bound of 0 (a falsy value).
Micros = Annotated[int, Meta(gt=-1, le=10**15)]
ModelName = Annotated[str, Meta(min_length=1, max_length=200, pattern=r"^[^/\s]+$")]
Currency = Annotated[str, Meta(min_length=3, max_length=8, pattern=r"^[A-Z]{3,8}$")]


class TotalsOut(msgspec.Struct):
    events: int
    input_tokens: int
    cached_input_tokens: int
    output_tokens: int
    reasoning_tokens: int
    cost_micros: int
    """In millionths of the currency (the sum of the events whose cost is known)."""
    unpriced_events: int
    """Events whose model had no price and whose provider said no cost: tokens only."""
    runs: int
    """The runs these events belong to, each counted once."""

    @classmethod
    def of(cls, totals: Totals) -> TotalsOut:
        return msgspec.convert(totals, cls, from_attributes=True)


class GroupOut(msgspec.Struct):
    key: str | None
    name: str | None
    totals: TotalsOut


class CostSummaryOut(msgspec.Struct):
    group_by: str
    since: datetime | None
    until: datetime | None
    totals: TotalsOut
    groups: list[GroupOut]


class CostEventOut(msgspec.Struct):
    id: int
    company_id: uuid.UUID
    agent_id: uuid.UUID
    project_id: uuid.UUID | None
    issue_id: uuid.UUID | None
    run_id: uuid.UUID
    turn: int
    key: str
    provider: str
    model: str
    input_tokens: int
    cached_input_tokens: int
    output_tokens: int
    reasoning_tokens: int
    cost_micros: int | None
    currency: str
    cost_source: Literal["provider", "priced", "unknown"]
    occurred_at: datetime

    @classmethod
    def of(cls, row: CostEvent) -> CostEventOut:
        return msgspec.convert(row, cls, from_attributes=True)


class PriceIn(msgspec.Struct, forbid_unknown_fields=True):
    input_per_million_micros: Micros
    cached_input_per_million_micros: Micros | None = None
    """Default: the input price."""
    output_per_million_micros: Micros = 0
    currency: Currency = "USD"


class PriceOut(msgspec.Struct):
    model: str
    input_per_million_micros: int
    cached_input_per_million_micros: int
    output_per_million_micros: int
    currency: str
    source: Literal["table", "settings"]


WithParts = Annotated[
    bool,
    Parameter(
        description="With `issue_id`: the issue's parts too, all the way down (a part's cost "
        "rolls up to the issue it is a part of)."
    ),
]


def _moment(text: str | None, field: str) -> datetime | None:
    """An ISO 8601 time or date of the query (a date is midnight UTC; no zone: UTC)."""
    if text is None:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise InvalidInputError(
            f"{field} is an ISO 8601 time or date (2026-12-01T00:00:00Z), not {text!r}",
            code="invalid_time",
            field=field,
            source="query",
        ) from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _position(row_id: int) -> Cursor:
    # Cost events are ordered by their identity column; the signed cursor carries it.
    return Cursor(datetime.fromtimestamp(0, UTC), uuid.UUID(int=row_id))


class CostController(Controller):
    path = "/companies/{company_id:uuid}"
    tags = ["costs"]

    @get("/costs", opt=access(Access.READ), responses=error_responses(404, 422))
    async def summary(
        self,
        company_id: uuid.UUID,
        costs: CostReports,
        group_by: GroupBy = "agent",
        since: Annotated[
            str | None,
            Parameter(
                max_length=40,
                description="Inclusive: an ISO 8601 time (`2026-12-01T00:00:00Z`) or date "
                "(midnight UTC).",
            ),
        ] = None,
        until: Annotated[
            str | None, Parameter(max_length=40, description="Exclusive, as `since`.")
        ] = None,
        agent_id: uuid.UUID | None = None,
        project_id: uuid.UUID | None = None,
        issue_id: uuid.UUID | None = None,
        run_id: uuid.UUID | None = None,
        with_parts: WithParts = False,
    ) -> CostSummaryOut:
        """What the company spent in a time range, summed and grouped (a day is a calendar day in
        the company's time zone); groups come largest cost first, at most 1,000."""
        filters = {
            "agent_id": agent_id,
            "project_id": project_id,
            "issue_id": issue_id,
            "run_id": run_id,
        }
        start, end = _moment(since, "since"), _moment(until, "until")
        totals, groups = await costs.summary(
            company_id,
            group_by=group_by,
            since=start,
            until=end,
            filters=filters,
            with_parts=with_parts,
        )
        return CostSummaryOut(
            group_by,
            start,
            end,
            TotalsOut.of(totals),
            [GroupOut(g.key, g.name, TotalsOut.of(g.totals)) for g in groups],
        )

    @get("/cost-events", opt=access(Access.READ), responses=error_responses(404, 422))
    async def cost_events(
        self,
        company_id: uuid.UUID,
        costs: CostReports,
        pages: Pages,
        agent_id: uuid.UUID | None = None,
        project_id: uuid.UUID | None = None,
        issue_id: uuid.UUID | None = None,
        run_id: uuid.UUID | None = None,
        with_parts: WithParts = False,
        cursor: PageCursor = None,
        limit: Limit = PAGE_SIZE_DEFAULT,
    ) -> Page[CostEventOut]:
        """Each model response's usage, recorded once, oldest first."""
        after = pages.after(cursor)
        rows, next_id = await costs.events(
            company_id,
            filters={
                "agent_id": agent_id,
                "project_id": project_id,
                "issue_id": issue_id,
                "run_id": run_id,
            },
            after_id=after.id.int if after is not None else None,
            limit=limit,
            with_parts=with_parts,
        )
        end = _position(next_id) if next_id is not None else None
        return pages.page([CostEventOut.of(r) for r in rows], end)


class PriceController(Controller):
    path = "/prices"
    tags = ["costs"]

    @get("/", opt=access(Access.SIGNED_IN))
    async def list_prices(self, prices: PriceService) -> list[PriceOut]:
        """Every model price in force: the table's (``source: table``) over the settings'."""
        return [
            PriceOut(
                p.model,
                p.input_per_million_micros,
                p.cached_input_per_million_micros,
                p.output_per_million_micros,
                p.currency,
                source,  # type: ignore[arg-type]
            )
            for p, source in await prices.list()
        ]

    @put(
        "/{model:str}",
        status_code=HTTP_200_OK,
        opt=access(Access.INSTANCE),
        responses=error_responses(422),
    )
    async def put_price(
        self, model: ModelName, data: PriceIn, prices: PriceService, actor: Actor
    ) -> PriceOut:
        """Set a model's price (per million tokens, in millionths of the currency)."""
        price = await prices.put(
            actor,
            Price(
                model,
                data.input_per_million_micros,
                data.cached_input_per_million_micros
                if data.cached_input_per_million_micros is not None
                else data.input_per_million_micros,
                data.output_per_million_micros,
                data.currency,
            ),
        )
        return PriceOut(
            price.model,
            price.input_per_million_micros,
            price.cached_input_per_million_micros,
            price.output_per_million_micros,
            price.currency,
            "table",
        )

    @delete("/{model:str}", opt=access(Access.INSTANCE), responses=error_responses(404))
    async def delete_price(self, model: ModelName, prices: PriceService, actor: Actor) -> None:
        """Remove a model's price from the table (the settings' price, if any, applies again)."""
        await prices.delete(actor, model)
