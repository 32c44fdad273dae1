"""routines (issue templates with cron, webhook and call triggers), their executions, and
agents' heartbeats

Revision ID: 0016_routines_heartbeats
Revises: 0015_costs_budgets
Create Date: 2026-12-04 09:00:00.000000

Forward-only: new tables, nullable columns and partial indexes. A routine's
execution is unique per (routine, slot key): the database decides that a slot
runs once, whichever replica fires it. At most one heartbeat wake is queued
per agent (a partial unique index), so later ones coalesce into it.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0016_routines_heartbeats"
down_revision: str | None = "0015_costs_budgets"
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
        "routines",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("company_id", sa.Uuid(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("agent_id", sa.Uuid(), nullable=False),
        sa.Column("title", sa.String(length=500), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("priority", sa.String(length=20), nullable=False),
        sa.Column("project_id", sa.Uuid(), nullable=True),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("cron", sa.String(length=200), nullable=True),
        sa.Column("timezone", sa.String(length=64), nullable=False),
        sa.Column("concurrency", sa.String(length=20), nullable=False),
        sa.Column("catch_up", sa.String(length=20), nullable=False),
        sa.Column("catch_up_cap", sa.Integer(), nullable=False),
        sa.Column("next_slot_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("missed_slots", sa.Integer(), nullable=False),
        sa.Column("webhook_nonce", sa.LargeBinary(length=32), nullable=True),
        *_timestamps(),
        _fk("routines", "company_id", "companies", "CASCADE"),
        _fk("routines", "agent_id", "agents", "CASCADE"),
        _fk("routines", "project_id", "projects", "SET NULL"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_routines")),
        sa.UniqueConstraint("company_id", "name", name=op.f("uq_routines_company_id_name")),
    )
    op.create_index(op.f("ix_routines_company_id"), "routines", ["company_id"])
    op.create_index(op.f("ix_routines_agent_id"), "routines", ["agent_id"])
    op.create_index(op.f("ix_routines_project_id"), "routines", ["project_id"])
    op.create_index(
        "ix_routines_due",
        "routines",
        ["next_slot_at"],
        postgresql_where=sa.text("enabled AND cron IS NOT NULL"),
    )

    op.create_table(
        "routine_executions",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("company_id", sa.Uuid(), nullable=False),
        sa.Column("routine_id", sa.Uuid(), nullable=False),
        sa.Column("slot_key", sa.String(length=250), nullable=False),
        sa.Column("slot_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("trigger", sa.String(length=20), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("reason", sa.String(length=64), nullable=True),
        sa.Column("payload", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("issue_id", sa.Uuid(), nullable=True),
        sa.Column("wake_request_id", sa.Uuid(), nullable=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        *_timestamps(),
        _fk("routine_executions", "company_id", "companies", "CASCADE"),
        _fk("routine_executions", "routine_id", "routines", "CASCADE"),
        _fk("routine_executions", "issue_id", "issues", "SET NULL"),
        _fk("routine_executions", "wake_request_id", "wake_requests", "SET NULL"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_routine_executions")),
        sa.UniqueConstraint(
            "routine_id", "slot_key", name=op.f("uq_routine_executions_routine_id_slot_key")
        ),
    )
    op.create_index(op.f("ix_routine_executions_company_id"), "routine_executions", ["company_id"])
    op.create_index(op.f("ix_routine_executions_issue_id"), "routine_executions", ["issue_id"])
    op.create_index(
        "ix_routine_executions_routine_id_slot_at",
        "routine_executions",
        ["routine_id", "slot_at"],
    )
    op.create_index(
        "ix_routine_executions_queued",
        "routine_executions",
        ["routine_id", "created_at"],
        postgresql_where=sa.text("status = 'queued'"),
    )

    op.add_column("agents", sa.Column("heartbeat_seconds", sa.Integer(), nullable=True))
    op.add_column(
        "agents", sa.Column("heartbeat_due_at", sa.DateTime(timezone=True), nullable=True)
    )
    op.create_index(
        "ix_agents_heartbeat_due",
        "agents",
        ["heartbeat_due_at"],
        postgresql_where=sa.text("heartbeat_seconds IS NOT NULL"),
    )
    op.create_index(
        "uq_wake_requests_heartbeat",
        "wake_requests",
        ["agent_id"],
        unique=True,
        postgresql_where=sa.text("status = 'queued' AND source = 'heartbeat'"),
    )


def downgrade() -> None:
    op.drop_index("uq_wake_requests_heartbeat", table_name="wake_requests")
    op.drop_index("ix_agents_heartbeat_due", table_name="agents")
    op.drop_column("agents", "heartbeat_due_at")
    op.drop_column("agents", "heartbeat_seconds")
    op.drop_table("routine_executions")
    op.drop_table("routines")
