"""projects, and each issue's execution workspace (a git worktree on a runner host)

Revision ID: 0014_projects_workspaces
Revises: 0013_api_key_notify
Create Date: 2026-12-03 09:00:00.000000

Forward-only: new tables and nullable columns. A project names its repository
(a folder on the runner host or a clone URL, exactly one); an issue may belong
to one, an agent may have a default one. ``issue_workspaces`` records where
each issue's worktree lives (its runner, folder, branch, base commit) and its
latest work product. A runner's row keeps what its host last said about the
repositories it allows and the disk its workspaces use.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0014_projects_workspaces"
down_revision: str | None = "0013_api_key_notify"
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
        "projects",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("company_id", sa.Uuid(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("repo_path", sa.Text(), nullable=True),
        sa.Column("repo_url", sa.Text(), nullable=True),
        sa.Column("default_branch", sa.String(length=255), nullable=True),
        sa.Column("branch_prefix", sa.String(length=100), nullable=False),
        sa.Column("hooks_enabled", sa.Boolean(), nullable=False),
        *_timestamps(),
        sa.CheckConstraint(
            "(repo_path IS NULL) <> (repo_url IS NULL)", name=op.f("ck_projects_one_source")
        ),
        _fk("projects", "company_id", "companies", "CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_projects")),
        sa.UniqueConstraint("company_id", "name", name=op.f("uq_projects_company_id_name")),
    )
    op.create_index(op.f("ix_projects_company_id"), "projects", ["company_id"])

    op.add_column("issues", sa.Column("project_id", sa.Uuid(), nullable=True))
    op.create_foreign_key(
        op.f("fk_issues_project_id_projects"),
        "issues",
        "projects",
        ["project_id"],
        ["id"],
        ondelete="SET NULL",
    )
    op.create_index(op.f("ix_issues_project_id"), "issues", ["project_id"])

    op.add_column("agents", sa.Column("default_project_id", sa.Uuid(), nullable=True))
    op.create_foreign_key(
        op.f("fk_agents_default_project_id_projects"),
        "agents",
        "projects",
        ["default_project_id"],
        ["id"],
        ondelete="SET NULL",
    )

    for column in (
        sa.Column("workspace_roots", postgresql.JSONB(astext_type=sa.Text()), nullable=True),
        sa.Column("workspace_remotes", postgresql.JSONB(astext_type=sa.Text()), nullable=True),
        sa.Column("workspace_bytes", sa.BigInteger(), nullable=True),
        sa.Column("workspace_count", sa.Integer(), nullable=True),
        sa.Column("status_at", sa.DateTime(timezone=True), nullable=True),
    ):
        op.add_column("runners", column)

    op.create_table(
        "issue_workspaces",
        sa.Column("issue_id", sa.Uuid(), nullable=False),
        sa.Column("company_id", sa.Uuid(), nullable=False),
        sa.Column("project_id", sa.Uuid(), nullable=True),
        sa.Column("runner_id", sa.Uuid(), nullable=True),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("key", sa.String(length=300), nullable=False),
        sa.Column("branch", sa.String(length=255), nullable=False),
        sa.Column("repo_path", sa.Text(), nullable=True),
        sa.Column("repo_url", sa.Text(), nullable=True),
        sa.Column("base_ref", sa.String(length=255), nullable=True),
        sa.Column("base_commit", sa.String(length=64), nullable=True),
        sa.Column("hooks_enabled", sa.Boolean(), nullable=False),
        sa.Column("path", sa.Text(), nullable=True),
        sa.Column("head_commit", sa.String(length=64), nullable=True),
        sa.Column("state", postgresql.JSONB(astext_type=sa.Text()), nullable=True),
        sa.Column("diff", sa.Text(), nullable=True),
        sa.Column("diff_truncated", sa.Boolean(), nullable=False),
        sa.Column("state_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("state_run_id", sa.Uuid(), nullable=True),
        sa.Column("disk_bytes", sa.BigInteger(), nullable=True),
        sa.Column("release_after", sa.DateTime(timezone=True), nullable=True),
        sa.Column("saved_ref", sa.String(length=255), nullable=True),
        sa.Column("released_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("error_code", sa.String(length=64), nullable=True),
        sa.Column("error_message", sa.Text(), nullable=True),
        *_timestamps(),
        _fk("issue_workspaces", "issue_id", "issues", "CASCADE"),
        _fk("issue_workspaces", "company_id", "companies", "CASCADE"),
        _fk("issue_workspaces", "project_id", "projects", "SET NULL"),
        _fk("issue_workspaces", "runner_id", "runners", "SET NULL"),
        _fk("issue_workspaces", "state_run_id", "runs", "SET NULL"),
        sa.PrimaryKeyConstraint("issue_id", name=op.f("pk_issue_workspaces")),
    )
    op.create_index(op.f("ix_issue_workspaces_company_id"), "issue_workspaces", ["company_id"])
    op.create_index(op.f("ix_issue_workspaces_project_id"), "issue_workspaces", ["project_id"])
    op.create_index(op.f("ix_issue_workspaces_runner_id"), "issue_workspaces", ["runner_id"])
    op.create_index(
        "ix_issue_workspaces_release_after",
        "issue_workspaces",
        ["release_after"],
        postgresql_where=sa.text("status = 'ready' AND release_after IS NOT NULL"),
    )


def downgrade() -> None:
    op.drop_table("issue_workspaces")
    for column in (
        "status_at",
        "workspace_count",
        "workspace_bytes",
        "workspace_remotes",
        "workspace_roots",
    ):
        op.drop_column("runners", column)
    op.drop_constraint(op.f("fk_agents_default_project_id_projects"), "agents", type_="foreignkey")
    op.drop_column("agents", "default_project_id")
    op.drop_index(op.f("ix_issues_project_id"), table_name="issues")
    op.drop_constraint(op.f("fk_issues_project_id_projects"), "issues", type_="foreignkey")
    op.drop_column("issues", "project_id")
    op.drop_index(op.f("ix_projects_company_id"), table_name="projects")
    op.drop_table("projects")
