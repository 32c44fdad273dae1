from __future__ import annotations

from sqlalchemy import String
from sqlalchemy.orm import Mapped, mapped_column

from paperclip.db.base import Base, Timestamps, UUIDPrimaryKey


class Company(UUIDPrimaryKey, Timestamps, Base):
    """The tenant: every other row belongs to exactly one company."""

    __tablename__ = "companies"

    name: Mapped[str] = mapped_column(String(200))
    issue_prefix: Mapped[str] = mapped_column(String(10))
    """Prefix of the company's issue identifiers (``PAP`` in ``PAP-12``)."""
    issue_counter: Mapped[int] = mapped_column(default=0)
    """The last issue number taken (``domain/issues/issue_numbers.py``: in a statement of its own,
    so a number whose issue rolled back is never used)."""
    time_zone: Mapped[str] = mapped_column(String(64), default="UTC", server_default="UTC")
    """An IANA time zone: the company's budget months are calendar months there."""
