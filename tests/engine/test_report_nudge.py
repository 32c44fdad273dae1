"""The report nudge: a turn that ends without ``finish`` is asked for its report, in its session.

Driven in memory (a real PostgreSQL, the real engine, a runner peer without a
socket) with a provider that resumes sessions: the nudge is a second
``start_turn`` of the same run, for the same session, whose prompt says what
the run did and that no report was recorded.
"""

from __future__ import annotations

from typing import Any

import pytest
from paperclip_hookspecs import hookimpl
from paperclip_hookspecs.prompts import RenderedSection, TaskSource
from paperclip_hookspecs.providers import ProviderCapabilities
from paperclip_hookspecs.runs import RunView
from sqlalchemy import select

from paperclip.models import RunEvent, RunTurn
from paperclip.wire import messages as wire
from tests.engine.memory_world import EchoProvider, call, finished, make_world, started

RESUMABLE = ProviderCapabilities(resume=True, mcp_tools=True)
SESSION = "thread-1"


async def nudge_world(container: Any, host: Any, register: Any, **options: Any) -> Any:
    register(EchoProvider(RESUMABLE), name="echo-provider")
    world, engine = await make_world(container, host, register, **options)
    await engine.start()
    return world, engine


@pytest.fixture
async def world(paperclip_container, paperclip_plugin_host, paperclip_register_plugin):
    built, engine = await nudge_world(
        paperclip_container, paperclip_plugin_host, paperclip_register_plugin
    )
    try:
        yield built
    finally:
        await engine.stop()


@pytest.fixture
async def unnudged_world(paperclip_container, paperclip_plugin_host, paperclip_register_plugin):
    built, engine = await nudge_world(
        paperclip_container, paperclip_plugin_host, paperclip_register_plugin, report_nudges=0
    )
    try:
        yield built
    finally:
        await engine.stop()


async def turns(world: Any, run_id: Any) -> list[tuple[int, str, str, str | None]]:
    async with world.container.sessions()() as session:
        rows = await session.execute(
            select(RunTurn.number, RunTurn.kind, RunTurn.status, RunTurn.session_ref)
            .where(RunTurn.run_id == run_id)
            .order_by(RunTurn.number)
        )
        return [tuple(r) for r in rows]  # type: ignore[misc]


async def nudge_events(world: Any, run_id: Any) -> list[dict[str, Any]]:
    async with world.container.sessions()() as session:
        rows = await session.execute(
            select(RunEvent.payload).where(
                RunEvent.run_id == run_id, RunEvent.type == "run.report_nudge"
            )
        )
        return list(rows.scalars())


async def test_a_turn_without_finish_is_nudged_in_its_session_and_the_run_succeeds(world):
    peer, _ = await world.connect(await world.new_runner())
    issue_id = await world.assign()
    first = await started(peer)
    posted = await call(peer, first, "post_comment", body="Fixed the flaky test.")
    assert not posted.is_error

    peer.send(finished(first, answer="All done, the build is green.", session_ref=SESSION))
    nudge = await started(peer, turn=2)
    assert nudge.session_ref == SESSION and nudge.run_id == first.run_id
    assert nudge.token != first.token  # the earlier turn's token died with it
    assert "no completion report was recorded" in nudge.prompt
    assert "Fixed the flaky test." in nudge.prompt and "post_comment x1" in nudge.prompt
    assert nudge.system == first.system
    with pytest.raises(TimeoutError):
        await peer.expect(wire.Close, run_id=first.run_id, within=0.3)  # not over yet

    report = await call(peer, nudge, "finish", outcome="done", summary="Fixed the flaky test.")
    assert report.content["accepted"]
    peer.send(finished(nudge, answer="Reported.", session_ref=SESSION))
    run = await world.until_ended(first.run_id)

    assert (run.status, run.status_reason) == ("succeeded", "task_completed")
    assert await world.issue_status(issue_id) == "done"
    assert await turns(world, run.id) == [
        (1, "initial", "completed", SESSION),
        (2, "report_nudge", "completed", SESSION),
    ]
    assert await nudge_events(world, run.id) == [{"ended_turn": 1, "turn": 2, "nudge": 1, "of": 1}]


