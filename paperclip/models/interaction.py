"""Interactions on a task: cards the agent raised, approvals, execution stages, blockers."""

from __future__ import annotations

import uuid
from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import DateTime, ForeignKey, Index, String, Text, text
from sqlalchemy.orm import Mapped, mapped_column

from paperclip.db.base import Base, Timestamps, UUIDPrimaryKey


class InteractionKind(StrEnum):
    QUESTION = "question"
    CONFIRMATION = "confirmation"
    APPROVAL = "approval"
    EXECUTION_STAGE = "execution_stage"
    DEPENDENCY = "dependency"


CARD_KINDS = frozenset({InteractionKind.QUESTION, InteractionKind.CONFIRMATION})
"""Kinds that present their turn in the chat themselves while pending."""


class InteractionStatus(StrEnum):
    PENDING = "pending"
    REVISION_REQUESTED = "revision_requested"
    ANSWERED = "answered"
    APPROVED = "approved"
    REJECTED = "rejected"
    RESOLVED = "resolved"


HOLDING_STATUSES = (InteractionStatus.PENDING, InteractionStatus.REVISION_REQUESTED)
"""While in one of these, an interaction holds its task."""


class Interaction(UUIDPrimaryKey, Timestamps, Base):
    __tablename__ = "interactions"
    __table_args__ = (
        Index(
            "ix_interactions_holding",
            "issue_id",
            postgresql_where=text("status IN ('pending', 'revision_requested')"),
        ),
    )

    company_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("companies.id", ondelete="CASCADE"), index=True
    )
    issue_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("issues.id", ondelete="CASCADE"))
    conversation_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("conversations.id", ondelete="SET NULL")
    )
    run_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("runs.id", ondelete="SET NULL"), index=True
    )
    """The turn that raised it (a card the agent asked through ``request_human_input``)."""
    kind: Mapped[str] = mapped_column(String(30))
    status: Mapped[str] = mapped_column(String(30), default=InteractionStatus.PENDING)
    title: Mapped[str] = mapped_column(String(500))
    body: Mapped[str] = mapped_column(Text, default="")
    options: Mapped[list[Any]] = mapped_column(default=list)
    response: Mapped[dict[str, Any] | None] = mapped_column()
    """The person's answer or decision, with its note."""
    revision: Mapped[int] = mapped_column(default=1)
    """An approval's submission number: a resubmission after a revision request bumps it."""
    created_by: Mapped[str] = mapped_column(String(200))
    resolved_by: Mapped[str | None] = mapped_column(String(200))
    resolved_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
