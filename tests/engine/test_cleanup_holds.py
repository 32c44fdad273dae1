"""Close drains, and the completed-turn cleanup holds (seed 003), on the real engine and PostgreSQL.

A turn that ends while an input has no saved result does not close its
session: the run reports ``native_session_settlement_incomplete``, fails with
``native_session_cleanup_quarantined`` and holds its task (system, no
replay). The ``native_completed_turn_cleanup_hold`` policy settles such holds
once the closing controller is proven gone, and holds saved in the earlier
shape on the first pass.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import func, select, text

from paperclip.common.actor import LOCAL_OPERATOR
from paperclip.engine.scheduling import scheduler
from paperclip.models import ActivityEntry, ControllerBoot, Issue, Run, RunEvent, RunTurn, TaskHold
from paperclip.wire import messages as wire
from tests.engine.memory_world import PROVIDER, build_engine, finished, make_world, started
from tests.engine.test_callback_recovery import HeldTool, send_call

pytestmark = pytest.mark.installed_plugins

KIND = "native_completed_turn_cleanup_hold"


@pytest.fixture
async def world(paperclip_container, paperclip_plugin_host, paperclip_register_plugin):
    from paperclip_cleanup_holds import plugin as cleanup_holds

    tool = HeldTool()
    paperclip_register_plugin(tool, name="held-tool")
    paperclip_register_plugin(cleanup_holds, name="cleanup-holds")
    built, engine = await make_world(
        paperclip_container,
        paperclip_plugin_host,
        paperclip_register_plugin,
        reconcile_seconds=3600,
        # A boot counts as gone after a lease unseen: long enough for a busy machine.
        lease_seconds=30.0,
    )
    built.tool = tool
    await engine.start()
    try:
        yield built
    finally:
        tool.release.set()
        await engine.stop()


async def one(world, stmt) -> Any:
    async with world.container.sessions()() as session:
        return (await session.execute(stmt)).scalars().all()


async def test_close_with_a_pending_callback_quarantines_and_holds_the_task(world):
    engine = world.engine
    peer, _ = await world.connect(await world.new_runner())
    issue_id = await world.assign()
    start = await started(peer)
    send_call(peer, start)
    await asyncio.wait_for(world.tool.entered.wait(), 10)

    peer.send(finished(start))  # the provider ends the turn; the callback has no result
    run = await world.until_ended(start.run_id)
    assert run.status == "failed" and run.error_code == "native_session_cleanup_quarantined"
    [report] = await one(
        world,
        select(RunEvent.payload).where(
            RunEvent.run_id == start.run_id, RunEvent.type == "native_session_settlement_incomplete"
        ),
    )
    assert report["runnerSuspended"] is True and report["providerDrained"] is False
    [pending] = report["pendingCallbacks"]
    assert pending["tool"] == "held_effect"
    [hold] = await one(world, select(TaskHold).where(TaskHold.issue_id == issue_id))
    assert (hold.kind, hold.status, hold.set_by, hold.replay_forbidden) == (
        "native_session_cleanup_quarantined",
        "active",
        "system",
        True,
    )
    assert hold.details["closing"]["boot"] == str(engine.boots.boot_id)
    with pytest.raises(TimeoutError):  # the session is not closed on the runner
        await peer.expect(wire.Close, within=1.0)

    # The closing controller is alive (it is this process): the hold stays.
    await engine.reconciler.pass_once()
    assert engine.reconciler.reports[KIND].kept == 1
    [hold] = await one(world, select(TaskHold).where(TaskHold.issue_id == issue_id))
    assert hold.status == "active"
    world.tool.release.set()


async def test_holds_stay_while_the_closing_controller_is_alive_and_settle_once_it_is_gone(
    world, paperclip_container, paperclip_plugin_host
):
    closing = build_engine(
        paperclip_container,
        paperclip_plugin_host,
        instance="closing-replica",
        lease_seconds=30.0,
        reconcile_seconds=3600,
    )
    await closing.boots.register()
    issue_id, run_id = await fixture_run(world, turn_status="completed")
    hold_id = await fixture_hold(
        world,
        issue_id,
        run_id,
        {
            "shape": "v2",
            "closing": {
                "instance": "closing-replica",
                "epoch": 1,
                "boot": str(closing.boots.boot_id),
            },
            "turn_completed": True,
            "files": "saved",
        },
    )
    await world.engine.reconciler.pass_once()
    assert (await hold_of(world, hold_id)).status == "active"  # seen just now: alive
    report = world.engine.reconciler.reports[KIND]
    assert any("closing-replica" in reason and "alive" in reason for reason in report.reasons)

    # It stops renewing (killed): once a lease has passed, the proof retires its boot.
    async with world.container.sessions().begin() as session:
        await session.execute(
            text(
                "UPDATE controller_boots SET seen_at = now() - interval '1 minute' "
                "WHERE boot_id = :b"
            ),
            {"b": closing.boots.boot_id},
        )
    await world.engine.reconciler.pass_once()
    hold = await hold_of(world, hold_id)
    assert (hold.status, hold.resolution, hold.replay_forbidden) == ("resolved", "restored", False)
    assert not await closing.boots.renew()  # a retired boot renews nothing


async def test_a_hold_protecting_unsaved_files_stays_while_the_runs_other_hold_settles(world):
    issue_id, run_id = await fixture_run(world, turn_status="completed")
    cleanup = await fixture_hold(world, issue_id, run_id, V1_CLEANUP)
    files = await fixture_hold(
        world,
        issue_id,
        run_id,
        {**V1_CONTINUATION, "completedWorkspaceRecoveryCondition": {"filesSaved": False}},
        kind="native_continuation_hold",
    )
    await world.engine.reconciler.pass_once()
    assert (await hold_of(world, cleanup)).resolution == "restored"
    kept = await hold_of(world, files)
    assert kept.status == "active" and kept.replay_forbidden


async def test_holds_of_a_run_whose_turn_did_not_complete_are_never_listed(world):
    for status in ("failed", "lost"):
        issue_id, run_id = await fixture_run(world, turn_status=status)
        hold_id = await fixture_hold(world, issue_id, run_id, V1_CLEANUP)
        assert await listed(world, issue_id) == []
        await world.engine.reconciler.pass_once()
        assert (await hold_of(world, hold_id)).status == "active"


async def test_operator_decisions_are_never_reopened(world):
    issue_id, run_id = await fixture_run(world, turn_status="completed")
    operator = await fixture_hold(world, issue_id, run_id, V1_CLEANUP, set_by="operator")
    released = await fixture_hold(world, issue_id, run_id, V1_CLEANUP, status="resolved")
    assert await listed(world, issue_id) == []
    await world.engine.reconciler.pass_once()
    assert (await hold_of(world, operator)).status == "active"
    assert (await hold_of(world, released)).resolution == "released"


async def test_holds_of_the_earlier_shape_settle_as_restored_on_the_first_pass(world):
    issue_id, run_id = await fixture_run(world, turn_status="completed", issue_status="blocked")
    holds = [
        await fixture_hold(world, issue_id, run_id, V1_CLEANUP),
        await fixture_hold(
            world, issue_id, run_id, V1_CONTINUATION, kind="native_continuation_hold"
        ),
    ]
    runs_before = await count(world, Run)
    assert len(await listed(world, issue_id)) == 2

    await world.engine.reconciler.pass_once()
    for hold_id in holds:
        hold = await hold_of(world, hold_id)
        assert (hold.status, hold.resolution, hold.resolved_by) == (
            "resolved",
            "restored",
            "system",
        )
        assert hold.replay_forbidden is False
    assert await count(world, Run) == runs_before  # settlement starts no run
    [status] = await one(world, select(Issue.status).where(Issue.id == issue_id))
    assert status == "blocked"  # the task keeps its status
    logged = await one(
        world,
        select(ActivityEntry.details).where(
            ActivityEntry.action == "issue.recovery_action_resolved",
            ActivityEntry.entity_id == str(issue_id),
        ),
    )
    assert sorted(d["hold_id"] for d in logged) == sorted(str(h) for h in holds)
    assert await listed(world, issue_id) == []  # the next pass lists nothing


@pytest.fixture
def told_only(monkeypatch):
    """No fallback poll: a queued wake starts a run only when a replica is told it may."""
    monkeypatch.setattr(scheduler, "FALLBACK_POLL_SECONDS", 3600.0)


async def test_the_task_goes_on_once_its_hold_settles(told_only, world):
    """Its own wait ended while it was held (a wake queued): settling the hold lets that wake
    start the next run at once, without a person and without waiting for a poll."""
    issue_id, run_id = await fixture_run(world, turn_status="completed")
    await fixture_hold(world, issue_id, run_id, V1_CLEANUP)
    await world.container.issues().update(
        LOCAL_OPERATOR, world.company_id, issue_id, {"assignee_agent_id": world.agent_id}
    )
    peer, _ = await world.connect(await world.new_runner())
    assert await world.engine.scheduler.claim_wakes() == 0  # held: the wake waits
    runs_before = await count(world, Run)

    await world.engine.reconciler.pass_once()
    async with asyncio.timeout(10):
        while (start := await started(peer)) and (
            await world.run(start.run_id)
        ).issue_id != issue_id:
            pass  # a wake another test left queued may be claimed onto this runner too
    assert start.turn == 1 and await count(world, Run) > runs_before


async def test_a_boot_not_seen_for_a_lease_is_proven_gone_once(world):
    from paperclip.engine.recovery.boots import prove_boot_gone

    stale, live = uuid.uuid4(), uuid.uuid4()
    async with world.container.sessions().begin() as session:
        session.add(
            ControllerBoot(
                boot_id=stale, instance="old", seen_at=datetime.now(UTC) - timedelta(minutes=5)
            )
        )
        session.add(ControllerBoot(boot_id=live, instance="live"))
    async with world.container.sessions().begin() as session:
        assert (await prove_boot_gone(session, stale, ttl=2, this_boot=uuid.uuid4())).gone
        assert not (await prove_boot_gone(session, live, ttl=2, this_boot=uuid.uuid4())).gone
        mine = world.engine.boots.boot_id
        assert not (await prove_boot_gone(session, mine, ttl=0, this_boot=mine)).gone


# Fixture rows, as earlier releases and this one save them

V1_CLEANUP = {
    "preserveWithoutReplay": "preserve_without_replay_v1",
    "actionOutcome": "unknown",
    "closingInstance": "old-server:4242",
    "closingEpoch": 3,
}
V1_CONTINUATION = {
    "preserveWithoutReplay": "preserve_without_replay_v1",
    "actionOutcome": "unknown",
    "completedWorkspaceRecoveryCondition": {"filesSaved": True},
}


async def fixture_run(world, *, turn_status: str, issue_status: str = "blocked"):
    issue = await world.container.issues().create(
        LOCAL_OPERATOR,
        world.company_id,
        title="Waits on a child",
        description="",
        status=issue_status,
        priority="medium",
        assignee_agent_id=None,
        parent_id=None,
    )
    run_id = uuid.uuid4()
    async with world.container.sessions().begin() as session:
        session.add(
            Run(
                id=run_id,
                company_id=world.company_id,
                agent_id=world.agent_id,
                issue_id=issue.id,
                status="failed",
                phase="finished",
                provider=PROVIDER,
                error_code="native_session_cleanup_quarantined",
                turn=1,
                finished_at=datetime.now(UTC),
            )
        )
        await session.flush()
        session.add(
            RunTurn(company_id=world.company_id, run_id=run_id, number=1, status=turn_status)
        )
    return issue.id, run_id


async def fixture_hold(
    world,
    issue_id,
    run_id,
    details,
    *,
    kind="native_session_cleanup_quarantined",
    set_by="system",
    status="active",
) -> uuid.UUID:
    hold_id = uuid.uuid4()
    async with world.container.sessions().begin() as session:
        session.add(
            TaskHold(
                id=hold_id,
                company_id=world.company_id,
                issue_id=issue_id,
                run_id=run_id,
                kind=kind,
                reason="kept aside",
                set_by=set_by,
                set_by_actor=f"{set_by}:x",
                replay_forbidden=True,
                status=status,
                details=details,
                resolution="released" if status == "resolved" else None,
            )
        )
    return hold_id


async def listed(world, issue_id) -> list:
    """The cleanup holds the port lists, of this test's task (the database is shared)."""
    return [h for h in await world.engine.port.cleanup_holds(1000) if h.issue_id == str(issue_id)]


async def hold_of(world, hold_id) -> TaskHold:
    async with world.container.sessions()() as session:
        hold = await session.get(TaskHold, hold_id)
        assert hold is not None
        return hold


async def count(world, model) -> int:
    async with world.container.sessions()() as session:
        return (await session.execute(select(func.count()).select_from(model))).scalar_one()
