"""Migration 0005 from the previous schema: a run made before wake snapshots keeps working."""

from __future__ import annotations

import asyncio
import uuid

from paperclip_hookspecs.completion import CompletionReport, CompletionStage
from sqlalchemy.ext.asyncio import async_sessionmaker

from paperclip.db import migrate
from paperclip.db.engine import create_engine
from paperclip.engine.context.completion import check_completion, completion_check
from paperclip.models import Agent, Comment, Company, Issue, Run
from paperclip.plugin_host import PluginHost
from paperclip.testing import connect, scratch_database
from tests.support.db import insert_as_of, query


async def _old_run(url: str) -> uuid.UUID:
    """A running run with comments, written while the schema is at 0004."""
    company = Company(id=uuid.uuid4(), name="Old", issue_prefix="OLD")
    agent = Agent(id=uuid.uuid4(), company_id=company.id, name="a", provider="codex")
    issue = Issue(
        id=uuid.uuid4(),
        company_id=company.id,
        number=1,
        identifier="OLD-1",
        title="t",
        assignee_agent_id=agent.id,
    )
    run = Run(
        id=uuid.uuid4(),
        company_id=company.id,
        agent_id=agent.id,
        issue_id=issue.id,
        provider="codex",
        status="running",
    )
    comment = Comment(
        company_id=company.id,
        issue_id=issue.id,
        author_user_id="someone",
        body="old comment",
        revision="0" * 64,
    )
    conn = await connect(url)
    try:
        async with conn.transaction():
            for row in (company, agent, issue, run, comment):  # in FK order
                await insert_as_of(conn, row)
    finally:
        await conn.close()
    return run.id


async def _check(url: str, run_id: uuid.UUID) -> tuple[object, object]:
    engine = create_engine(url, pool_size=1)
    try:
        async with async_sessionmaker(engine).begin() as session:
            run = await session.get_one(Run, run_id)
            report = CompletionReport(status="done", summary="ok")
            check = await completion_check(session, run, CompletionStage.FEEDBACK, report)
            refusal = await check_completion(
                session, run, CompletionStage.TERMINAL, report, PluginHost.with_builtins()
            )
            return check.snapshot, refusal
    finally:
        await engine.dispose()


def test_a_run_made_before_snapshots_has_none_and_its_report_is_accepted(paperclip_postgres_url):
    with scratch_database(paperclip_postgres_url, "paperclip_migration_snapshots") as url:
        migrate.upgrade(url, "0005_sessions")
        run_id = asyncio.run(_old_run(url))
        migrate.upgrade(url)

        assert query(url, "SELECT count(*) AS n FROM wake_snapshots") == [{"n": 0}]
        snapshot, refusal = asyncio.run(_check(url, run_id))
        assert snapshot is None and refusal is None
