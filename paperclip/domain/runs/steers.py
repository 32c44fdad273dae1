"""A person's steer into a run's live turn, as the routes see it: what was sent
(``SteerSent``) and the steering they are handed (``Steering``).

The steer itself is the engine's (``paperclip/engine/turns/steering.py``: the checks,
the exactly-once row, the runner's outbox); the composition root hands its
``RunSteering`` to the routes as ``Steering``, so no route imports the engine.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from sqlalchemy.ext.asyncio import AsyncSession

from paperclip.common.actor import Actor
from paperclip.models import Comment, Run

Delivery = Literal["steer", "follow_up"]


@dataclass(frozen=True, slots=True)
class SteerSent:
    run_id: uuid.UUID
    message_id: str
    comment_id: uuid.UUID | None
    turn: int
    delivery: Delivery
    """How the message reaches the model: ``steer`` (into the running turn), or
    ``follow_up`` (queued by the provider after the running step or turn)."""
    duplicate: bool
    """A repeated request: the steer was queued before and is not sent again."""


@runtime_checkable
class Steering(Protocol):
    """Steering as the routes use it (the engine's ``RunSteering``)."""

    async def steer_with_comment(
        self, actor: Actor, company_id: uuid.UUID, run_id: uuid.UUID, comment_id: uuid.UUID
    ) -> SteerSent:
        """Send the comment into the run's live turn (or find it sent before)."""
        ...

    async def steer_in(
        self, actor: Actor, session: AsyncSession, run: Run, comment: Comment
    ) -> SteerSent:
        """A person's comment into ``run``'s live turn, in the caller's transaction."""
        ...

    def kick(self, run: Run) -> None:
        """Committed: the run's runner link sends the steer now."""
        ...

    async def steer_with_interaction(
        self, actor: Actor, company_id: uuid.UUID, interaction_id: uuid.UUID
    ) -> SteerSent:
        """Send an answered card into the live turn of the run that raised it."""
        ...
