from __future__ import annotations

from datetime import datetime

from sqlalchemy import DateTime, LargeBinary, String, func
from sqlalchemy.orm import Mapped, mapped_column

from paperclip.db.base import Base


class ServerSecret(Base):
    """A random secret of this installation, shared by every replica (e.g. the cursor key)."""

    __tablename__ = "server_secrets"

    name: Mapped[str] = mapped_column(String(100), primary_key=True)
    value: Mapped[bytes] = mapped_column(LargeBinary)
    created_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), server_default=func.now(), nullable=False
    )
