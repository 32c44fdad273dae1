"""steers sent into a run's live turn, once per (run, message)

Revision ID: 0008_steering
Revises: 0007_tool_callbacks
Create Date: 2026-11-30 13:00:00.000000

Forward-only: a new table, nothing existing changes. Which steers a restart
continuation must carry is read from the run log, not from this table.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008_steering"
down_revision: str | None = "0007_tool_callbacks"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "run_steers",
        sa.Column("run_id", sa.Uuid(), nullable=False),
        sa.Column("message_id", sa.String(length=200), nullable=False),
        sa.Column("company_id", sa.Uuid(), nullable=False),
        sa.Column("issue_id", sa.Uuid(), nullable=False),
        sa.Column("comment_id", sa.Uuid(), nullable=True),
        sa.Column("turn", sa.Integer(), nullable=False),
        sa.Column("delivery", sa.String(length=20), nullable=False),
        sa.Column("requested_by", sa.String(length=200), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(
            ["comment_id"],
            ["comments.id"],
            name=op.f("fk_run_steers_comment_id_comments"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["company_id"],
            ["companies.id"],
            name=op.f("fk_run_steers_company_id_companies"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["issue_id"],
            ["issues.id"],
            name=op.f("fk_run_steers_issue_id_issues"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name=op.f("fk_run_steers_run_id_runs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("run_id", "message_id", name=op.f("pk_run_steers")),
    )


def downgrade() -> None:
    op.drop_table("run_steers")
