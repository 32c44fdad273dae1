"""The tool journal's statements are planned once on their own pool, not at every execution.

PostgreSQL's default may plan a statement over arrays anew at each
execution: it sees the arrays' lengths then, and the plan for any length can
look costlier. On the journal's hottest path, with the tables of a running
server, it did so, and planning took about as long as the statement itself
(docs/performance.md, "Each journal statement planned once").
"""

from __future__ import annotations

import uuid

from paperclip.db.driver import plain_connection
from paperclip.engine.logs.journal import RECORD_MANY, RECORD_MANY_SEQUENCED

EXECUTIONS = 7
"""Past the five custom plans PostgreSQL makes before it weighs a generic one."""


async def plans(engine, statement: str = RECORD_MANY) -> tuple[int, int]:
    """(generic, custom) plans of ``statement`` after ``EXECUTIONS`` on one connection.

    Its runs do not exist: the fence matches none, and nothing is written.
    """
    outbox_of = (uuid.uuid4(),) if statement == RECORD_MANY_SEQUENCED else ()
    async with plain_connection(engine) as connection:
        for i in range(EXECUTIONS):
            runs = [uuid.uuid4() for _ in range(i % 3 + 1)]
            rows = await connection.fetch(
                statement,
                runs,
                [1] * len(runs),
                "replica-plans",
                runs,
                [f"call-{i}" for _ in runs],
                ["report_progress" for _ in runs],
                ['{"summary": "x"}' for _ in runs],
                [1] * len(runs),
                ['{"ok": true}' for _ in runs],
                ["revision" for _ in runs],
                ["progress" for _ in runs],
                ['{"summary": "x"}' for _ in runs],
                *outbox_of,
            )
            assert rows == []
        row = await connection.fetchrow(
            "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement = $1",
            statement,
        )
    assert row is not None
    return row["generic_plans"], row["custom_plans"]


async def test_the_call_pipeline_journals_on_connections_that_plan_once(paperclip_container):
    journal = paperclip_container.journal_engine()
    assert paperclip_container.run_engine().calls.engine is journal
    assert await plans(journal) == (EXECUTIONS, 0)
    assert await plans(journal, RECORD_MANY_SEQUENCED) == (EXECUTIONS, 0)


async def test_only_the_journals_connections_leave_the_default(paperclip_container):
    # The main pool's queries need plans made for their values (its partial indexes).
    async with plain_connection(paperclip_container.engine()) as connection:
        assert await connection.fetchval("SHOW plan_cache_mode") == "auto"
    async with plain_connection(paperclip_container.journal_engine()) as connection:
        assert await connection.fetchval("SHOW plan_cache_mode") == "force_generic_plan"
