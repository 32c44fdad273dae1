"""a person's chat message may carry an idempotency key, unique in its conversation

Revision ID: 0011_chat_message_keys
Revises: 0010_agent_chat
Create Date: 2026-12-01 03:00:00.000000

A retried POST of a message with the same key finds the first one: the partial
unique index ``uq_conversation_messages_key`` refuses a second row.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011_chat_message_keys"
down_revision: str | None = "0010_agent_chat"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "conversation_messages", sa.Column("idempotency_key", sa.String(200), nullable=True)
    )
    op.create_index(
        "uq_conversation_messages_key",
        "conversation_messages",
        ["conversation_id", "idempotency_key"],
        unique=True,
        postgresql_where=sa.text("idempotency_key IS NOT NULL"),
    )


def downgrade() -> None:
    op.drop_index("uq_conversation_messages_key", table_name="conversation_messages")
    op.drop_column("conversation_messages", "idempotency_key")
