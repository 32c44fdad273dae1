"""Routines: issue templates that start work by themselves (cron, a signed webhook, a call)."""

from __future__ import annotations

import uuid
from typing import Annotated, Any, Literal

from litestar import Controller, Request, Response, delete, get, patch, post
from litestar.openapi.datastructures import ResponseSpec
from litestar.params import HeaderParameter
from litestar.status_codes import HTTP_200_OK, HTTP_201_CREATED

from paperclip.common.actor import Actor
from paperclip.domain.routines.routine_executions import ExecutionOutcome
from paperclip.domain.routines.routine_secrets import SIGNATURE_HEADERS
from paperclip.domain.routines.routines import RoutineService
from paperclip.domain.routines.schemas import (
    ExecutionOut,
    RoutineCreate,
    RoutineOut,
    RoutineRun,
    RoutineUpdate,
)
from paperclip.errors import InvalidInputError
from paperclip.http.access import Access, access
from paperclip.http.cursors import Pages
from paperclip.http.errors import error_responses
from paperclip.http.fields import changes
from paperclip.http.pagination import Page
from paperclip.http.params import PAGE_SIZE_DEFAULT, Limit, PageCursor

MAX_KEY = 200

CREATED_OR_REPLAYED = {
    200: ResponseSpec(
        data_container=ExecutionOut,
        description="the key was used before: its execution, nothing run again",
        generate_examples=False,
    ),
}


def _answer(outcome: ExecutionOutcome) -> Response[ExecutionOut]:
    return Response(
        ExecutionOut.of(outcome.execution, deduplicated=not outcome.created),
        status_code=HTTP_201_CREATED if outcome.created else HTTP_200_OK,
    )


