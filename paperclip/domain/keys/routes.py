"""A company's API keys: listed, made and revoked by the company's admins.

Instance-admin keys are made only with ``paperclip keys create`` on the server's machine.
"""

from __future__ import annotations

import uuid

from litestar import Controller, get, post
from litestar.status_codes import HTTP_200_OK

from paperclip.common.actor import Actor
from paperclip.domain.keys.api_keys import ApiKeyService
from paperclip.domain.keys.schemas import ApiKeyCreate, ApiKeyCreated, ApiKeyOut
from paperclip.http.access import Access, access
from paperclip.http.cursors import Pages
from paperclip.http.errors import error_responses
from paperclip.http.pagination import Page
from paperclip.http.params import PAGE_SIZE_DEFAULT, Limit, PageCursor
from paperclip.models import KeyRole


class ApiKeyController(Controller):
    path = "/companies/{company_id:uuid}/api-keys"
    tags = ["api keys"]

    @get("/", opt=access(Access.MANAGE), responses=error_responses(404))
    async def list_api_keys(
        self,
        company_id: uuid.UUID,
        api_keys: ApiKeyService,
        pages: Pages,
        cursor: PageCursor = None,
        limit: Limit = PAGE_SIZE_DEFAULT,
    ) -> Page[ApiKeyOut]:
        """The company's keys, revoked ones included (never their secrets)."""
        rows, end = await api_keys.list(company_id, after=pages.after(cursor), limit=limit)
        return pages.page([ApiKeyOut.of(k) for k in rows], end)

    @post("/", opt=access(Access.MANAGE), responses=error_responses(404, 409, 422))
    async def create_api_key(
        self, company_id: uuid.UUID, data: ApiKeyCreate, api_keys: ApiKeyService, actor: Actor
    ) -> ApiKeyCreated:
        """A key of this company with a role; its secret is in this answer only."""
        key, secret = await api_keys.create(
            data.name, company_id=company_id, role=KeyRole(data.role), actor=actor
        )
        return ApiKeyCreated(ApiKeyOut.of(key), secret)

    @post(
        "/{key_id:uuid}/revoke",
        status_code=HTTP_200_OK,
        opt=access(Access.MANAGE),
        responses=error_responses(404, 409),
    )
    async def revoke_api_key(
        self, company_id: uuid.UUID, key_id: uuid.UUID, api_keys: ApiKeyService, actor: Actor
    ) -> ApiKeyOut:
        """Revoke a key: refused from now on. Revoking it again is ``409 api_key_already_revoked``."""
        return ApiKeyOut.of(await api_keys.revoke(key_id, company_id=company_id, actor=actor))
