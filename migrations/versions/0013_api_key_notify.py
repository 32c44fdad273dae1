"""a change to any API key notifies every replica, which forgets the keys it checked

Revision ID: 0013_api_key_notify
Revises: 0012_comment_keys
Create Date: 2026-12-01 15:00:00.000000

A replica remembers the keys it checked while it LISTENs on
``paperclip_api_keys`` (``paperclip.domain.keys.key_cache``). Revoking, deleting
(a company's deletion included) or changing a key notifies that channel at the
commit, and every replica forgets what it remembered. ``last_used_at`` is not
a change: its updates do not notify.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0013_api_key_notify"
down_revision: str | None = "0012_comment_keys"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

NOTIFY_FUNCTION = """
CREATE FUNCTION paperclip_notify_api_keys() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('paperclip_api_keys', '');
    RETURN NULL;
END $$
"""


def upgrade() -> None:
    op.execute(NOTIFY_FUNCTION)
    op.execute(
        "CREATE TRIGGER api_keys_notify"
        " AFTER UPDATE OF key_hash, company_id, role, revoked_at OR DELETE OR TRUNCATE"
        " ON api_keys FOR EACH STATEMENT EXECUTE FUNCTION paperclip_notify_api_keys()"
    )


def downgrade() -> None:
    op.execute("DROP TRIGGER api_keys_notify ON api_keys")
    op.execute("DROP FUNCTION paperclip_notify_api_keys()")
