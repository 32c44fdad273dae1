"""security: scoped API keys with roles, server secrets, idempotency-key request hashes

Keys made before scoping could reach every company: they become
instance-admin keys. Empty names get one from the key's prefix, and
duplicate live names a suffix, so names can be unique from now on.

Revision ID: 0003_security
Revises: 0002
Create Date: 2026-11-30 10:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003_security"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("api_keys", sa.Column("company_id", sa.Uuid(), nullable=True))
    op.add_column(
        "api_keys",
        sa.Column("role", sa.String(length=20), nullable=False, server_default="instance_admin"),
    )
    op.alter_column("api_keys", "role", server_default=None)
    op.create_foreign_key(
        op.f("fk_api_keys_company_id_companies"),
        "api_keys",
        "companies",
        ["company_id"],
        ["id"],
        ondelete="CASCADE",
    )
    op.create_index(op.f("ix_api_keys_company_id"), "api_keys", ["company_id"])
    op.create_check_constraint(
        op.f("ck_api_keys_scope_matches_role"),
        "api_keys",
        "(company_id IS NULL) = (role = 'instance_admin')",
    )
    op.create_check_constraint(
        op.f("ck_api_keys_known_role"),
        "api_keys",
        "role IN ('viewer', 'member', 'admin', 'instance_admin')",
    )
    op.execute("UPDATE api_keys SET name = 'key-' || prefix WHERE btrim(name) = ''")
    op.execute(
        """
        UPDATE api_keys AS k SET name = left(k.name, 180) || ' (' || k.prefix || ')'
        FROM (
            SELECT id, row_number() OVER (PARTITION BY name ORDER BY created_at, id) AS n
            FROM api_keys WHERE revoked_at IS NULL
        ) AS d
        WHERE k.id = d.id AND d.n > 1
        """
    )
    op.create_index(
        "uq_api_keys_company_live_name",
        "api_keys",
        ["company_id", "name"],
        unique=True,
        postgresql_where=sa.text("company_id IS NOT NULL AND revoked_at IS NULL"),
    )
    op.create_index(
        "uq_api_keys_instance_live_name",
        "api_keys",
        ["name"],
        unique=True,
        postgresql_where=sa.text("company_id IS NULL AND revoked_at IS NULL"),
    )

    op.create_table(
        "server_secrets",
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("value", sa.LargeBinary(), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_server_secrets")),
    )

    op.add_column("wake_keys", sa.Column("request_hash", sa.String(length=64), nullable=True))


def downgrade() -> None:
    # Migrations are forward-only; see docs/architecture.md.
    raise NotImplementedError("Paperclip migrations are forward-only")
