"""run engine: runners, outbox, run tokens, tool journal, leases

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29 21:19:57.972138
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "runners",
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("credential_hash", sa.String(length=64), nullable=False),
        sa.Column("out_seq", sa.BigInteger(), nullable=False),
        sa.Column("acked_seq", sa.BigInteger(), nullable=False),
        sa.Column("in_seq", sa.BigInteger(), nullable=False),
        sa.Column("instance", sa.String(length=200), nullable=True),
        sa.Column("replica", sa.String(length=200), nullable=True),
        sa.Column("last_seen_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("id", sa.Uuid(), nullable=False),
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
        sa.PrimaryKeyConstraint("id", name=op.f("pk_runners")),
        sa.UniqueConstraint("credential_hash", name=op.f("uq_runners_credential_hash")),
        sa.UniqueConstraint("name", name=op.f("uq_runners_name")),
    )
    op.create_table(
        "runner_outbox",
        sa.Column("runner_id", sa.Uuid(), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("type", sa.String(length=40), nullable=False),
        sa.Column("run_id", sa.Uuid(), nullable=True),
        sa.Column("payload", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name=op.f("fk_runner_outbox_run_id_runs"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["runner_id"],
            ["runners.id"],
            name=op.f("fk_runner_outbox_runner_id_runners"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("runner_id", "seq", name=op.f("pk_runner_outbox")),
    )
    op.create_table(
        "tool_calls",
        sa.Column("id", sa.BigInteger(), sa.Identity(always=False), nullable=False),
        sa.Column("company_id", sa.Uuid(), nullable=False),
        sa.Column("run_id", sa.Uuid(), nullable=False),
        sa.Column("call_id", sa.String(length=100), nullable=False),
        sa.Column("tool", sa.String(length=100), nullable=False),
        sa.Column("arguments", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("admitted_by", sa.String(length=200), nullable=False),
        sa.Column("admitted_epoch", sa.Integer(), nullable=False),
        sa.Column("result", postgresql.JSONB(astext_type=sa.Text()), nullable=True),
        sa.Column("is_error", sa.Boolean(), nullable=False),
        sa.Column("settled_by", sa.String(length=200), nullable=True),
        sa.Column("settled_epoch", sa.Integer(), nullable=True),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.Column("settled_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["company_id"],
            ["companies.id"],
            name=op.f("fk_tool_calls_company_id_companies"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name=op.f("fk_tool_calls_run_id_runs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_tool_calls")),
        sa.UniqueConstraint("run_id", "call_id", name=op.f("uq_tool_calls_run_id_call_id")),
    )
    op.create_table(
        "tool_receipts",
        sa.Column("command_id", sa.String(length=100), nullable=False),
        sa.Column("company_id", sa.Uuid(), nullable=False),
        sa.Column("run_id", sa.Uuid(), nullable=False),
        sa.Column("tool", sa.String(length=100), nullable=False),
        sa.Column("state_revision", sa.String(length=64), nullable=False),
        sa.Column("result", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(
            ["company_id"],
            ["companies.id"],
            name=op.f("fk_tool_receipts_company_id_companies"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name=op.f("fk_tool_receipts_run_id_runs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("command_id", name=op.f("pk_tool_receipts")),
    )
    op.create_table(
        "run_tokens",
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("run_id", sa.Uuid(), nullable=False),
        sa.Column("company_id", sa.Uuid(), nullable=False),
        sa.Column("agent_id", sa.Uuid(), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["agent_id"],
            ["agents.id"],
            name=op.f("fk_run_tokens_agent_id_agents"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["company_id"],
            ["companies.id"],
            name=op.f("fk_run_tokens_company_id_companies"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name=op.f("fk_run_tokens_run_id_runs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("token_hash", name=op.f("pk_run_tokens")),
    )
    op.create_index(op.f("ix_run_tokens_run_id"), "run_tokens", ["run_id"], unique=False)
    op.add_column("runs", sa.Column("lease_expires_at", sa.DateTime(timezone=True), nullable=True))
    op.add_column("runs", sa.Column("runner_id", sa.Uuid(), nullable=True))
    op.add_column("runs", sa.Column("wake_request_id", sa.Uuid(), nullable=True))
    # Runs made before it: their log's newest seq (a NOT NULL column without a value failed).
    op.add_column("runs", sa.Column("last_event_seq", sa.Integer(), nullable=True))
    op.execute(
        "UPDATE runs SET last_event_seq = coalesce("
        "(SELECT max(seq) FROM run_events e WHERE e.run_id = runs.id), 0)"
    )
    op.alter_column("runs", "last_event_seq", nullable=False)
    op.create_index(op.f("ix_runs_runner_id"), "runs", ["runner_id"], unique=False)
    op.create_index(
        "uq_runs_active_issue",
        "runs",
        ["issue_id"],
        unique=True,
        postgresql_where=sa.text("status IN ('queued', 'running') AND issue_id IS NOT NULL"),
    )
    op.create_foreign_key(
        op.f("fk_runs_runner_id_runners"),
        "runs",
        "runners",
        ["runner_id"],
        ["id"],
        ondelete="SET NULL",
    )
    op.create_foreign_key(
        op.f("fk_runs_wake_request_id_wake_requests"),
        "runs",
        "wake_requests",
        ["wake_request_id"],
        ["id"],
        ondelete="SET NULL",
    )


def downgrade() -> None:
    # Migrations are forward-only; see docs/architecture.md.
    raise NotImplementedError("Paperclip migrations are forward-only")
