"""Steering: a person sends a comment into a run's live turn, once.

The request is one transaction under the run's row lock: the checks (the run
is in a live turn, its provider can steer or queue a follow-up, the comment is a person's on the
run's issue), the ``run_steers`` row (its primary key, run and message, makes
the steer exactly once: a repeated request finds the row and queues nothing),
the ``steer`` message in the runner's outbox, and the activity entry. The
runner forwards it to the provider and answers ``steer_result``, stored as a
``steering_acknowledgement`` (or ``steer_refused``) run event.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping
from typing import Any

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from paperclip.common.activity import record_activity
from paperclip.common.actor import Actor
from paperclip.common.queries import get_scoped
from paperclip.domain.companies.companies import company_writes
from paperclip.domain.runs.steers import Delivery, SteerSent
from paperclip.engine.logs.outbox import enqueue_one
from paperclip.engine.turns.lifecycle import current_turn
from paperclip.errors import ConflictError, ForbiddenError, InvalidInputError
from paperclip.models import (
    Comment,
    Interaction,
    Run,
    RunStatus,
    RunSteer,
    TurnStatus,
    WakeCommentSnapshot,
    WakeSnapshotComment,
)
from paperclip.models.interaction import CARD_KINDS, InteractionStatus
from paperclip.plugin_host import PluginHost, ProviderNotInstalledError
from paperclip.wire.messages import Steer

log = logging.getLogger(__name__)

STEER_NOT_SUPPORTED = "steer_not_supported"
RUN_NOT_STEERABLE = "run_not_steerable"
STEER_COMMENT_NOT_ON_ISSUE = "steer_comment_not_on_run_issue"
STEER_COMMENT_UNUSABLE = "steer_comment_unusable"
STEER_BY_AGENT = "steer_by_agent_forbidden"
STEER_INTERACTION_UNUSABLE = "steer_interaction_unusable"
STEER_COMMENT_IN_WAKE = "steer_comment_in_wake"


def comment_steer_text(comment: Comment) -> str:
    """The text a steered comment enters the turn with.

    The one function for it: the steer sends it, and a restart continuation
    rebuilds an unread steer with it, so the model reads the same words.
    """
    return comment.body


def interaction_steer_text(interaction: Interaction) -> str:
    """The text an answered card enters its run's live turn with: the question and the answer.

    Like :func:`comment_steer_text`, the one function for it: the steer sends
    it, and a restart continuation rebuilds an unread steer with it.
    """
    response = interaction.response or {}
    lines = [
        f'A person answered your {interaction.kind} "{interaction.title}":',
        str(response.get("answer") or "(no answer text)"),
    ]
    if response.get("note"):
        lines.append(f"Note: {response['note']}")
    return "\n".join(lines)


class RunSteering:
    """The steer request: checks, the exactly-once row, the runner's outbox."""

    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        plugins: PluginHost,
        links: Mapping[uuid.UUID, Any] | None = None,
    ) -> None:
        self.sessions = sessions
        self.plugins = plugins
        self.links: Mapping[uuid.UUID, Any] = links if links is not None else {}
        """This replica's runner links by runner id; another replica's link polls its outbox."""

    async def steer_with_comment(
        self, actor: Actor, company_id: uuid.UUID, run_id: uuid.UUID, comment_id: uuid.UUID
    ) -> SteerSent:
        """Send the comment into the run's live turn (or find it sent before)."""
        if actor.type == "agent":
            raise ForbiddenError(
                "a run's own token cannot steer a run; a person steers", code=STEER_BY_AGENT
            )
        async with company_writes(self.sessions, company_id) as session:
            run = await get_scoped(
                session, Run, company_id, run_id, "run", for_update=True, source="path"
            )
            comment = await get_scoped(
                session, Comment, company_id, comment_id, "comment", field="comment_id"
            )
            _check_comment(run, comment)
            sent = await self._send(
                session, actor, run, str(comment.id), comment_steer_text(comment), comment.id
            )
        return self._kicked(run, sent)

    async def steer_in(
        self, actor: Actor, session: AsyncSession, run: Run, comment: Comment
    ) -> SteerSent:
        """A person's comment into ``run``'s live turn, in the caller's transaction (the
        caller holds the run's row lock): a chat message and its steer commit together.
        The caller calls :meth:`kick` after the commit."""
        if actor.type == "agent":
            raise ForbiddenError(
                "a run's own token cannot steer a run; a person steers", code=STEER_BY_AGENT
            )
        _check_comment(run, comment)
        return await self._send(
            session, actor, run, str(comment.id), comment_steer_text(comment), comment.id
        )

    def kick(self, run: Run) -> None:
        """Committed: this replica's link of the run's runner sends the steer now rather
        than at its next poll (another replica's link polls its outbox)."""
        link = self.links.get(run.runner_id) if run.runner_id is not None else None
        if link is not None:
            link.kick()

    async def steer_with_interaction(
        self, actor: Actor, company_id: uuid.UUID, interaction_id: uuid.UUID
    ) -> SteerSent:
        """Send an answered card into the live turn of the run that raised it (or find it sent)."""
        async with company_writes(self.sessions, company_id) as session:
            interaction = await get_scoped(
                session, Interaction, company_id, interaction_id, "interaction", source="path"
            )
            if (
                interaction.kind not in CARD_KINDS
                or interaction.status != InteractionStatus.ANSWERED
                or interaction.run_id is None
            ):
                raise InvalidInputError(
                    f"interaction {interaction.id} is not a card its run raised and a person "
                    "answered",
                    code=STEER_INTERACTION_UNUSABLE,
                )
            run = await get_scoped(
                session, Run, company_id, interaction.run_id, "run", for_update=True
            )
            sent = await self._send(
                session, actor, run, str(interaction.id), interaction_steer_text(interaction)
            )
        return self._kicked(run, sent)

    async def _send(
        self,
        session: AsyncSession,
        actor: Actor,
        run: Run,
        message_id: str,
        text: str,
        comment_id: uuid.UUID | None = None,
    ) -> SteerSent:
        """The exactly-once row, the runner's ``steer`` and the activity, in the caller's
        transaction (the run's row locked); a repeated message finds its row and sends nothing."""
        delivery = self._delivery(run)
        turn = await _live_turn(session, run)
        if comment_id is not None:
            await _check_not_in_wake(session, run, comment_id)
        assert run.issue_id is not None and run.runner_id is not None  # a live turn has both
        inserted = await session.execute(
            insert(RunSteer)
            .values(
                run_id=run.id,
                message_id=message_id,
                company_id=run.company_id,
                issue_id=run.issue_id,
                comment_id=comment_id,
                turn=turn,
                delivery=delivery,
                requested_by=f"{actor.type}:{actor.id}",
            )
            .on_conflict_do_nothing()
            .returning(RunSteer.turn)
        )
        if inserted.scalar_one_or_none() is None:
            earlier = (
                await session.execute(
                    select(RunSteer.turn, RunSteer.delivery).where(
                        RunSteer.run_id == run.id, RunSteer.message_id == message_id
                    )
                )
            ).one()
            sent_as: Any = earlier.delivery
            return SteerSent(run.id, message_id, comment_id, earlier.turn, sent_as, True)
        await enqueue_one(
            session,
            run.runner_id,
            Steer(seq=0, run_id=run.id, message_id=message_id, text=text, turn=turn),
        )
        record_activity(
            session,
            actor,
            "run.steered",
            entity_type="run",
            entity_id=run.id,
            company_id=run.company_id,
            details={
                "message_id": message_id,
                **({"comment_id": str(comment_id)} if comment_id else {}),
                "turn": turn,
                "delivery": delivery,
            },
        )
        return SteerSent(run.id, message_id, comment_id, turn, delivery, False)

    def _kicked(self, run: Run, sent: SteerSent) -> SteerSent:
        if not sent.duplicate:
            self.kick(run)
        return sent

    def _delivery(self, run: Run) -> Delivery:
        """A true steer when the provider has one, else its follow-up; else a conflict."""
        try:
            capabilities = self.plugins.provider(run.provider).capabilities
        except ProviderNotInstalledError:
            capabilities = None
        if capabilities is not None and capabilities.steer:
            return "steer"
        if capabilities is not None and capabilities.follow_up:
            return "follow_up"
        raise ConflictError(
            f"the {run.provider!r} provider can neither steer a running turn nor queue a "
            "follow-up; the comment wakes the agent again after this run",
            code=STEER_NOT_SUPPORTED,
            details={"provider": run.provider, "follow_up": "wake"},
        )


