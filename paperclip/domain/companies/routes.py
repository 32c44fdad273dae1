from __future__ import annotations

import uuid

from litestar import Controller, delete, get, patch, post

from paperclip.common.actor import Actor
from paperclip.domain.companies.companies import CompanyService
from paperclip.domain.companies.schemas import CompanyCreate, CompanyOut, CompanyUpdate
from paperclip.http.access import Access, access
from paperclip.http.cursors import Pages
from paperclip.http.errors import error_responses
from paperclip.http.fields import changes
from paperclip.http.pagination import Page
from paperclip.http.params import PAGE_SIZE_DEFAULT, Limit, PageCursor


class CompanyController(Controller):
    path = "/companies"
    tags = ["companies"]

    @get("/", opt=access(Access.SIGNED_IN))
    async def list_companies(
        self,
        companies: CompanyService,
        actor: Actor,
        pages: Pages,
        cursor: PageCursor = None,
        limit: Limit = PAGE_SIZE_DEFAULT,
    ) -> Page[CompanyOut]:
        """The companies the caller may see: a company key sees its own only."""
        rows, end = await companies.list(actor, after=pages.after(cursor), limit=limit)
        return pages.page([CompanyOut.of(r) for r in rows], end)

    @post("/", opt=access(Access.INSTANCE), responses=error_responses(422))
    async def create_company(
        self, data: CompanyCreate, companies: CompanyService, actor: Actor
    ) -> CompanyOut:
        return CompanyOut.of(
            await companies.create(
                actor, name=data.name, issue_prefix=data.issue_prefix, time_zone=data.time_zone
            )
        )

    @get("/{company_id:uuid}", opt=access(Access.READ), responses=error_responses(404))
    async def get_company(self, company_id: uuid.UUID, companies: CompanyService) -> CompanyOut:
        return CompanyOut.of(await companies.get(company_id))

    @patch("/{company_id:uuid}", opt=access(Access.MANAGE), responses=error_responses(404, 422))
    async def update_company(
        self, company_id: uuid.UUID, data: CompanyUpdate, companies: CompanyService, actor: Actor
    ) -> CompanyOut:
        return CompanyOut.of(await companies.update(actor, company_id, changes(data)))

    @delete("/{company_id:uuid}", opt=access(Access.INSTANCE), responses=error_responses(404, 409))
    async def delete_company(
        self, company_id: uuid.UUID, companies: CompanyService, actor: Actor
    ) -> None:
        await companies.delete(actor, company_id)
