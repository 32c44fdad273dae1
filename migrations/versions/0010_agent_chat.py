"""agent chat: conversations, their turns and messages, interactions on a task

Revision ID: 0010_agent_chat
Revises: 0009_unpresented
Create Date: 2026-11-30 16:40:00.000000

Forward-only: new tables. A conversation turn's reply is unique per run (the
partial unique index ``uq_conversation_messages_reply``): an answer is posted once.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0010_agent_chat"
down_revision: str | None = "0009_unpresented"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _fk(table: str, column: str, target: str, ondelete: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        [column],
        [f"{target}.id"],
        name=op.f(f"fk_{table}_{column}_{target}"),
        ondelete=ondelete,
    )


def _timestamps() -> list[sa.Column]:
    return [
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.Column(
            "updated_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
    ]


def upgrade() -> None:
    op.create_table(
        "conversations",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("company_id", sa.Uuid(), nullable=False),
        sa.Column("issue_id", sa.Uuid(), nullable=False),
        sa.Column("agent_id", sa.Uuid(), nullable=False),
        sa.Column("user_ref", sa.String(length=200), nullable=False),
        sa.Column("title", sa.String(length=500), nullable=False),
        sa.Column("state", sa.String(length=20), nullable=False),
        sa.Column("session_generation", sa.Integer(), nullable=False),
        sa.Column("current_wake_id", sa.Uuid(), nullable=True),
        *_timestamps(),
        _fk("conversations", "company_id", "companies", "CASCADE"),
        _fk("conversations", "issue_id", "issues", "CASCADE"),
        _fk("conversations", "agent_id", "agents", "CASCADE"),
        _fk("conversations", "current_wake_id", "wake_requests", "SET NULL"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_conversations")),
    )
    op.create_index(op.f("ix_conversations_company_id"), "conversations", ["company_id"])
    op.create_index(op.f("ix_conversations_issue_id"), "conversations", ["issue_id"])

    op.create_table(
        "conversation_turns",
        sa.Column("wake_request_id", sa.Uuid(), nullable=False),
        sa.Column("conversation_id", sa.Uuid(), nullable=False),
        sa.Column("company_id", sa.Uuid(), nullable=False),
        sa.Column("agent_id", sa.Uuid(), nullable=False),
        sa.Column("user_ref", sa.String(length=200), nullable=False),
        sa.Column("session_generation", sa.Integer(), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        _fk("conversation_turns", "wake_request_id", "wake_requests", "CASCADE"),
        _fk("conversation_turns", "conversation_id", "conversations", "CASCADE"),
        _fk("conversation_turns", "company_id", "companies", "CASCADE"),
        _fk("conversation_turns", "agent_id", "agents", "CASCADE"),
        sa.PrimaryKeyConstraint("wake_request_id", name=op.f("pk_conversation_turns")),
    )
    op.create_index(
        op.f("ix_conversation_turns_conversation_id"), "conversation_turns", ["conversation_id"]
    )

    op.create_table(
        "conversation_messages",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("seq", sa.BigInteger(), sa.Identity(always=False), nullable=False),
        sa.Column("company_id", sa.Uuid(), nullable=False),
        sa.Column("conversation_id", sa.Uuid(), nullable=False),
        sa.Column("role", sa.String(length=20), nullable=False),
        sa.Column("author_ref", sa.String(length=200), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("run_id", sa.Uuid(), nullable=True),
        sa.Column("delivery", sa.String(length=20), nullable=False),
        *_timestamps(),
        _fk("conversation_messages", "company_id", "companies", "CASCADE"),
        _fk("conversation_messages", "conversation_id", "conversations", "CASCADE"),
        _fk("conversation_messages", "run_id", "runs", "SET NULL"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_conversation_messages")),
    )
    op.create_index(
        "uq_conversation_messages_reply",
        "conversation_messages",
        ["run_id"],
        unique=True,
        postgresql_where=sa.text("run_id IS NOT NULL"),
    )
    op.create_index(
        "ix_conversation_messages_order", "conversation_messages", ["conversation_id", "seq"]
    )

    op.create_table(
        "interactions",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("company_id", sa.Uuid(), nullable=False),
        sa.Column("issue_id", sa.Uuid(), nullable=False),
        sa.Column("conversation_id", sa.Uuid(), nullable=True),
        sa.Column("run_id", sa.Uuid(), nullable=True),
        sa.Column("kind", sa.String(length=30), nullable=False),
        sa.Column("status", sa.String(length=30), nullable=False),
        sa.Column("title", sa.String(length=500), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("options", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("response", postgresql.JSONB(astext_type=sa.Text()), nullable=True),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.Column("created_by", sa.String(length=200), nullable=False),
        sa.Column("resolved_by", sa.String(length=200), nullable=True),
        sa.Column("resolved_at", sa.DateTime(timezone=True), nullable=True),
        *_timestamps(),
        _fk("interactions", "company_id", "companies", "CASCADE"),
        _fk("interactions", "issue_id", "issues", "CASCADE"),
        _fk("interactions", "conversation_id", "conversations", "SET NULL"),
        _fk("interactions", "run_id", "runs", "SET NULL"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_interactions")),
    )
    op.create_index(op.f("ix_interactions_company_id"), "interactions", ["company_id"])
    op.create_index(op.f("ix_interactions_run_id"), "interactions", ["run_id"])
    op.create_index(
        "ix_interactions_holding",
        "interactions",
        ["issue_id"],
        postgresql_where=sa.text("status IN ('pending', 'revision_requested')"),
    )


def downgrade() -> None:
    op.drop_table("interactions")
    op.drop_table("conversation_messages")
    op.drop_table("conversation_turns")
    op.drop_table("conversations")
