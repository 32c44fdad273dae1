"""run answers and their presentation; wakes notify the schedulers

Revision ID: 0004
Revises: 0003_security
Create Date: 2026-11-30 10:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0004"
down_revision: str | None = "0003_security"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Every replica's scheduler LISTENs on this channel: a wake became claimable
# (queued), or a run ended and freed its issue for the next queued wake.
# NOTIFY is delivered on commit, so a listener never sees an uncommitted wake.
NOTIFY_FUNCTION = """
CREATE FUNCTION paperclip_notify_wakes() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('paperclip_wakes', '');
    RETURN NULL;
END $$
"""


def upgrade() -> None:
    op.add_column("runs", sa.Column("status_reason", sa.String(length=100), nullable=True))
    op.add_column("runs", sa.Column("answer", sa.Text(), nullable=True))
    op.add_column(
        "runs",
        sa.Column("presentation", postgresql.JSONB(astext_type=sa.Text()), nullable=True),
    )
    op.execute(NOTIFY_FUNCTION)
    op.execute(
        "CREATE TRIGGER wake_requests_notify AFTER INSERT OR UPDATE OF status ON wake_requests "
        "FOR EACH ROW WHEN (NEW.status = 'queued') EXECUTE FUNCTION paperclip_notify_wakes()"
    )
    op.execute(
        "CREATE TRIGGER runs_ended_notify AFTER UPDATE OF status ON runs FOR EACH ROW "
        "WHEN (OLD.status IN ('queued', 'running') AND NEW.status NOT IN ('queued', 'running')) "
        "EXECUTE FUNCTION paperclip_notify_wakes()"
    )


def downgrade() -> None:
    op.execute("DROP TRIGGER runs_ended_notify ON runs")
    op.execute("DROP TRIGGER wake_requests_notify ON wake_requests")
    op.execute("DROP FUNCTION paperclip_notify_wakes()")
    op.drop_column("runs", "presentation")
    op.drop_column("runs", "answer")
    op.drop_column("runs", "status_reason")
