from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import DateTime, ForeignKey, String, func
from sqlalchemy.orm import Mapped, mapped_column

from paperclip.db.base import Base


class RunSteer(Base):
    """A message a person steered into a run's live turn: one row per (run, message).

    The primary key makes a steer exactly once: a repeated request finds the row
    and queues nothing. Whether the provider accepted it, and whether the model
    read it, are run events (``steering_acknowledgement``, the provider's items).
    """

    __tablename__ = "run_steers"

    run_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True
    )
    message_id: Mapped[str] = mapped_column(String(200), primary_key=True)
    company_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("companies.id", ondelete="CASCADE"))
    issue_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("issues.id", ondelete="CASCADE"))
    comment_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("comments.id", ondelete="SET NULL")
    )
    """The comment whose text was steered (the message id is its id)."""
    turn: Mapped[int]
    """The run's turn it was sent into."""
    delivery: Mapped[str] = mapped_column(String(20))
    """``steer`` (into the running turn) or ``follow_up`` (queued by the provider after it)."""
    requested_by: Mapped[str] = mapped_column(String(200))
    """``<actor type>:<actor id>`` of the person who steered."""
    created_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), server_default=func.now(), nullable=False
    )
