"""the succeeded runs whose answer is not presented yet, indexed for presentation recovery

Revision ID: 0009_unpresented
Revises: 0008_steering
Create Date: 2026-11-30 13:30:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009_unpresented"
down_revision: str | None = "0008_steering"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index(
        "ix_runs_unpresented",
        "runs",
        ["finished_at"],
        postgresql_where=sa.text(
            "status = 'succeeded' AND presentation IS NULL AND answer IS NOT NULL"
        ),
    )


def downgrade() -> None:
    op.drop_index("ix_runs_unpresented", table_name="runs")
