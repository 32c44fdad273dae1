"""durable sessions: run turns, task holds, recovery bookkeeping

Revision ID: 0005_sessions
Revises: 0004
Create Date: 2026-11-30 11:45:33.137862
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0005_sessions"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "recovery_settlements",
        sa.Column("kind", sa.String(length=100), nullable=False),
        sa.Column("key", sa.String(length=200), nullable=False),
        sa.Column("settled_by", sa.String(length=200), nullable=False),
        sa.Column("outcome", sa.String(length=40), nullable=False),
        sa.Column(
            "settled_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("kind", "key", name=op.f("pk_recovery_settlements")),
    )
    op.create_table(
        "recovery_items",
        sa.Column("kind", sa.String(length=100), nullable=False),
        sa.Column("key", sa.String(length=200), nullable=False),
        sa.Column("company_id", sa.Uuid(), nullable=True),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("last_outcome", sa.String(length=40), nullable=True),
        sa.Column(
            "first_seen_at",
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
        sa.ForeignKeyConstraint(
            ["company_id"],
            ["companies.id"],
            name=op.f("fk_recovery_items_company_id_companies"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("kind", "key", name=op.f("pk_recovery_items")),
    )
    op.create_index(
        "ix_recovery_items_quarantined",
        "recovery_items",
        ["kind"],
        unique=False,
        postgresql_where=sa.text("status = 'quarantined'"),
    )
    op.create_table(
        "run_turns",
        sa.Column("id", sa.BigInteger(), sa.Identity(always=False), nullable=False),
        sa.Column("company_id", sa.Uuid(), nullable=False),
        sa.Column("run_id", sa.Uuid(), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=20), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("runner_id", sa.Uuid(), nullable=True),
        sa.Column("session_ref", sa.String(length=200), nullable=True),
        sa.Column("provider_turn_id", sa.String(length=200), nullable=True),
        sa.Column("input_schema", sa.String(length=100), nullable=True),
        sa.Column("input", postgresql.JSONB(astext_type=sa.Text()), nullable=True),
        sa.Column("error_code", sa.String(length=100), nullable=True),
        sa.Column("error_message", sa.Text(), nullable=True),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["company_id"],
            ["companies.id"],
            name=op.f("fk_run_turns_company_id_companies"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name=op.f("fk_run_turns_run_id_runs"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["runner_id"],
            ["runners.id"],
            name=op.f("fk_run_turns_runner_id_runners"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_run_turns")),
        sa.UniqueConstraint("run_id", "number", name=op.f("uq_run_turns_run_id_number")),
    )
    op.create_index(
        "ix_run_turns_lost",
        "run_turns",
        ["run_id"],
        unique=False,
        postgresql_where=sa.text("status = 'lost'"),
    )
    op.create_index(
        "uq_run_turns_active",
        "run_turns",
        ["run_id"],
        unique=True,
        postgresql_where=sa.text("status IN ('starting', 'running')"),
    )
    op.create_table(
        "task_holds",
        sa.Column("company_id", sa.Uuid(), nullable=False),
        sa.Column("issue_id", sa.Uuid(), nullable=False),
        sa.Column("run_id", sa.Uuid(), nullable=True),
        sa.Column("kind", sa.String(length=100), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("set_by", sa.String(length=20), nullable=False),
        sa.Column("set_by_actor", sa.String(length=200), nullable=False),
        sa.Column("replay_forbidden", sa.Boolean(), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("resolution", sa.String(length=100), nullable=True),
        sa.Column("resolved_by", sa.String(length=20), nullable=True),
        sa.Column("resolved_by_actor", sa.String(length=200), nullable=True),
        sa.Column("resolved_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("details", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
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
        sa.ForeignKeyConstraint(
            ["company_id"],
            ["companies.id"],
            name=op.f("fk_task_holds_company_id_companies"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["issue_id"],
            ["issues.id"],
            name=op.f("fk_task_holds_issue_id_issues"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name=op.f("fk_task_holds_run_id_runs"), ondelete="SET NULL"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_task_holds")),
    )
    op.create_index(
        "ix_task_holds_active",
        "task_holds",
        ["issue_id"],
        unique=False,
        postgresql_where=sa.text("status = 'active'"),
    )
    op.create_index(op.f("ix_task_holds_company_id"), "task_holds", ["company_id"], unique=False)
    op.add_column("runs", sa.Column("turn", sa.Integer(), nullable=False, server_default="0"))
    op.add_column(
        "runs", sa.Column("resume_attempts", sa.Integer(), nullable=False, server_default="0")
    )
    op.add_column("runs", sa.Column("resumable_since", sa.DateTime(timezone=True), nullable=True))
    # A constant default is only catalog metadata: no rewrite of a long event log.
    op.add_column("run_events", sa.Column("turn", sa.Integer(), nullable=False, server_default="1"))
    op.alter_column("run_events", "turn", server_default=None)
    op.alter_column("runs", "turn", server_default=None)
    op.alter_column("runs", "resume_attempts", server_default=None)
    op.create_index(
        "ix_runs_active_lease",
        "runs",
        ["lease_expires_at"],
        postgresql_where=sa.text("status IN ('queued', 'running')"),
    )
    op.create_index(
        "ix_runs_resuming",
        "runs",
        ["resumable_since"],
        postgresql_where=sa.text("phase = 'resuming'"),
    )
    # Runs of the earlier schema had one turn each: it is their turn 1.
    op.execute(
        """
        INSERT INTO run_turns (company_id, run_id, number, kind, status, runner_id, session_ref,
                               created_at, started_at, finished_at, error_code, error_message)
        SELECT company_id, id, 1, 'initial',
               CASE WHEN status IN ('queued', 'running') THEN 'running'
                    WHEN status = 'succeeded' THEN 'completed' ELSE 'failed' END,
               runner_id, session_ref, created_at, started_at, finished_at,
               error_code, error_message
        FROM runs WHERE phase <> 'created'
        """
    )
    op.execute("UPDATE runs SET turn = 1 WHERE phase <> 'created'")


def downgrade() -> None:
    # Migrations are forward-only; see docs/architecture.md.
    raise NotImplementedError("Paperclip migrations are forward-only")
