"""Migration 0018 from the previous schema: a call's own receipt moves onto its journal row.

Receipts of commands the model named stay in ``tool_receipts``; a call settled
before the upgrade is answered, and replayed, as it was.
"""

from __future__ import annotations

import asyncio
import json
import uuid

from paperclip.db import migrate
from paperclip.models import Agent, Company, Run
from paperclip.testing import connect, scratch_database
from tests.support.db import insert_as_of, query

PREVIOUS = "0017_runner_offers"


async def _old_journal(url: str) -> dict[str, object]:
    """A run with two settled write calls and their receipts, as the schema at 0017 keeps them:
    one under its own command id, one under a command id the model named."""
    company = Company(id=uuid.uuid4(), name="Old", issue_prefix="OLD")
    agent = Agent(id=uuid.uuid4(), company_id=company.id, name="a", provider="codex")
    run = Run(
        id=uuid.uuid4(),
        company_id=company.id,
        agent_id=agent.id,
        provider="codex",
        status="succeeded",
    )
    own, named = f"{run.id}:c1", f"{run.id}:cmd:note"
    conn = await connect(url)
    try:
        for row in (company, agent, run):
            await insert_as_of(conn, row)
        for call_id, command_id, revision in (("c1", own, "r-own"), ("c2", named, "r-named")):
            receipt = {"command_id": command_id, "outcome": "applied", "state_revision": revision}
            await conn.execute(
                "INSERT INTO tool_calls (company_id, run_id, call_id, tool, arguments, status, "
                "admitted_by, admitted_epoch, result, is_error, settled_by, settled_epoch, "
                "settled_at) VALUES ($1, $2, $3, 'report_progress', '{}', 'settled', 'old', 1, "
                "$4::jsonb, false, 'old', 1, now())",
                company.id,
                run.id,
                call_id,
                json.dumps({"recorded": True, "receipt": receipt}),
            )
            await conn.execute(
                "INSERT INTO tool_receipts (command_id, company_id, run_id, tool, state_revision, "
                "result) VALUES ($1, $2, $3, 'report_progress', $4, '{\"recorded\": true}')",
                command_id,
                company.id,
                run.id,
                revision,
            )
    finally:
        await conn.close()
    return {"run": run.id, "own": own, "named": named}


def test_own_receipts_move_onto_their_calls_and_named_ones_stay(paperclip_postgres_url):
    with scratch_database(paperclip_postgres_url, "paperclip_migration_lean_journal") as url:
        migrate.upgrade(url, PREVIOUS)
        old = asyncio.run(_old_journal(url))
        migrate.upgrade(url)

        calls = query(
            url,
            "SELECT call_id, status, state_revision, result FROM tool_calls "
            "WHERE run_id = $1 ORDER BY call_id",
            old["run"],
        )
        assert [(c["call_id"], c["status"], c["state_revision"]) for c in calls] == [
            ("c1", "settled", "r-own"),
            ("c2", "settled", None),
        ]
        # The saved results, which a replay is answered with, are untouched.
        saved = [json.loads(c["result"])["receipt"]["command_id"] for c in calls]
        assert saved == [old["own"], old["named"]]
        receipts = query(url, "SELECT command_id, state_revision FROM tool_receipts")
        assert receipts == [{"command_id": old["named"], "state_revision": "r-named"}]