def _check_comment(run: Run, comment: Comment) -> None:
    if comment.issue_id != run.issue_id:
        raise InvalidInputError(
            f"comment {comment.id} is not on the run's issue",
            code=STEER_COMMENT_NOT_ON_ISSUE,
            field="comment_id",
        )
    if comment.deleted_at is not None or comment.author_agent_id is not None:
        raise InvalidInputError(
            f"comment {comment.id} is deleted or an agent's own; steer with a person's comment",
            code=STEER_COMMENT_UNUSABLE,
            field="comment_id",
        )


async def _check_not_in_wake(session: AsyncSession, run: Run, comment_id: uuid.UUID) -> None:
    """A comment the run was woken with is in its input already (its wake snapshot, written
    with the run): steering it too would give the model the same comment twice."""
    in_wake = await session.scalar(
        select(WakeSnapshotComment.comment_id)
        .join(WakeCommentSnapshot, WakeCommentSnapshot.id == WakeSnapshotComment.snapshot_id)
        .where(WakeCommentSnapshot.run_id == run.id, WakeSnapshotComment.comment_id == comment_id)
    )
    if in_wake is not None:
        raise ConflictError(
            f"run {run.id} was woken with comment {comment_id}: the run has it already",
            code=STEER_COMMENT_IN_WAKE,
            details={"run_id": str(run.id), "comment_id": str(comment_id)},
        )


async def _live_turn(session: AsyncSession, run: Run) -> int:
    """The number of the run's running turn; a conflict when it has none now."""
    turn = await current_turn(session, run) if run.status == RunStatus.RUNNING else None
    if (
        turn is None
        or run.phase != "turn"
        or run.runner_id is None
        or turn.status != TurnStatus.RUNNING
    ):
        raise ConflictError(
            f"run {run.id} has no live turn to steer (status {run.status}, phase {run.phase})",
            code=RUN_NOT_STEERABLE,
        )
    return turn.number
