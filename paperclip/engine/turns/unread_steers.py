"""The steers a restart continuation carries: acknowledged, never read, from the run log.

Read only when a restart continuation is built (``resumption``). The facts
come from ``run_events`` alone: the acknowledgements and the provider's read
evidence, of the run and its company. Which of them are unread is the
``paperclip_unread_steers`` hook's answer (the ``paperclip-unread-steers``
policy); this module hands it the events and turns its message ids back into
the text each steer was sent with: comments, and answered cards, of the same
company and issue.
"""

from __future__ import annotations

import uuid

from paperclip_hookspecs.prompts import (
    AuthorKind,
    CommentAuthor,
    CommentTrust,
    ContinuationMessage,
)
from paperclip_hookspecs.steering import STEER_EVIDENCE_TYPES, SteerLogEvent
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from paperclip.engine.turns.steering import comment_steer_text, interaction_steer_text
from paperclip.models import Comment, Interaction, Run, RunEvent
from paperclip.models.interaction import InteractionStatus
from paperclip.plugin_host import PluginHost

CONTROL_PLANE_SOURCES = frozenset({"tool"})
"""Event sources the control plane writes for the model (a tool's output): never a
transport-validated event, so never steer evidence."""


async def steer_log(session: AsyncSession, run: Run) -> list[SteerLogEvent]:
    """The run's log events a steer policy reads, in order."""
    rows = await session.execute(
        select(
            RunEvent.seq,
            RunEvent.turn,
            RunEvent.type,
            RunEvent.payload,
            RunEvent.source_instance,
            RunEvent.source_seq,
        )
        .where(
            RunEvent.run_id == run.id,
            RunEvent.company_id == run.company_id,
            RunEvent.type.in_(sorted(STEER_EVIDENCE_TYPES)),
        )
        .order_by(RunEvent.seq)
    )
    return [
        SteerLogEvent(
            seq=row.seq,
            turn=row.turn,
            type=row.type,
            payload=row.payload or {},
            source_event_id=(
                None
                if row.source_instance in CONTROL_PLANE_SOURCES or row.source_seq is None
                else f"{row.source_instance}:{row.source_seq}"
            ),
        )
        for row in rows
    ]


async def unread_steered_messages(
    session: AsyncSession, run: Run, plugins: PluginHost
) -> tuple[ContinuationMessage, ...]:
    """The acknowledged steers the model has not read, oldest first, with their text."""
    ids = plugins.unread_steers(await steer_log(session, run))
    if not ids or run.issue_id is None:
        return ()
    keys = {}
    for message_id in ids:
        try:
            keys[message_id] = uuid.UUID(message_id)
        except ValueError:
            continue  # not a message this control plane sent
    wanted = list(keys.values())
    comments = (
        await session.scalars(
            select(Comment).where(
                Comment.id.in_(wanted),
                Comment.company_id == run.company_id,
                Comment.issue_id == run.issue_id,
                Comment.deleted_at.is_(None),
            )
        )
    ).all()
    cards = (
        await session.scalars(
            select(Interaction).where(
                Interaction.id.in_(wanted),
                Interaction.company_id == run.company_id,
                Interaction.issue_id == run.issue_id,
                Interaction.status == InteractionStatus.ANSWERED,
            )
        )
    ).all()
    found = {str(c.id): _message(c) for c in comments}
    found.update({str(i.id): _card_message(i) for i in cards})
    return tuple(found[message_id] for message_id in ids if message_id in found)


def _message(comment: Comment) -> ContinuationMessage:
    # A steer is a person's comment (steering refuses an agent's own): it directs.
    person = comment.author_user_id or ""
    return ContinuationMessage(
        id=str(comment.id),
        issue_id=str(comment.issue_id),
        body=comment_steer_text(comment),
        author=CommentAuthor(AuthorKind.USER, person, person),
        trust=CommentTrust.TRUSTED,
    )


def _card_message(interaction: Interaction) -> ContinuationMessage:
    # An answered card is a person's answer (steering takes only a person's).
    _, _, person = (interaction.resolved_by or "user:").partition(":")
    return ContinuationMessage(
        id=str(interaction.id),
        issue_id=str(interaction.issue_id),
        body=interaction_steer_text(interaction),
        author=CommentAuthor(AuthorKind.USER, person, person),
        trust=CommentTrust.TRUSTED,
    )
