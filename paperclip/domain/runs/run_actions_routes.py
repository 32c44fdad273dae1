"""``POST …/runs/{run_id}/retry`` and ``…/dismiss``: what a person does with a failed run."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated

import msgspec
from litestar import Controller, Response, post
from litestar.openapi.datastructures import ResponseSpec
from litestar.openapi.spec import Example
from litestar.params import HeaderParameter
from litestar.status_codes import HTTP_200_OK, HTTP_201_CREATED

from paperclip.common.actor import Actor
from paperclip.domain.runs.run_actions import RunActions
from paperclip.http.access import Access, access
from paperclip.http.errors import error_responses

MAX_KEY = 200


class RetryOut(msgspec.Struct):
    wake_request_id: uuid.UUID
    """The wake that runs the work again (the same one for every retry of this run)."""
    issue_id: uuid.UUID | None


class DismissOut(msgspec.Struct):
    run_id: uuid.UUID
    dismissed_at: datetime
    dismissed_by: str


RETRIED_BEFORE = {
    200: ResponseSpec(
        data_container=RetryOut,
        description="retried before (this key, or another retry of the run): the same wake",
        generate_examples=False,
    ),
}


class RunActionController(Controller):
    path = "/companies/{company_id:uuid}/runs/{run_id:uuid}"
    tags = ["runs"]

    @post(
        "/retry",
        opt=access(Access.WRITE),
        status_code=HTTP_201_CREATED,
        responses={**RETRIED_BEFORE, **error_responses(404, 409)},
        description="Run a failed run's work again: a wake of its agent for its issue "
        "(``201``), made once per run: a repeat, with the same ``Idempotency-Key`` or "
        "another, answers ``200`` with the same wake. The key is the wake's idempotency key; "
        "used before for another request to the agent, ``409 idempotency_key_reused``. "
        "409 ``run_not_failed``; 409 ``issue_closed`` (the issue is done or cancelled).",
    )
    async def retry_run(
        self,
        company_id: uuid.UUID,
        run_id: uuid.UUID,
        run_actions: RunActions,
        actor: Actor,
        idempotency_key: Annotated[
            str | None,
            HeaderParameter(
                name="Idempotency-Key",
                min_length=1,
                max_length=MAX_KEY,
                required=False,
                description="Names this retry: the same key again answers the same wake.",
                examples=[Example(value="5d1e0c1b-retry")],
            ),
        ] = None,
    ) -> Response[RetryOut]:
        retried = await run_actions.retry(actor, company_id, run_id, key=idempotency_key)
        return Response(
            RetryOut(wake_request_id=retried.wake.id, issue_id=retried.issue_id),
            status_code=HTTP_201_CREATED if retried.created else HTTP_200_OK,
        )

    @post(
        "/dismiss",
        opt=access(Access.WRITE),
        status_code=HTTP_200_OK,
        responses=error_responses(404, 409),
        description="Dismiss a failed run: it leaves the inbox (recorded once). 409 "
        "``run_not_failed``; 409 ``run_already_dismissed``.",
    )
    async def dismiss_run(
        self, company_id: uuid.UUID, run_id: uuid.UUID, run_actions: RunActions, actor: Actor
    ) -> DismissOut:
        run = await run_actions.dismiss(actor, company_id, run_id)
        assert run.dismissed_at is not None and run.dismissed_by is not None
        return DismissOut(
            run_id=run.id, dismissed_at=run.dismissed_at, dismissed_by=run.dismissed_by
        )
