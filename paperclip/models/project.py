from __future__ import annotations

import uuid

from sqlalchemy import CheckConstraint, ForeignKey, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from paperclip.db.base import Base, Timestamps, UUIDPrimaryKey

DEFAULT_BRANCH_PREFIX = "paperclip/"
DEFAULT_MERGE_STRATEGY = "fast_forward"


class Project(UUIDPrimaryKey, Timestamps, Base):
    """A company's unit of work with a repository: where its issues' worktrees come from.

    The repository is either a folder on the runner host (``repo_path``) or a clone
    URL (``repo_url``, fetched into a mirror the runner keeps); which folders and
    URLs are allowed is the runner host's decision, never the project's.
    """

    __tablename__ = "projects"
    __table_args__ = (
        UniqueConstraint("company_id", "name"),
        CheckConstraint("(repo_path IS NULL) <> (repo_url IS NULL)", name="one_source"),
        CheckConstraint(
            "merge_strategy IN ('fast_forward', 'merge_commit')", name="merge_strategy"
        ),
    )

    company_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("companies.id", ondelete="CASCADE"), index=True
    )
    name: Mapped[str] = mapped_column(String(200))
    description: Mapped[str] = mapped_column(Text, default="")
    repo_path: Mapped[str | None] = mapped_column(Text)
    repo_url: Mapped[str | None] = mapped_column(Text)
    default_branch: Mapped[str | None] = mapped_column(String(255))
    """The branch each issue's branch starts from; None: the repository's own HEAD branch."""
    branch_prefix: Mapped[str] = mapped_column(String(100), default=DEFAULT_BRANCH_PREFIX)
    """An issue's branch is ``<prefix><ISSUE-IDENTIFIER>``."""
    hooks_enabled: Mapped[bool] = mapped_column(default=False)
    """Whether the repository's git hooks run in its worktrees (off unless enabled)."""
    merge_strategy: Mapped[str] = mapped_column(
        String(20), default=DEFAULT_MERGE_STRATEGY, server_default=DEFAULT_MERGE_STRATEGY
    )
    """How an issue's branch is merged into the base branch: ``fast_forward`` (only when the
    base is an ancestor of the branch) or ``merge_commit``."""
