"""an org chart: who an agent reports to; trees of agents and of issues without loops

Revision ID: 0021_org_chart
Revises: 0020_run_dismissals
Create Date: 2026-12-07 08:00:00.000000

``agents.reports_to``: the agent's manager in its company (NULL: the top).
Both trees, agents by ``reports_to`` and issues by ``parent_id``, are held
by the database: a trigger refuses a parent of another company
(``<table>_<column>_same_company``) and a parent that is the row itself or
below it (``<table>_<column>_no_cycle``). Changes to one company's tree are
taken one at a time (an advisory lock until commit), so two moves made
together cannot close a loop that neither sees alone.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0021_org_chart"
down_revision: str | None = "0020_run_dismissals"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

GUARD = """
CREATE FUNCTION paperclip_tree_guard() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    parent_column text := TG_ARGV[0];
    parent uuid;
    parent_company uuid;
    looped boolean;
BEGIN
    EXECUTE format('SELECT ($1).%I', parent_column) INTO parent USING NEW;
    IF parent IS NULL THEN
        RETURN NEW;
    END IF;
    -- One change of a company's tree at a time; the queries below run after the lock, each
    -- with a snapshot of its own, so they see what a change committed before it.
    PERFORM pg_advisory_xact_lock(
        hashtextextended(TG_TABLE_NAME || ' tree of ' || NEW.company_id::text, 0)
    );
    EXECUTE format('SELECT company_id FROM %I WHERE id = $1', TG_TABLE_NAME)
        INTO parent_company USING parent;
    IF parent_company IS DISTINCT FROM NEW.company_id THEN
        RAISE EXCEPTION '% % is not of the same company', TG_TABLE_NAME, parent
            USING ERRCODE = 'check_violation',
                  CONSTRAINT = TG_TABLE_NAME || '_' || parent_column || '_same_company';
    END IF;
    -- UNION, not UNION ALL: the walk ends even on a loop made before this guard.
    EXECUTE format(
        'WITH RECURSIVE up(id) AS ('
        '  SELECT $1::uuid'
        '  UNION SELECT t.%1$I FROM %2$I t JOIN up ON t.id = up.id WHERE t.%1$I IS NOT NULL'
        ') SELECT EXISTS (SELECT 1 FROM up WHERE id = $2)',
        parent_column, TG_TABLE_NAME
    ) INTO looped USING parent, NEW.id;
    IF looped THEN
        RAISE EXCEPTION '% % is % itself or below it', TG_TABLE_NAME, parent, NEW.id
            USING ERRCODE = 'check_violation',
                  CONSTRAINT = TG_TABLE_NAME || '_' || parent_column || '_no_cycle';
    END IF;
    RETURN NEW;
END
$$;
"""


def upgrade() -> None:
    op.add_column(
        "agents",
        sa.Column(
            "reports_to",
            sa.Uuid(),
            sa.ForeignKey(
                "agents.id", name=op.f("fk_agents_reports_to_agents"), ondelete="SET NULL"
            ),
            nullable=True,
        ),
    )
    op.create_index(op.f("ix_agents_reports_to"), "agents", ["reports_to"])
    op.execute(GUARD)
    op.execute(
        "CREATE TRIGGER agents_reports_to_guard BEFORE INSERT OR UPDATE OF reports_to, "
        "company_id ON agents FOR EACH ROW EXECUTE FUNCTION paperclip_tree_guard('reports_to')"
    )
    op.execute(
        "CREATE TRIGGER issues_parent_guard BEFORE INSERT OR UPDATE OF parent_id, "
        "company_id ON issues FOR EACH ROW EXECUTE FUNCTION paperclip_tree_guard('parent_id')"
    )


def downgrade() -> None:
    op.execute("DROP TRIGGER issues_parent_guard ON issues")
    op.execute("DROP TRIGGER agents_reports_to_guard ON agents")
    op.execute("DROP FUNCTION paperclip_tree_guard()")
    op.drop_index(op.f("ix_agents_reports_to"), table_name="agents")
    op.drop_column("agents", "reports_to")
