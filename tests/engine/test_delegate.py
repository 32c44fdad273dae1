"""``delegate``: a part of the task handed down the org chart, once, whatever is replayed.

In memory (the real engine and PostgreSQL, a runner without a socket): the
part is an issue of the task's, assigned to the report and waking it; a
command replayed gets the saved result and no second issue; an agent that is
not below the caller, a paused one, or one of another company is refused
and nothing is written.
"""

from __future__ import annotations

import uuid

from sqlalchemy import func, select

from paperclip.common.actor import LOCAL_OPERATOR
from paperclip.models import Agent, Issue, WakeRequest
from tests.engine.memory_world import PROVIDER, call, finished, started


async def hire(world, name: str, role: str = "", reports_to: uuid.UUID | None = None):
    return await world.container.agents().create(
        LOCAL_OPERATOR,
        world.company_id,
        name=name,
        role=role,
        provider=PROVIDER,
        provider_config={},
        check_config=world.check_config,
        reports_to=reports_to,
    )


async def parts_of(world, issue_id: uuid.UUID) -> list[Issue]:
    async with world.container.sessions()() as session:
        rows = await session.execute(
            select(Issue).where(Issue.parent_id == issue_id).order_by(Issue.number)
        )
        return list(rows.scalars())


async def test_a_part_goes_to_a_report_once_and_wakes_it(world):
    lead = await hire(world, "lead", "tech lead", reports_to=world.agent_id)
    dev = await hire(world, "dev", "engineer", reports_to=lead.id)
    peer, _ = await world.connect(await world.new_runner())
    task = await world.assign("Ship the release")
    start = await started(peer)

    handed = await call(
        peer,
        start,
        "delegate",
        to="ENGINEER",  # by role, any case: the only report with it, two levels down
        title="Write the changelog",
        description="From the merged pull requests.",
        command_id="changelog",
    )
    assert not handed.is_error, handed.content
    assert (handed.content["assignee"], handed.content["receipt"]["outcome"]) == ("dev", "applied")
    [part] = await parts_of(world, task)
    assert (part.identifier, part.title, part.assignee_agent_id) == (
        handed.content["identifier"],
        "Write the changelog",
        dev.id,
    )
    async with world.container.sessions()() as session:
        wakes = await session.scalar(
            select(func.count())
            .select_from(WakeRequest)
            .where(WakeRequest.agent_id == dev.id, WakeRequest.issue_id == part.id)
        )
    assert wakes == 1
    part_start = await started(peer)  # the runner here offers dev's provider: it starts now
    assert (await world.run(part_start.run_id)).issue_id == part.id

    again = await call(
        peer, start, "delegate", to="dev", title="Write the changelog", command_id="changelog"
    )
    assert again.content["receipt"]["outcome"] == "duplicate"
    assert again.content["identifier"] == part.identifier
    assert len(await parts_of(world, task)) == 1


async def test_only_an_active_agent_below_the_caller_gets_a_part(world):
    other = await world.container.companies().create(
        LOCAL_OPERATOR, name="Other", issue_prefix=None
    )
    await world.container.agents().create(
        LOCAL_OPERATOR,
        other.id,
        name="outsider",
        role="engineer",
        provider=PROVIDER,
        provider_config={},
        check_config=world.check_config,
    )
    await hire(world, "peer-of-mine", "engineer")  # in the company, not below the caller
    paused = await hire(world, "sleeper", "engineer", reports_to=world.agent_id)
    await world.container.agents().set_status(LOCAL_OPERATOR, world.company_id, paused.id, "paused")
    await hire(world, "twin-a", "tester", reports_to=world.agent_id)
    await hire(world, "twin-b", "tester", reports_to=world.agent_id)
    peer, _ = await world.connect(await world.new_runner())
    task = await world.assign()
    start = await started(peer)

    refusals = {}
    for to in ("outsider", "peer-of-mine", "sleeper", "tester", "nobody"):
        answer = await call(peer, start, "delegate", to=to, title="A part")
        assert answer.is_error, answer.content
        refusals[to] = answer.content["error"]["code"]
    assert refusals == {
        "outsider": "unknown_report",
        "peer-of-mine": "not_your_report",
        "sleeper": "agent_paused",
        "tester": "ambiguous_report",
        "nobody": "unknown_report",
    }
    assert await parts_of(world, task) == []


