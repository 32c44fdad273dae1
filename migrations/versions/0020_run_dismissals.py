"""a failed run a person dismissed leaves the inbox

Revision ID: 0020_run_dismissals
Revises: 0019_workspace_merges
Create Date: 2026-12-07 09:00:00.000000

``runs.dismissed_at`` and ``runs.dismissed_by``: set once, when a person
dismisses a failed run (``POST …/runs/{run_id}/dismiss``); the inbox leaves
it out from then on.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0020_run_dismissals"
down_revision: str | None = "0019_workspace_merges"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("runs", sa.Column("dismissed_at", sa.DateTime(timezone=True), nullable=True))
    op.add_column("runs", sa.Column("dismissed_by", sa.String(200), nullable=True))


def downgrade() -> None:
    op.drop_column("runs", "dismissed_by")
    op.drop_column("runs", "dismissed_at")
