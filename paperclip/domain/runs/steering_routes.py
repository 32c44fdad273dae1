"""``POST …/runs/{run_id}/steer``: a person sends a comment into the run's live turn."""

from __future__ import annotations

import uuid
from typing import Literal

import msgspec
from litestar import Controller, Response, post
from litestar.status_codes import HTTP_200_OK, HTTP_202_ACCEPTED

from paperclip.common.actor import Actor
from paperclip.domain.runs.steers import Steering, SteerSent
from paperclip.http.access import Access, access
from paperclip.http.errors import error_responses


class SteerCreate(msgspec.Struct, forbid_unknown_fields=True):
    comment_id: uuid.UUID
    """A person's comment on the run's issue; its text enters the running turn."""


class SteerOut(msgspec.Struct):
    run_id: uuid.UUID
    message_id: str
    """The steer's id in the run log (``steering_acknowledgement`` carries it)."""
    comment_id: uuid.UUID | None
    turn: int
    delivery: Literal["steer", "follow_up"]
    """``steer``: into the running turn; ``follow_up``: the provider has no true steer and
    queues the message after its running step or turn."""
    duplicate: bool

    @classmethod
    def of(cls, sent: SteerSent) -> SteerOut:
        return msgspec.convert(sent, cls, from_attributes=True)


class RunSteerController(Controller):
    path = "/companies/{company_id:uuid}/runs/{run_id:uuid}/steer"
    tags = ["runs"]

    @post(
        "/",
        opt=access(Access.WRITE),
        status_code=HTTP_202_ACCEPTED,
        responses=error_responses(404, 409, 422),
    )
    async def steer_run(
        self,
        company_id: uuid.UUID,
        run_id: uuid.UUID,
        data: SteerCreate,
        steering: Steering,
        actor: Actor,
    ) -> Response[SteerOut]:
        """Steer the run's live turn with a comment: 202 queued for the runner, 200 when
        this comment was steered into the run before (nothing is sent again)."""
        sent = await steering.steer_with_comment(actor, company_id, run_id, data.comment_id)
        status = HTTP_200_OK if sent.duplicate else HTTP_202_ACCEPTED
        return Response(SteerOut.of(sent), status_code=status)
