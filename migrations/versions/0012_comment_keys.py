"""a comment may carry an idempotency key, unique on its issue

Revision ID: 0012_comment_keys
Revises: 0011_chat_message_keys
Create Date: 2026-12-01 12:00:00.000000

A retried POST of a comment with the same key finds the first one: the partial
unique index ``uq_comments_key`` refuses a second row.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012_comment_keys"
down_revision: str | None = "0011_chat_message_keys"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("comments", sa.Column("idempotency_key", sa.String(200), nullable=True))
    op.create_index(
        "uq_comments_key",
        "comments",
        ["issue_id", "idempotency_key"],
        unique=True,
        postgresql_where=sa.text("idempotency_key IS NOT NULL"),
    )


def downgrade() -> None:
    op.drop_index("uq_comments_key", table_name="comments")
    op.drop_column("comments", "idempotency_key")
