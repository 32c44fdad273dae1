"""Interactions on a task over HTTP: list, create (approvals, stages, blockers), act on one."""

from __future__ import annotations

import contextlib
import uuid
from datetime import datetime
from typing import Annotated, Any, Literal

import msgspec
from litestar import Controller, get, post
from litestar.status_codes import HTTP_200_OK, HTTP_201_CREATED

from paperclip.common.actor import Actor
from paperclip.domain.holds.interactions import InteractionService
from paperclip.domain.issues.issue_refs import ISSUE_IN_PATH
from paperclip.domain.runs.steers import Steering
from paperclip.errors import ConflictError
from paperclip.http.access import Access, access
from paperclip.http.cursors import Pages
from paperclip.http.errors import error_responses
from paperclip.http.pagination import Page
from paperclip.http.params import PAGE_SIZE_DEFAULT, Limit, PageCursor
from paperclip.models import Interaction
from paperclip.models.interaction import CARD_KINDS


class InteractionCreate(msgspec.Struct, forbid_unknown_fields=True):
    kind: Literal["approval", "execution_stage", "dependency"]
    title: Annotated[str, msgspec.Meta(min_length=1, max_length=500)]
    body: Annotated[str, msgspec.Meta(max_length=20_000)] = ""
    options: Annotated[list[str], msgspec.Meta(max_length=20)] = []
    conversation_id: uuid.UUID | None = None


class InteractionAct(msgspec.Struct, forbid_unknown_fields=True):
    action: Literal["answer", "approve", "reject", "request_revision", "resubmit", "resolve"]
    answer: Annotated[str, msgspec.Meta(max_length=20_000)] | None = None
    note: Annotated[str, msgspec.Meta(max_length=20_000)] | None = None


class InteractionOut(msgspec.Struct):
    id: uuid.UUID
    issue_id: uuid.UUID
    conversation_id: uuid.UUID | None
    run_id: uuid.UUID | None
    kind: str
    status: str
    title: str
    body: str
    options: list[Any]
    response: dict[str, Any] | None
    revision: int
    created_by: str
    resolved_by: str | None
    created_at: datetime

    @classmethod
    def of(cls, i: Interaction) -> InteractionOut:
        return msgspec.convert(i, cls, from_attributes=True)


class InteractionController(Controller):
    path = "/companies/{company_id:uuid}"
    tags = ["interactions"]

    @get(
        "/issues/{issue_id:str}/interactions",
        opt=access(Access.READ),
        dependencies=ISSUE_IN_PATH,
        responses=error_responses(404, 422),
    )
    async def list_interactions(
        self,
        company_id: uuid.UUID,
        issue_uuid: uuid.UUID,
        interactions: InteractionService,
        pages: Pages,
        cursor: PageCursor = None,
        limit: Limit = PAGE_SIZE_DEFAULT,
    ) -> Page[InteractionOut]:
        rows, end = await interactions.list(
            company_id, issue_uuid, after=pages.after(cursor), limit=limit
        )
        return pages.page([InteractionOut.of(r) for r in rows], end)

    @post(
        "/issues/{issue_id:str}/interactions",
        opt=access(Access.WRITE),
        dependencies=ISSUE_IN_PATH,
        status_code=HTTP_201_CREATED,
        responses=error_responses(404, 422),
    )
    async def create_interaction(
        self,
        company_id: uuid.UUID,
        issue_uuid: uuid.UUID,
        data: InteractionCreate,
        interactions: InteractionService,
        actor: Actor,
    ) -> InteractionOut:
        """Link an approval, an execution stage or a dependency blocker to the task: it holds
        the task while pending."""
        created = await interactions.create(
            actor,
            company_id,
            issue_uuid,
            kind=data.kind,
            title=data.title,
            body=data.body,
            options=data.options,
            conversation_id=data.conversation_id,
        )
        return InteractionOut.of(created)

    @post(
        "/interactions/{interaction_id:uuid}/actions",
        opt=access(Access.WRITE),
        status_code=HTTP_200_OK,
        responses=error_responses(403, 404, 409, 422),
    )
    async def act_on_interaction(
        self,
        company_id: uuid.UUID,
        interaction_id: uuid.UUID,
        data: InteractionAct,
        interactions: InteractionService,
        steering: Steering,
        actor: Actor,
    ) -> InteractionOut:
        """Answer a card; approve, reject, request a revision of, or resubmit an approval;
        resolve a stage or blocker. Each but resubmit wakes the task's agent; an answered
        card is also steered into the live turn of the run that raised it, if it has one."""
        response = {
            k: v for k, v in (("answer", data.answer), ("note", data.note)) if v is not None
        }
        acted = await interactions.act(
            actor, company_id, interaction_id, data.action, response=response
        )
        if data.action == "answer" and acted.kind in CARD_KINDS and acted.run_id is not None:
            # No live turn, or a provider that cannot steer: the wake alone carries it.
            with contextlib.suppress(ConflictError):
                await steering.steer_with_interaction(actor, company_id, acted.id)
        return InteractionOut.of(acted)
