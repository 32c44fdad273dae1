"""Holds on tasks: list them, hold a task by hand, resolve a hold."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Literal

import msgspec
from litestar import Controller, get, post
from litestar.status_codes import HTTP_200_OK
from msgspec import Meta

from paperclip.common.actor import Actor
from paperclip.domain.holds.holds import HoldService
from paperclip.http.access import Access, access
from paperclip.http.cursors import Pages
from paperclip.http.errors import error_responses
from paperclip.http.fields import Body, JsonObject
from paperclip.http.pagination import Page
from paperclip.http.params import PAGE_SIZE_DEFAULT, Limit, PageCursor
from paperclip.models import TaskHold

Resolution = Annotated[str, Meta(min_length=1, max_length=100, pattern=r"^[a-z][a-z0-9_]*$")]
HoldStatusName = Literal["active", "resolved"]


class HoldCreate(msgspec.Struct, forbid_unknown_fields=True):
    issue_id: uuid.UUID
    reason: Body


class HoldResolve(msgspec.Struct, forbid_unknown_fields=True):
    resolution: Resolution = "released"
    """How it was resolved, as a word: ``released`` (the default), ``retried``, ..."""


class HoldOut(msgspec.Struct):
    id: uuid.UUID
    company_id: uuid.UUID
    issue_id: uuid.UUID
    run_id: uuid.UUID | None
    kind: str
    reason: str
    set_by: Literal["system", "operator"]
    set_by_actor: str
    replay_forbidden: bool
    status: HoldStatusName
    resolution: str | None
    resolved_by: Literal["system", "operator"] | None
    resolved_at: datetime | None
    details: JsonObject
    created_at: datetime

    @classmethod
    def of(cls, row: TaskHold) -> HoldOut:
        return msgspec.convert(row, cls, from_attributes=True)


class HoldController(Controller):
    path = "/companies/{company_id:uuid}/holds"
    tags = ["holds"]

    @get("/", opt=access(Access.READ), responses=error_responses(404))
    async def list_holds(
        self,
        company_id: uuid.UUID,
        holds: HoldService,
        pages: Pages,
        issue_id: uuid.UUID | None = None,
        status: HoldStatusName | None = None,
        cursor: PageCursor = None,
        limit: Limit = PAGE_SIZE_DEFAULT,
    ) -> Page[HoldOut]:
        rows, end = await holds.list(
            company_id, issue_id=issue_id, status=status, after=pages.after(cursor), limit=limit
        )
        return pages.page([HoldOut.of(r) for r in rows], end)

    @post("/", opt=access(Access.WRITE), responses=error_responses(404))
    async def create_hold(
        self, company_id: uuid.UUID, data: HoldCreate, holds: HoldService, actor: Actor
    ) -> HoldOut:
        """Hold a task by hand: its wakes start no run until the hold is resolved."""
        hold = await holds.create(actor, company_id, issue_id=data.issue_id, reason=data.reason)
        return HoldOut.of(hold)

    @get("/{hold_id:uuid}", opt=access(Access.READ), responses=error_responses(404))
    async def get_hold(
        self, company_id: uuid.UUID, hold_id: uuid.UUID, holds: HoldService
    ) -> HoldOut:
        return HoldOut.of(await holds.get(company_id, hold_id))

    @post(
        "/{hold_id:uuid}/resolve",
        opt=access(Access.WRITE),
        status_code=HTTP_200_OK,
        responses=error_responses(404, 409),
    )
    async def resolve_hold(
        self,
        company_id: uuid.UUID,
        hold_id: uuid.UUID,
        data: HoldResolve,
        holds: HoldService,
        actor: Actor,
    ) -> HoldOut:
        """Resolve an active hold, once; the task's agent is woken to take it up again."""
        return HoldOut.of(
            await holds.resolve(actor, company_id, hold_id, resolution=data.resolution)
        )