async def test_a_nudged_turn_that_still_does_not_report_fails_the_run(world):
    peer, _ = await world.connect(await world.new_runner())
    issue_id = await world.assign()
    first = await started(peer)
    peer.send(finished(first, answer="Done.", session_ref=SESSION))
    nudge = await started(peer, turn=2)

    peer.send(finished(nudge, answer="I said it is done.", session_ref=SESSION))
    await peer.expect(wire.Close, run_id=first.run_id)
    run = await world.until_ended(first.run_id)
    assert (run.status, run.error_code) == ("failed", "finish_not_called")
    assert await world.issue_status(issue_id) == "todo"
    assert [t[1] for t in await turns(world, run.id)] == ["initial", "report_nudge"]


async def test_a_replayed_turn_end_nudges_once(world):
    peer, _ = await world.connect(await world.new_runner())
    await world.assign()
    first = await started(peer)
    end = finished(first, answer="Done.", session_ref=SESSION)
    peer.send(end)
    await started(peer, turn=2)
    peer.send(end)  # the same turn's end, again (a runner that replays it)

    with pytest.raises(TimeoutError):
        await peer.expect(wire.StartTurn, within=0.5)
    assert [t[:2] for t in await turns(world, first.run_id)] == [
        (1, "initial"),
        (2, "report_nudge"),
    ]


async def test_with_nudges_set_to_0_a_turn_without_finish_fails_the_run(unnudged_world):
    world = unnudged_world
    peer, _ = await world.connect(await world.new_runner())
    await world.assign()
    first = await started(peer)
    peer.send(finished(first, answer="All done.", session_ref=SESSION))

    await peer.expect(wire.Close, run_id=first.run_id)
    run = await world.until_ended(first.run_id)
    assert (run.status, run.error_code) == ("failed", "finish_not_called")
    assert await turns(world, run.id) == [(1, "initial", "completed", SESSION)]


async def test_a_run_waiting_on_a_person_is_not_nudged(world):
    peer, _ = await world.connect(await world.new_runner())
    await world.assign()
    first = await started(peer)
    asked = await call(peer, first, "request_human_input", kind="question", title="Which branch?")
    assert not asked.is_error
    peer.send(finished(first, answer="Waiting for your answer.", session_ref=SESSION))

    await peer.expect(wire.Close, run_id=first.run_id)
    run = await world.until_ended(first.run_id)
    assert run.error_code == "finish_not_called"
    assert [t[1] for t in await turns(world, run.id)] == ["initial"]


async def test_a_turn_without_a_session_is_not_nudged(world):
    """Nothing to resume (the provider never named its session): the run ends as before."""
    peer, _ = await world.connect(await world.new_runner())
    await world.assign()
    first = await started(peer)
    peer.send(finished(first, answer="Done."))

    await peer.expect(wire.Close, run_id=first.run_id)
    assert (await world.until_ended(first.run_id)).error_code == "finish_not_called"


async def test_a_plugin_renders_the_nudge(world, paperclip_register_plugin):
    """``paperclip_render_completion_recovery`` of an installed plugin is the nudge's prompt."""

    class HouseNudge:
        @hookimpl
        def paperclip_render_completion_recovery(
            self, task: TaskSource, run: RunView
        ) -> RenderedSection:
            return RenderedSection(
                "completion_recovery",
                f"{task.identifier}: {len(run.comments)} comment(s); call finish.",
            )

    paperclip_register_plugin(HouseNudge(), name="house-nudge")
    peer, _ = await world.connect(await world.new_runner())
    await world.assign()
    first = await started(peer)
    await call(peer, first, "post_comment", body="One.")
    peer.send(finished(first, answer="Done.", session_ref=SESSION))

    nudge = await started(peer, turn=2)
    assert nudge.prompt.endswith(": 1 comment(s); call finish.")
