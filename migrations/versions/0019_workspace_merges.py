"""merging an issue's branch into its base branch: the project's strategy, the merge requests

Revision ID: 0019_workspace_merges
Revises: 0018_lean_tool_journal
Create Date: 2026-12-04 09:00:00.000000

Forward-only: a column with a default and a new table. A project says how its
issues' branches are merged (``merge_strategy``: ``fast_forward``, the default
for existing projects, or ``merge_commit``). ``workspace_merges`` keeps each
merge request and the runner's answer; partial unique indexes make a merge
exactly once (one pending request per issue, one merge per branch head).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0019_workspace_merges"
down_revision: str | None = "0018_lean_tool_journal"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "projects",
        sa.Column("merge_strategy", sa.String(20), server_default="fast_forward", nullable=False),
    )
    op.create_check_constraint(
        op.f("ck_projects_merge_strategy"),
        "projects",
        "merge_strategy IN ('fast_forward', 'merge_commit')",
    )
    op.create_table(
        "workspace_merges",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("company_id", sa.Uuid(), nullable=False),
        sa.Column("issue_id", sa.Uuid(), nullable=False),
        sa.Column("runner_id", sa.Uuid(), nullable=True),
        sa.Column("status", sa.String(20), server_default="pending", nullable=False),
        sa.Column("strategy", sa.String(20), server_default="fast_forward", nullable=False),
        sa.Column("branch", sa.String(255), nullable=False),
        sa.Column("base_ref", sa.String(255), nullable=True),
        sa.Column("head_commit", sa.String(64), nullable=False),
        sa.Column("close_issue", sa.Boolean(), server_default=sa.text("false"), nullable=False),
        sa.Column("actor_type", sa.String(20), nullable=False),
        sa.Column("actor_id", sa.String(200), nullable=False),
        sa.Column("commit", sa.String(64), nullable=True),
        sa.Column("merged_head", sa.String(64), nullable=True),
        sa.Column("merged_commits", sa.Integer(), nullable=True),
        sa.Column("conflicts", postgresql.JSONB(astext_type=sa.Text()), nullable=True),
        sa.Column("files", postgresql.JSONB(astext_type=sa.Text()), nullable=True),
        sa.Column("error_code", sa.String(64), nullable=True),
        sa.Column("error_message", sa.Text(), nullable=True),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.Column(
            "sent_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False
        ),
        sa.Column("answered_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint(
            "status IN ('pending', 'merged', 'refused')", name=op.f("ck_workspace_merges_status")
        ),
        sa.CheckConstraint(
            "strategy IN ('fast_forward', 'merge_commit')",
            name=op.f("ck_workspace_merges_strategy"),
        ),
        sa.ForeignKeyConstraint(
            ["company_id"],
            ["companies.id"],
            name=op.f("fk_workspace_merges_company_id_companies"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["issue_id"],
            ["issues.id"],
            name=op.f("fk_workspace_merges_issue_id_issues"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["runner_id"],
            ["runners.id"],
            name=op.f("fk_workspace_merges_runner_id_runners"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_workspace_merges")),
    )
    op.create_index(
        op.f("ix_workspace_merges_company_id"), "workspace_merges", ["company_id"], unique=False
    )
    op.create_index(
        op.f("ix_workspace_merges_issue_id"), "workspace_merges", ["issue_id"], unique=False
    )
    op.create_index(
        "uq_workspace_merges_pending",
        "workspace_merges",
        ["issue_id"],
        unique=True,
        postgresql_where=sa.text("status = 'pending'"),
    )
    op.create_index(
        "uq_workspace_merges_head",
        "workspace_merges",
        ["issue_id", "head_commit"],
        unique=True,
        postgresql_where=sa.text("status = 'merged'"),
    )


def downgrade() -> None:
    op.drop_table("workspace_merges")
    op.drop_constraint(op.f("ck_projects_merge_strategy"), "projects", type_="check")
    op.drop_column("projects", "merge_strategy")
