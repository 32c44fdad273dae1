"""wake snapshots and the read receipts of their comments

Revision ID: 0006
Revises: 0005_sessions
Create Date: 2026-11-30 12:00:00.000000

Forward-only in practice: runs created before it have no snapshot, and the
completion guards treat them as not woken by comments (nothing to read).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005_sessions"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _fk(table: str, column: str, target: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        [column], [f"{target}.id"], name=op.f(f"fk_{table}_{column}_{target}"), ondelete="CASCADE"
    )


def _created_at() -> sa.Column:
    return sa.Column(
        "created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False
    )


def upgrade() -> None:
    op.create_table(
        "wake_snapshots",
        sa.Column("company_id", sa.Uuid(), nullable=False),
        sa.Column("run_id", sa.Uuid(), nullable=False),
        sa.Column("issue_id", sa.Uuid(), nullable=False),
        sa.Column("agent_id", sa.Uuid(), nullable=False),
        sa.Column("revision", sa.String(length=64), nullable=False),
        sa.Column("comment_count", sa.Integer(), nullable=False),
        sa.Column("read_required", sa.Boolean(), nullable=False),
        sa.Column("read_reason", sa.String(length=40), nullable=True),
        _created_at(),
        sa.Column("id", sa.Uuid(), nullable=False),
        _fk("wake_snapshots", "agent_id", "agents"),
        _fk("wake_snapshots", "company_id", "companies"),
        _fk("wake_snapshots", "issue_id", "issues"),
        _fk("wake_snapshots", "run_id", "runs"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_wake_snapshots")),
        sa.UniqueConstraint("run_id", name=op.f("uq_wake_snapshots_run_id")),
    )
    op.create_table(
        "wake_snapshot_comments",
        sa.Column("snapshot_id", sa.Uuid(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("comment_id", sa.Uuid(), nullable=False),
        sa.Column("revision", sa.String(length=64), nullable=False),
        _fk("wake_snapshot_comments", "comment_id", "comments"),
        _fk("wake_snapshot_comments", "snapshot_id", "wake_snapshots"),
        sa.PrimaryKeyConstraint("snapshot_id", "position", name=op.f("pk_wake_snapshot_comments")),
        sa.UniqueConstraint(
            "snapshot_id",
            "comment_id",
            name=op.f("uq_wake_snapshot_comments_snapshot_id_comment_id"),
        ),
    )
    op.create_table(
        "wake_comment_reads",
        sa.Column("id", sa.BigInteger(), sa.Identity(always=False), nullable=False),
        sa.Column("snapshot_id", sa.Uuid(), nullable=False),
        sa.Column("company_id", sa.Uuid(), nullable=False),
        sa.Column("run_id", sa.Uuid(), nullable=False),
        sa.Column("issue_id", sa.Uuid(), nullable=False),
        sa.Column("agent_id", sa.Uuid(), nullable=False),
        sa.Column("snapshot_revision", sa.String(length=64), nullable=False),
        sa.Column("page", sa.Integer(), nullable=False),
        sa.Column("complete", sa.Boolean(), nullable=False),
        sa.Column("next_cursor", sa.String(length=200), nullable=True),
        _created_at(),
        sa.CheckConstraint("page >= 1", name=op.f("ck_wake_comment_reads_page_positive")),
        _fk("wake_comment_reads", "agent_id", "agents"),
        _fk("wake_comment_reads", "company_id", "companies"),
        _fk("wake_comment_reads", "issue_id", "issues"),
        _fk("wake_comment_reads", "run_id", "runs"),
        _fk("wake_comment_reads", "snapshot_id", "wake_snapshots"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_wake_comment_reads")),
        sa.UniqueConstraint(
            "snapshot_id",
            "run_id",
            "snapshot_revision",
            "page",
            name=op.f("uq_wake_comment_reads_snapshot_id_run_id_snapshot_revision_page"),
        ),
    )


def downgrade() -> None:
    op.drop_table("wake_comment_reads")
    op.drop_table("wake_snapshot_comments")
    op.drop_table("wake_snapshots")
