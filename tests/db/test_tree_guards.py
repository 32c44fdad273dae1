"""The database holds the org chart and the issue tree: no loop, no parent of another company.

A check in code alone would let two moves made together close a loop that
neither sees (A under B in one transaction, B under A in another); the
guard (migration 0021) takes a company's tree changes one at a time.
"""

from __future__ import annotations

import asyncio
import uuid

import asyncpg
import pytest

from paperclip.testing import connect


@pytest.fixture
async def db(paperclip_database_url):
    conn = await connect(paperclip_database_url)
    try:
        yield conn
    finally:
        await conn.close()


async def company(conn) -> uuid.UUID:
    company_id = uuid.uuid4()
    await conn.execute(
        "INSERT INTO companies (id, name, issue_prefix, issue_counter) VALUES ($1, 'Acme', 'AC', 0)",
        company_id,
    )
    return company_id


async def agent(conn, company_id: uuid.UUID, reports_to: uuid.UUID | None = None) -> uuid.UUID:
    agent_id = uuid.uuid4()
    await conn.execute(
        "INSERT INTO agents (id, company_id, name, role, provider, provider_config, status, "
        "reports_to) VALUES ($1, $2, $3, '', 'echo', '{}', 'active', $4)",
        agent_id,
        company_id,
        f"agent-{agent_id.hex[:8]}",
        reports_to,
    )
    return agent_id


async def issue(conn, company_id: uuid.UUID, parent: uuid.UUID | None = None) -> uuid.UUID:
    issue_id = uuid.uuid4()
    number = int(issue_id.int % 1_000_000_000)
    await conn.execute(
        "INSERT INTO issues (id, company_id, number, identifier, title, description, status, "
        "priority, parent_id) VALUES ($1, $2, $3, $4, 'Part', '', 'todo', 'medium', $5)",
        issue_id,
        company_id,
        number,
        f"AC-{number}",
        parent,
    )
    return issue_id


async def refused(statement, *args, conn, constraint: str) -> None:
    with pytest.raises(asyncpg.CheckViolationError) as raised:
        await conn.execute(statement, *args)
    assert raised.value.constraint_name == constraint


async def test_an_agent_cannot_report_to_itself_or_below_itself(db):
    acme = await company(db)
    ceo = await agent(db, acme)
    cto = await agent(db, acme, reports_to=ceo)
    dev = await agent(db, acme, reports_to=cto)
    move = "UPDATE agents SET reports_to = $2 WHERE id = $1"
    for manager in (ceo, cto, dev):
        await refused(move, ceo, manager, conn=db, constraint="agents_reports_to_no_cycle")
    assert await db.fetchval("SELECT reports_to FROM agents WHERE id = $1", ceo) is None

    await db.execute(move, dev, ceo)  # a move that closes no loop is taken
    assert await db.fetchval("SELECT reports_to FROM agents WHERE id = $1", dev) == ceo


async def test_a_manager_or_a_parent_of_another_company_is_refused(db):
    acme, other = await company(db), await company(db)
    theirs = await agent(db, other)
    with pytest.raises(asyncpg.CheckViolationError) as raised:
        await agent(db, acme, reports_to=theirs)
    assert raised.value.constraint_name == "agents_reports_to_same_company"
    their_issue = await issue(db, other)
    with pytest.raises(asyncpg.CheckViolationError) as raised:
        await issue(db, acme, parent=their_issue)
    assert raised.value.constraint_name == "issues_parent_id_same_company"
    assert await db.fetchval("SELECT count(*) FROM agents WHERE company_id = $1", acme) == 0


async def test_an_issue_cannot_be_a_part_of_its_own_part(db):
    acme = await company(db)
    goal = await issue(db, acme)
    step = await issue(db, acme, parent=goal)
    await refused(
        "UPDATE issues SET parent_id = $2 WHERE id = $1",
        goal,
        step,
        conn=db,
        constraint="issues_parent_id_no_cycle",
    )


async def test_two_moves_made_together_cannot_close_a_loop(db, paperclip_database_url):
    acme = await company(db)
    a, b = await agent(db, acme), await agent(db, acme)
    other = await connect(paperclip_database_url)
    try:
        first = db.transaction()
        await first.start()
        await db.execute("UPDATE agents SET reports_to = $2 WHERE id = $1", a, b)  # a under b

        # b under a, at the same time: it waits for the first move's commit, then sees it.
        second = asyncio.create_task(
            other.execute("UPDATE agents SET reports_to = $2 WHERE id = $1", b, a)
        )
        waiting = (
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND pid = $1"
        )
        pid = other.get_server_pid()
        while not await db.fetchval(waiting, pid):
            assert not second.done(), second
            await asyncio.sleep(0.02)
        await first.commit()

        with pytest.raises(asyncpg.CheckViolationError) as raised:
            await second
        assert raised.value.constraint_name == "agents_reports_to_no_cycle"
    finally:
        await other.close()
    rows = await db.fetch("SELECT id, reports_to FROM agents WHERE id = ANY($1)", [a, b])
    assert {row["id"]: row["reports_to"] for row in rows} == {a: b, b: None}
