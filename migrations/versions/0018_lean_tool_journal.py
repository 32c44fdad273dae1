"""the tool journal writes less per call: a call's own receipt is its journal row

Revision ID: 0018_lean_tool_journal
Revises: 0017_runner_offers
Create Date: 2026-12-03 18:20:00.000000

A write tool's receipt is keyed by its command id. When the model names no
command id of its own, the command id is the call's own (``<run>:<call>``),
which names exactly one journal row: that row, settled, is the receipt
(``tool_calls.state_revision``), and no ``tool_receipts`` row is written.
``tool_receipts`` keeps the receipts of commands the model named, which a
later call of the run may repeat.

Existing receipts of a call's own command id move onto their call's row.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0018_lean_tool_journal"
down_revision: str | None = "0017_runner_offers"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

OWN_COMMAND = "r.command_id = t.run_id::text || ':' || t.call_id AND r.run_id = t.run_id"


def upgrade() -> None:
    op.add_column("tool_calls", sa.Column("state_revision", sa.String(64), nullable=True))
    op.execute(
        "UPDATE tool_calls t SET state_revision = r.state_revision "
        f"FROM tool_receipts r WHERE {OWN_COMMAND}"
    )
    op.execute(f"DELETE FROM tool_receipts r USING tool_calls t WHERE {OWN_COMMAND}")


def downgrade() -> None:
    op.execute(
        "INSERT INTO tool_receipts (command_id, company_id, run_id, tool, state_revision, result) "
        "SELECT t.run_id::text || ':' || t.call_id, t.company_id, t.run_id, t.tool, "
        "t.state_revision, coalesce(t.result, '{}'::jsonb) - 'receipt' "
        "FROM tool_calls t WHERE t.state_revision IS NOT NULL ON CONFLICT DO NOTHING"
    )
    op.drop_column("tool_calls", "state_revision")