class RoutineController(Controller):
    path = "/companies/{company_id:uuid}/routines"
    tags = ["routines"]

    @get("/", opt=access(Access.READ), responses=error_responses(404))
    async def list_routines(
        self,
        company_id: uuid.UUID,
        routines: RoutineService,
        pages: Pages,
        cursor: PageCursor = None,
        limit: Limit = PAGE_SIZE_DEFAULT,
    ) -> Page[RoutineOut]:
        rows, end = await routines.list(company_id, after=pages.after(cursor), limit=limit)
        return pages.page([RoutineOut.of(r, routines.next_runs(r)) for r in rows], end)

    @post(
        "/",
        opt=access(Access.MANAGE),
        responses=error_responses(404, 409, 422),
        description="Make a routine. 422 ``invalid_cron``, ``unknown_timezone``, "
        "``unknown_placeholder`` (each naming its field), ``agent_not_found``, "
        "``project_not_found``; 409 ``routine_name_taken``. With ``webhook``, the answer's "
        "``webhook_secret`` is the only time the secret is shown.",
    )
    async def create_routine(
        self, company_id: uuid.UUID, data: RoutineCreate, routines: RoutineService, actor: Actor
    ) -> RoutineOut:
        fields = {f: getattr(data, f) for f in data.__struct_fields__}
        routine, secret = await routines.create(actor, company_id, fields)
        return RoutineOut.of(routine, routines.next_runs(routine), secret)

    @get("/{routine_id:uuid}", opt=access(Access.READ), responses=error_responses(404))
    async def get_routine(
        self, company_id: uuid.UUID, routine_id: uuid.UUID, routines: RoutineService
    ) -> RoutineOut:
        routine = await routines.get(company_id, routine_id)
        return RoutineOut.of(routine, routines.next_runs(routine))

    @patch(
        "/{routine_id:uuid}",
        opt=access(Access.MANAGE),
        responses=error_responses(404, 409, 422),
        description="Change a routine: its 422s are those of creation. A new schedule, time "
        "zone, or enabling it starts the schedule again from now (slots of the time it was "
        "off never run). ``webhook: true`` answers the new secret once; ``false`` removes it.",
    )
    async def update_routine(
        self,
        company_id: uuid.UUID,
        routine_id: uuid.UUID,
        data: RoutineUpdate,
        routines: RoutineService,
        actor: Actor,
    ) -> RoutineOut:
        routine, secret = await routines.update(actor, company_id, routine_id, changes(data))
        return RoutineOut.of(routine, routines.next_runs(routine), secret)

    @delete("/{routine_id:uuid}", opt=access(Access.MANAGE), responses=error_responses(404))
    async def delete_routine(
        self, company_id: uuid.UUID, routine_id: uuid.UUID, routines: RoutineService, actor: Actor
    ) -> None:
        await routines.delete(actor, company_id, routine_id)

    @post(
        "/{routine_id:uuid}/run",
        opt=access(Access.WRITE),
        responses={**CREATED_OR_REPLAYED, **error_responses(404, 409)},
        description="Run the routine now: one execution (``201``), decided by its concurrency "
        "policy like any slot: ``started``, ``queued`` or ``skipped``. The same "
        "``idempotency_key`` again: ``200`` with that execution (``deduplicated``), nothing "
        "run. 409 ``routine_disabled``.",
    )
    async def run_routine(
        self,
        company_id: uuid.UUID,
        routine_id: uuid.UUID,
        data: RoutineRun,
        routines: RoutineService,
        actor: Actor,
    ) -> Response[ExecutionOut]:
        outcome = await routines.run(
            actor, company_id, routine_id, key=data.idempotency_key, payload=data.payload
        )
        return _answer(outcome)

    @post(
        "/{routine_id:uuid}/webhook-secret",
        status_code=HTTP_200_OK,
        opt=access(Access.MANAGE),
        responses=error_responses(404, 409),
        description="Rotate the webhook's secret: the answer's ``webhook_secret`` is the new "
        "one (shown this once); the old one is refused from now on. 409 "
        "``webhook_not_enabled``.",
    )
    async def rotate_webhook_secret(
        self, company_id: uuid.UUID, routine_id: uuid.UUID, routines: RoutineService, actor: Actor
    ) -> RoutineOut:
        routine, secret = await routines.rotate_secret(actor, company_id, routine_id)
        return RoutineOut.of(routine, routines.next_runs(routine), secret)

    @get(
        "/{routine_id:uuid}/executions",
        opt=access(Access.READ),
        responses=error_responses(404),
        description="The routine's executions, newest first, cursor pages; filter ``status``.",
    )
    async def list_executions(
        self,
        company_id: uuid.UUID,
        routine_id: uuid.UUID,
        routines: RoutineService,
        pages: Pages,
        status: Literal["started", "queued", "skipped"] | None = None,
        cursor: PageCursor = None,
        limit: Limit = PAGE_SIZE_DEFAULT,
    ) -> Page[ExecutionOut]:
        rows, end = await routines.executions(
            company_id, routine_id, status=status, after=pages.after(cursor), limit=limit
        )
        return pages.page([ExecutionOut.of(r) for r in rows], end)

    @post(
        "/{routine_id:uuid}/webhook",
        opt=access(Access.PUBLIC),
        security=[],
        responses={**CREATED_OR_REPLAYED, **error_responses(401, 404, 409, 422)},
        description="The routine's webhook: no API key; the body (JSON) is signed instead, "
        "``X-Paperclip-Signature: sha256=<hex HMAC-SHA256 of the exact body under the "
        "routine's secret>`` (GitHub's ``X-Hub-Signature-256`` is read too). "
        "``Idempotency-Key`` (or GitHub's ``X-GitHub-Delivery``) names the delivery: the same "
        "key again answers ``200`` with its execution and runs nothing. 401 "
        "``invalid_signature`` (nothing written); 409 ``routine_disabled``; 422 "
        "``idempotency_key_required``.",
    )
    async def routine_webhook(
        self,
        company_id: uuid.UUID,
        routine_id: uuid.UUID,
        request: Request[Any, Any, Any],
        routines: RoutineService,
        idempotency_key: Annotated[
            str | None,
            HeaderParameter(name="Idempotency-Key", max_length=MAX_KEY, required=False),
        ] = None,
    ) -> Response[ExecutionOut]:
        body = await request.body()
        headers = request.headers
        key = idempotency_key or headers.get("x-github-delivery")
        signature = next((headers[h] for h in SIGNATURE_HEADERS if h in headers), None)
        if not key or len(key) > MAX_KEY:
            # After the signature, so an unsigned call learns nothing; the 401 comes first.
            await routines.check_signature(company_id, routine_id, body, signature)
            raise InvalidInputError(
                "a webhook delivery needs an Idempotency-Key header (1 to 200 characters): "
                "its retries carry the same one, so they run once",
                code="idempotency_key_required",
                field="idempotency-key",
                source="header",
            )
        outcome = await routines.webhook(
            company_id, routine_id, body=body, signature=signature, key=key
        )
        return _answer(outcome)