async def test_the_caller_hears_when_a_part_ends(world):
    dev = await hire(world, "dev", "engineer", reports_to=world.agent_id)
    peer, _ = await world.connect(await world.new_runner())
    task = await world.assign("Ship the release")
    start = await started(peer)
    handed = await call(peer, start, "delegate", to="dev", title="Write the changelog")
    part_start = await started(peer)  # dev starts the part at once, on the runner here
    assert (await world.run(part_start.run_id)).agent_id == dev.id
    ending = await call(peer, start, "finish", outcome="needs_review", summary="dev writes it")
    assert not ending.is_error, ending.content
    peer.send(finished(start, answer="Handed it to dev."))
    await world.until_ended(start.run_id)

    done = await call(peer, part_start, "finish", outcome="done", summary="Changelog written")
    assert not done.is_error, done.content
    peer.send(finished(part_start, answer="Written."))

    # Woken on its task with the part's outcome in the prompt; its context lists the parts.
    again = await started(peer)
    assert (await world.run(again.run_id)).issue_id == task
    assert f"{handed.content['identifier']} done (Write the changelog)" in again.prompt
    context = await call(peer, again, "get_task_context")
    assert context.content["parts"] == [
        {
            "identifier": handed.content["identifier"],
            "title": "Write the changelog",
            "status": "done",
        }
    ]


async def queued_on(world, issue_id: uuid.UUID) -> int:
    async with world.container.sessions()() as session:
        return await session.scalar(
            select(func.count())
            .select_from(WakeRequest)
            .where(WakeRequest.issue_id == issue_id, WakeRequest.status == "queued")
        )


async def test_a_blocker_goes_up_the_chart_once_to_the_top(world):
    ceo = await hire(world, "ceo", "runs the company")
    cto = await hire(world, "cto", "tech lead", reports_to=ceo.id)
    await world.container.agents().update(
        LOCAL_OPERATOR, world.company_id, world.agent_id, {"reports_to": cto.id}, world.check_config
    )
    peer, _ = await world.connect(await world.new_runner())
    task = await world.assign("Renew the certificate")
    start = await started(peer)
    await call(peer, start, "block", reason="I have no access to the DNS provider.")
    peer.send(finished(start))

    # Its manager is woken on the issue, with the blocker; it cannot act either: its own.
    up = await started(peer)
    run = await world.run(up.run_id)
    assert (run.agent_id, run.issue_id) == (cto.id, task)
    assert "who reports to you, is blocked on MEM-" in up.prompt
    assert "I have no access to the DNS provider." in up.prompt
    await call(peer, up, "block", reason="Neither have I: the CEO holds that account.")
    peer.send(finished(up))

    top = await started(peer)
    assert (await world.run(top.run_id)).agent_id == ceo.id
    assert "Neither have I" in top.prompt
    await call(peer, top, "block", reason="A person must renew the contract.")
    peer.send(finished(top))
    await world.until_ended(top.run_id)
    # Past the top, nobody is woken: the issue waits for a person.
    assert await world.issue_status(task) == "blocked"
    assert await queued_on(world, task) == 0

    # Woken again by a person and blocked again, it asks nobody twice: no loop.
    await world.container.comments().create(
        LOCAL_OPERATOR, world.company_id, task, body="Try again, please."
    )
    again = await started(peer)
    assert (await world.run(again.run_id)).agent_id == world.agent_id
    await call(peer, again, "block", reason="Still no access.")
    peer.send(finished(again))
    await world.until_ended(again.run_id)
    assert await world.issue_status(task) == "blocked"
    assert await queued_on(world, task) == 0


async def test_each_brief_names_the_chain_of_command_and_a_part_its_whole(world):
    lead = await hire(world, "lead", "tech lead", reports_to=world.agent_id)
    await hire(world, "dev", "engineer", reports_to=lead.id)
    idle = await hire(world, "ops", "operations", reports_to=lead.id)
    await world.container.agents().update(
        LOCAL_OPERATOR, world.company_id, idle.id, {"status": "paused"}, world.check_config
    )
    peer, _ = await world.connect(await world.new_runner())
    task_id = await world.assign("Ship the release")
    top = await started(peer)
    assert "- You report to: nobody (you are at the top of the org chart)" in top.prompt
    assert '- Your reports: "lead" (tech lead).' in top.prompt

    handed = await call(peer, top, "delegate", to="lead", title="Plan it", command_id="plan")
    assert not handed.is_error, handed.content
    part = await started(peer)
    async with world.container.sessions()() as session:
        me = await session.get_one(Agent, world.agent_id)
        task = await session.get_one(Issue, task_id)
    assert f'- You report to: "{me.name}"' in part.prompt
    assert '- Your reports: "dev" (engineer), "ops" (operations, paused).' in part.prompt
    # The whole it is a part of: the parent in the header, its goal below.
    assert f'- Parent: {task.identifier} "Ship the release"' in part.prompt
    assert "whose goal is:\n```text\nThe build is red.\n```" in part.prompt
