"""History past its retention goes, in batches; what recovery and the seeds read stays."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from paperclip.engine.logs.retention import RETENTION_LOCK, RetentionKeeper
from paperclip.testing import connect
from tests.support.recovery_load import (
    CALLS_PER_RUN,
    EVENTS_PER_RUN,
    seed_history,
    seed_lost_runs,
    seed_tenant,
)

DAYS = {"run_events": 7.0, "tool_calls": 7.0, "activity_log": 7.0}
OLD = "now() - interval '30 days'"


async def counts(conn, company_id) -> dict[str, int]:
    return {
        table: await conn.fetchval(
            f"SELECT count(*) FROM {table} WHERE company_id = $1", company_id
        )
        for table in ("runs", "run_events", "tool_calls", "activity_log", "tool_receipts")
    }


async def old_event(conn, tenant, run_id, seq, created=OLD) -> None:
    await conn.execute(
        "INSERT INTO run_events (company_id, run_id, seq, type, payload, turn, source_instance,"
        f" source_seq, created_at) VALUES ($1, $2, $3::int, 'item/completed', '{{}}', 1, 'r', $3::int,"
        f" {created})",
        tenant.company_id,
        run_id,
        seq,
    )


async def old_activity(conn, tenant, run_id, created=OLD) -> None:
    await conn.execute(
        "INSERT INTO activity_log (company_id, actor_type, actor_id, action, entity_type,"
        f" entity_id, run_id, details, created_at) VALUES ($1, 'system', 'system', 'x.y', 'run',"
        f" 'e', $2, '{{}}', {created})",
        tenant.company_id,
        run_id,
    )


@pytest.fixture
async def conn(paperclip_database_url):
    connection = await connect(paperclip_database_url)
    yield connection
    await connection.close()


def keeper(container, **options) -> RetentionKeeper:
    return RetentionKeeper(
        container.sessions(), retention_days=DAYS, pass_seconds=60, pause_seconds=0, **options
    )


async def test_a_pass_removes_only_what_is_past_its_retention_and_not_needed(
    paperclip_container, conn
):
    tenant = await seed_tenant(conn)
    await seed_history(conn, tenant, 1000)  # 100 runs ended 30 days ago, events and calls
    history_runs = 1000 // (1 + EVENTS_PER_RUN + CALLS_PER_RUN)
    # A live run (its first turn lost: recovery resumes it) with an old event and activity.
    await seed_lost_runs(conn, tenant, 1)
    live = await conn.fetchval(
        "SELECT id FROM runs WHERE company_id = $1 AND status = 'running'", tenant.company_id
    )
    await old_event(conn, tenant, live, 1)
    await old_activity(conn, tenant, live)
    # An old answer not presented yet: presentation recovery still reads its run.
    unpresented = await conn.fetchval(
        "UPDATE runs SET answer = 'done', presentation = NULL WHERE id = (SELECT id FROM runs"
        " WHERE company_id = $1 AND status = 'succeeded' ORDER BY id LIMIT 1) RETURNING id",
        tenant.company_id,
    )
    # A call of an old run never settled: its recovery policy settles it.
    await conn.execute(
        "UPDATE tool_calls SET status = 'pending', result = NULL WHERE id = (SELECT min(id)"
        " FROM tool_calls WHERE company_id = $1 AND run_id <> $2)",
        tenant.company_id,
        unpresented,
    )
    # A receipt of an old run, and activity old and new of no run.
    await conn.execute(
        "INSERT INTO tool_receipts (command_id, company_id, run_id, tool, state_revision,"
        " result, created_at) VALUES ($1, $2, $3, 'post_comment', 'r', '{}', now() -"
        " interval '30 days')",
        f"receipt-{uuid.uuid4()}",
        tenant.company_id,
        unpresented,
    )
    await old_activity(conn, tenant, None)
    await old_activity(conn, tenant, None, created="now()")
    before = await counts(conn, tenant.company_id)

    report = await keeper(paperclip_container, batch_rows=50).sweep()

    after = await counts(conn, tenant.company_id)
    assert after["runs"] == before["runs"] and after["tool_receipts"] == 1
    kept_events = await conn.fetch(
        "SELECT run_id FROM run_events WHERE company_id = $1", tenant.company_id
    )
    assert sorted(r["run_id"] for r in kept_events) == sorted([live] + [unpresented] * 6)
    kept_calls = await conn.fetch(
        "SELECT run_id, status FROM tool_calls WHERE company_id = $1", tenant.company_id
    )
    assert len(kept_calls) == CALLS_PER_RUN + 1  # the unpresented run's, and the pending one
    assert sum(1 for c in kept_calls if c["status"] == "pending") == 1
    kept_activity = await conn.fetch(
        "SELECT run_id, created_at > now() - interval '1 day' AS new FROM activity_log"
        " WHERE company_id = $1",
        tenant.company_id,
    )
    assert sorted((a["run_id"] == live, a["new"]) for a in kept_activity) == [
        (False, True),
        (True, False),
    ]
    assert report.deleted["run_events"] == (history_runs - 1) * EVENTS_PER_RUN
    assert report.deleted["tool_calls"] == (history_runs - 1) * CALLS_PER_RUN - 1
    assert report.batches > 10  # in batches of 50, not one statement
    # Nothing more to do: a second pass removes nothing.
    assert sum((await keeper(paperclip_container).sweep()).deleted.values()) == 0


async def test_recent_rows_of_an_old_run_stay_and_zero_keeps_for_ever(paperclip_container, conn):
    tenant = await seed_tenant(conn)
    await seed_history(conn, tenant, 100)
    run = await conn.fetchval("SELECT id FROM runs WHERE company_id = $1", tenant.company_id)
    await old_event(conn, tenant, run, 100, created="now()")
    forever = RetentionKeeper(
        paperclip_container.sessions(),
        retention_days={"run_events": 0, "tool_calls": 0, "activity_log": 0},
        pass_seconds=60,
    )
    assert (await forever.sweep()).deleted == {}
    await asyncio.wait_for(forever.run(), 1)  # keeping everything, it has no loop to run

    await keeper(paperclip_container).sweep()

    left = await conn.fetch("SELECT seq FROM run_events WHERE company_id = $1", tenant.company_id)
    assert [r["seq"] for r in left] == [100]


async def test_a_replica_whose_peer_holds_the_batch_lock_skips_its_pass(
    paperclip_container, paperclip_database_url, conn
):
    tenant = await seed_tenant(conn)
    await seed_history(conn, tenant, 100)
    peer = await connect(paperclip_database_url)
    try:
        async with peer.transaction():
            await peer.execute("SELECT pg_advisory_xact_lock($1, $2)", *RETENTION_LOCK)
            # The pass lock is PostgreSQL's one lock (session or transaction held alike).
            report = await keeper(paperclip_container).sweep()
        assert report.skipped and report.deleted == {}
        assert (await counts(conn, tenant.company_id))["run_events"] > 0
    finally:
        await peer.close()
    # Two replicas at once: one passes, the other skips.
    reports = await asyncio.gather(
        keeper(paperclip_container, batch_rows=10).sweep(),
        keeper(paperclip_container, batch_rows=10).sweep(),
    )
    assert (await counts(conn, tenant.company_id))["run_events"] == 0
    assert sorted(r.skipped for r in reports) == [False, True]


def test_each_replica_runs_the_keeper_with_the_settings_retention(paperclip_container):
    keeper = paperclip_container.run_engine().retention
    assert keeper.retention_days == {"run_events": 90, "tool_calls": 90, "activity_log": 365}
    assert (keeper.pass_seconds, keeper.batch_rows) == (300, 1000)
