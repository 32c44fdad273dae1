"""Agent chat: a person talks to an agent in a conversation bound to a task."""

from __future__ import annotations

import uuid
from datetime import datetime
from enum import StrEnum

from sqlalchemy import BigInteger, DateTime, ForeignKey, Identity, Index, String, Text, func, text
from sqlalchemy.orm import Mapped, mapped_column

from paperclip.db.base import Base, Timestamps, UUIDPrimaryKey


class ConversationState(StrEnum):
    IDLE = "idle"
    """No turn is unsettled: the person may talk."""
    ACTIVE = "active"
    """A turn is current and unsettled (queued, running, or its answer not presented yet)."""
    WAITING = "waiting"
    """The turn's own card (a question, a confirmation) waits for the person."""
    CLOSED = "closed"


class Conversation(UUIDPrimaryKey, Timestamps, Base):
    __tablename__ = "conversations"

    company_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("companies.id", ondelete="CASCADE"), index=True
    )
    issue_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("issues.id", ondelete="CASCADE"), index=True
    )
    agent_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("agents.id", ondelete="CASCADE"))
    user_ref: Mapped[str] = mapped_column(String(200))
    """``<actor type>:<actor id>`` of the person who talks in it."""
    title: Mapped[str] = mapped_column(String(500), default="")
    state: Mapped[str] = mapped_column(String(20), default=ConversationState.IDLE)
    session_generation: Mapped[int] = mapped_column(default=1)
    """Bumped when the agent's session is started afresh: a turn of an older one is stale."""
    current_wake_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("wake_requests.id", ondelete="SET NULL")
    )
    """The wake of the current turn: a turn whose run came from another wake is superseded."""


class ConversationTurnRecord(Base):
    """One turn of a conversation: the wake a message requested, and (through it) its run."""

    __tablename__ = "conversation_turns"

    wake_request_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("wake_requests.id", ondelete="CASCADE"), primary_key=True
    )
    conversation_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("conversations.id", ondelete="CASCADE"), index=True
    )
    company_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("companies.id", ondelete="CASCADE"))
    agent_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("agents.id", ondelete="CASCADE"))
    user_ref: Mapped[str] = mapped_column(String(200))
    session_generation: Mapped[int]
    created_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), server_default=func.now(), nullable=False
    )


class ConversationMessage(UUIDPrimaryKey, Timestamps, Base):
    """A message of a conversation: a person's, or the agent's reply (a turn's answer)."""

    __tablename__ = "conversation_messages"
    __table_args__ = (
        # A turn's answer is posted once: the database refuses a second reply of a run.
        Index(
            "uq_conversation_messages_reply",
            "run_id",
            unique=True,
            postgresql_where=text("run_id IS NOT NULL"),
        ),
        Index("ix_conversation_messages_order", "conversation_id", "seq"),
        # A retried post with the same key is the first message, never a second one.
        Index(
            "uq_conversation_messages_key",
            "conversation_id",
            "idempotency_key",
            unique=True,
            postgresql_where=text("idempotency_key IS NOT NULL"),
        ),
    )

    seq: Mapped[int] = mapped_column(BigInteger, Identity())
    """Global insertion order: the live stream's position (``after``)."""
    company_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("companies.id", ondelete="CASCADE"))
    conversation_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("conversations.id", ondelete="CASCADE")
    )
    role: Mapped[str] = mapped_column(String(20))
    """``user`` or ``agent``."""
    author_ref: Mapped[str] = mapped_column(String(200))
    body: Mapped[str] = mapped_column(Text)
    run_id: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("runs.id", ondelete="SET NULL"))
    """The turn whose answer this is (agent replies only)."""
    delivery: Mapped[str] = mapped_column(String(20), default="")
    """A person's message: ``turn`` (it started one) or ``steer`` (into the live turn)."""
    idempotency_key: Mapped[str | None] = mapped_column(String(200))
    """The person's key for the post (optional): a retry with it finds this message."""
