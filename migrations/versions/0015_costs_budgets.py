"""costs and budgets: model prices, cost events, budgets and their months, run reservations

Revision ID: 0015_costs_budgets
Revises: 0014_projects_workspaces
Create Date: 2026-12-03 10:00:00.000000

Forward-only: new tables and nullable or defaulted columns. A cost event is
one model response's usage, unique by ``(run_id, key)``, so a usage a runner
reports again after a restart is recorded once. A budget's month keeps what
was spent and what running runs hold of it, updated in the transaction that
records each cost, under the budget month's row lock.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015_costs_budgets"
down_revision: str | None = "0014_projects_workspaces"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _fk(table: str, column: str, target: str, ondelete: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        [column], [f"{target}.id"], name=op.f(f"fk_{table}_{column}_{target}"), ondelete=ondelete
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
    op.add_column(
        "companies",
        sa.Column("time_zone", sa.String(length=64), server_default="UTC", nullable=False),
    )
    op.add_column("runs", sa.Column("budget_stop_at", sa.DateTime(timezone=True), nullable=True))

    op.create_table(
        "model_prices",
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("input_per_million_micros", sa.BigInteger(), nullable=False),
        sa.Column("cached_input_per_million_micros", sa.BigInteger(), nullable=False),
        sa.Column("output_per_million_micros", sa.BigInteger(), nullable=False),
        sa.Column("currency", sa.String(length=8), nullable=False),
        *_timestamps(),
        sa.PrimaryKeyConstraint("model", name=op.f("pk_model_prices")),
    )

    op.create_table(
        "cost_events",
        sa.Column("id", sa.BigInteger(), sa.Identity(always=False), nullable=False),
        sa.Column("company_id", sa.Uuid(), nullable=False),
        sa.Column("agent_id", sa.Uuid(), nullable=False),
        sa.Column("project_id", sa.Uuid(), nullable=True),
        sa.Column("issue_id", sa.Uuid(), nullable=True),
        sa.Column("run_id", sa.Uuid(), nullable=False),
        sa.Column("turn", sa.Integer(), nullable=False),
        sa.Column("key", sa.String(length=200), nullable=False),
        sa.Column("provider", sa.String(length=100), nullable=False),
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("input_tokens", sa.BigInteger(), nullable=False),
        sa.Column("cached_input_tokens", sa.BigInteger(), nullable=False),
        sa.Column("output_tokens", sa.BigInteger(), nullable=False),
        sa.Column("reasoning_tokens", sa.BigInteger(), nullable=False),
        sa.Column("cost_micros", sa.BigInteger(), nullable=True),
        sa.Column("currency", sa.String(length=8), nullable=False),
        sa.Column("cost_source", sa.String(length=20), nullable=False),
        sa.Column(
            "occurred_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        _fk("cost_events", "company_id", "companies", "CASCADE"),
        _fk("cost_events", "agent_id", "agents", "CASCADE"),
        _fk("cost_events", "project_id", "projects", "SET NULL"),
        _fk("cost_events", "issue_id", "issues", "SET NULL"),
        _fk("cost_events", "run_id", "runs", "CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_cost_events")),
        sa.UniqueConstraint("run_id", "key", name=op.f("uq_cost_events_run_id_key")),
    )
    op.create_index("ix_cost_events_company_occurred", "cost_events", ["company_id", "occurred_at"])
    op.create_index(op.f("ix_cost_events_agent_id"), "cost_events", ["agent_id"])
    op.create_index(op.f("ix_cost_events_project_id"), "cost_events", ["project_id"])
    op.create_index(op.f("ix_cost_events_issue_id"), "cost_events", ["issue_id"])

    op.create_table(
        "budgets",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("company_id", sa.Uuid(), nullable=False),
        sa.Column("scope", sa.String(length=20), nullable=False),
        sa.Column("scope_id", sa.Uuid(), nullable=False),
        sa.Column("monthly_limit_micros", sa.BigInteger(), nullable=False),
        sa.Column("warn_percent", sa.Integer(), nullable=False),
        sa.Column("run_reserve_micros", sa.BigInteger(), nullable=False),
        sa.Column("currency", sa.String(length=8), nullable=False),
        *_timestamps(),
        _fk("budgets", "company_id", "companies", "CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_budgets")),
        sa.UniqueConstraint("scope", "scope_id", name=op.f("uq_budgets_scope_scope_id")),
    )
    op.create_index(op.f("ix_budgets_company_id"), "budgets", ["company_id"])

    op.create_table(
        "budget_months",
        sa.Column("budget_id", sa.Uuid(), nullable=False),
        sa.Column("month", sa.String(length=7), nullable=False),
        sa.Column("spent_micros", sa.BigInteger(), nullable=False),
        sa.Column("reserved_micros", sa.BigInteger(), nullable=False),
        sa.Column("warned_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("exceeded_at", sa.DateTime(timezone=True), nullable=True),
        _fk("budget_months", "budget_id", "budgets", "CASCADE"),
        sa.PrimaryKeyConstraint("budget_id", "month", name=op.f("pk_budget_months")),
    )

    op.create_table(
        "run_reservations",
        sa.Column("run_id", sa.Uuid(), nullable=False),
        sa.Column("budget_id", sa.Uuid(), nullable=False),
        sa.Column("month", sa.String(length=7), nullable=False),
        sa.Column("micros", sa.BigInteger(), nullable=False),
        _fk("run_reservations", "run_id", "runs", "CASCADE"),
        _fk("run_reservations", "budget_id", "budgets", "CASCADE"),
        sa.PrimaryKeyConstraint("run_id", "budget_id", name=op.f("pk_run_reservations")),
    )


def downgrade() -> None:
    op.drop_table("run_reservations")
    op.drop_table("budget_months")
    op.drop_table("budgets")
    op.drop_table("cost_events")
    op.drop_table("model_prices")
    op.drop_column("runs", "budget_stop_at")
    op.drop_column("companies", "time_zone")
