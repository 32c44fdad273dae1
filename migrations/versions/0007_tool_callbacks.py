"""tool callbacks: pending inputs by run, controller boots, active no-replay holds by run

Revision ID: 0007_tool_callbacks
Revises: 0006
Create Date: 2026-11-30 13:00:00.000000

Adds no column to existing rows: a journal or a hold saved before it is read
as it is (holds of the earlier shape settle on the reconciler's first pass).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007_tool_callbacks"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index(
        "ix_tool_calls_pending",
        "tool_calls",
        ["run_id"],
        unique=False,
        postgresql_where=sa.text("status = 'pending'"),
    )
    op.create_table(
        "controller_boots",
        sa.Column("boot_id", sa.Uuid(), nullable=False),
        sa.Column("instance", sa.String(length=200), nullable=False),
        sa.Column(
            "started_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.Column(
            "seen_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False
        ),
        sa.Column("retired_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("boot_id", name=op.f("pk_controller_boots")),
    )
    op.create_index(
        "ix_task_holds_no_replay",
        "task_holds",
        ["run_id"],
        unique=False,
        postgresql_where=sa.text("status = 'active' AND replay_forbidden"),
    )


def downgrade() -> None:
    op.drop_index("ix_task_holds_no_replay", table_name="task_holds")
    op.drop_table("controller_boots")
    op.drop_index("ix_tool_calls_pending", table_name="tool_calls")
