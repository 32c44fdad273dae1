"""what each runner said it offers: its providers, launch profiles and their probes

Revision ID: 0017_runner_offers
Revises: 0016_routines_heartbeats
Create Date: 2026-12-03 10:00:00.000000

A runner's ``hello`` names its providers and launch profiles, and its
``provider_report`` says whether each profile's CLI is installed. They are
kept on the runner's row (``offers``, null until it connects again), so any
replica answers a check of an agent (``POST …/agents/{id}/check``) the same.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0017_runner_offers"
down_revision: str | None = "0016_routines_heartbeats"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "runners", sa.Column("offers", postgresql.JSONB(astext_type=sa.Text()), nullable=True)
    )


def downgrade() -> None:
    op.drop_column("runners", "offers")
