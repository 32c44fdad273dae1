"""Budgets: monthly caps on what a company, an agent or a project spends, with this month's figures."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Literal

import msgspec
from litestar import Controller, delete, get, patch, post
from msgspec import UNSET, Meta, UnsetType

from paperclip.common.actor import Actor
from paperclip.domain.costs.budgets import BudgetService, BudgetView
from paperclip.http.access import Access, access
from paperclip.http.cursors import Pages
from paperclip.http.errors import error_responses
from paperclip.http.fields import changes
from paperclip.http.pagination import Page
from paperclip.http.params import PAGE_SIZE_DEFAULT, Limit, PageCursor

# gt=-1, not ge=0: the OpenAPI document drops a bound of 0 (a falsy value).
Micros = Annotated[int, Meta(gt=-1, le=10**15)]
Percent = Annotated[int, Meta(ge=1, le=100)]
Currency = Annotated[str, Meta(min_length=3, max_length=8, pattern=r"^[A-Z]{3,8}$")]
ScopeName = Literal["company", "agent", "project"]


class BudgetCreate(msgspec.Struct, forbid_unknown_fields=True):
    scope: ScopeName
    monthly_limit_micros: Micros
    """The month's cap, in millionths of ``currency`` (50 USD: ``50000000``)."""
    scope_id: uuid.UUID | None = None
    """The agent or project (a company budget covers its own company: leave it out)."""
    warn_percent: Percent = 80
    run_reserve_micros: Micros = 0
    """Held against the cap when a run starts, until its own costs replace it (0: none)."""
    currency: Currency = "USD"


class BudgetUpdate(msgspec.Struct, forbid_unknown_fields=True):
    monthly_limit_micros: Micros | UnsetType = UNSET
    warn_percent: Percent | UnsetType = UNSET
    run_reserve_micros: Micros | UnsetType = UNSET


class BudgetOut(msgspec.Struct):
    id: uuid.UUID
    company_id: uuid.UUID
    scope: ScopeName
    scope_id: uuid.UUID
    monthly_limit_micros: int
    warn_percent: int
    run_reserve_micros: int
    currency: str
    month: str
    """This month (``YYYY-MM``, in the company's time zone)."""
    spent_micros: int
    reserved_micros: int
    """What running runs hold of it."""
    warned: bool
    exceeded: bool
    """Spent: no new run starts, live runs stop at their next tool call."""
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, view: BudgetView) -> BudgetOut:
        b = view.budget
        return cls(
            id=b.id,
            company_id=b.company_id,
            scope=b.scope,  # type: ignore[arg-type]
            scope_id=b.scope_id,
            monthly_limit_micros=b.monthly_limit_micros,
            warn_percent=b.warn_percent,
            run_reserve_micros=b.run_reserve_micros,
            currency=b.currency,
            month=view.month,
            spent_micros=view.spent_micros,
            reserved_micros=view.reserved_micros,
            warned=view.warned,
            exceeded=view.exceeded,
            created_at=b.created_at,
            updated_at=b.updated_at,
        )


class BudgetController(Controller):
    path = "/companies/{company_id:uuid}/budgets"
    tags = ["costs"]

    @get("/", opt=access(Access.READ), responses=error_responses(404))
    async def list_budgets(
        self,
        company_id: uuid.UUID,
        budgets: BudgetService,
        pages: Pages,
        cursor: PageCursor = None,
        limit: Limit = PAGE_SIZE_DEFAULT,
    ) -> Page[BudgetOut]:
        rows, end = await budgets.list(company_id, after=pages.after(cursor), limit=limit)
        return pages.page([BudgetOut.of(v) for v in rows], end)

    @post("/", opt=access(Access.MANAGE), responses=error_responses(404, 409, 422))
    async def create_budget(
        self, company_id: uuid.UUID, data: BudgetCreate, budgets: BudgetService, actor: Actor
    ) -> BudgetOut:
        """One budget per company, agent or project (``409 budget_exists``)."""
        view = await budgets.create(
            actor,
            company_id,
            scope=data.scope,
            scope_id=data.scope_id,
            monthly_limit_micros=data.monthly_limit_micros,
            warn_percent=data.warn_percent,
            run_reserve_micros=data.run_reserve_micros,
            currency=data.currency,
        )
        return BudgetOut.of(view)

    @get("/{budget_id:uuid}", opt=access(Access.READ), responses=error_responses(404))
    async def get_budget(
        self, company_id: uuid.UUID, budget_id: uuid.UUID, budgets: BudgetService
    ) -> BudgetOut:
        return BudgetOut.of(await budgets.get(company_id, budget_id))

    @patch("/{budget_id:uuid}", opt=access(Access.MANAGE), responses=error_responses(404, 422))
    async def update_budget(
        self,
        company_id: uuid.UUID,
        budget_id: uuid.UUID,
        data: BudgetUpdate,
        budgets: BudgetService,
        actor: Actor,
    ) -> BudgetOut:
        """Raising the cap lets the work it held go on (within the budget keeper's pass)."""
        return BudgetOut.of(await budgets.update(actor, company_id, budget_id, changes(data)))

    @delete("/{budget_id:uuid}", opt=access(Access.MANAGE), responses=error_responses(404))
    async def delete_budget(
        self, company_id: uuid.UUID, budget_id: uuid.UUID, budgets: BudgetService, actor: Actor
    ) -> None:
        await budgets.delete(actor, company_id, budget_id)
