"""``POST …/issues/{i}/workspace/merge`` in process: every refusal the control plane makes
itself, the request made once, and the runner's answer (recorded as the engine records it)
answered to the first request and to a repeat alike.

No runner here: runner rows stand for connected runners, and the runner's
``workspace_merged`` is handed to the engine's recorder. The merge itself, with
real git and real processes, is ``tests/engine/test_workspaces_merge.py``.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime

import pytest
from sqlalchemy import delete, func, select, update

from paperclip.engine.workspaces.reports import record_merged
from paperclip.models import (
    ActivityEntry,
    IssueWorkspace,
    Run,
    Runner,
    RunnerMessage,
    WorkspaceMerge,
)
from paperclip.wire.messages import (
    FEATURE_WORKSPACE_MERGE,
    FEATURE_WORKSPACES,
    WorkspaceMerged,
)

HEAD = "a" * 40
MERGE = "b" * 40


@pytest.fixture
async def world(paperclip_client, paperclip_container):
    """A company, a project on a repository folder, an issue with a ready worktree on a
    connected runner that merges; the runner rows removed afterwards."""
    client = paperclip_client
    company = (
        await client.post("/api/companies", json={"name": f"M{uuid.uuid4().hex[:6]}"})
    ).json()
    cid = company["id"]
    project = await client.post(
        f"/api/companies/{cid}/projects",
        json={"name": "app", "repo_path": "/srv/repos/app", "merge_strategy": "merge_commit"},
    )
    assert project.status_code == 201, project.text
    issue = (
        await client.post(
            f"/api/companies/{cid}/issues",
            json={"title": "Fix  the\nbuild", "project_id": project.json()["id"]},
        )
    ).json()
    runner, _ = await paperclip_container.runners().create(f"host-{uuid.uuid4().hex[:6]}")
    sessions = paperclip_container.sessions()
    async with sessions.begin() as session:
        await session.execute(
            update(Runner)
            .where(Runner.id == runner.id)
            .values(
                replica="replica-a",
                offers={"features": [FEATURE_WORKSPACES, FEATURE_WORKSPACE_MERGE]},
            )
        )
        session.add(
            IssueWorkspace(
                issue_id=uuid.UUID(issue["id"]),
                company_id=uuid.UUID(cid),
                project_id=uuid.UUID(project.json()["id"]),
                runner_id=runner.id,
                status="ready",
                key=f"{cid}/{issue['identifier']}",
                branch=f"paperclip/{issue['identifier']}",
                repo_path="/srv/repos/app",
                base_ref="main",
                base_commit="c" * 40,
                head_commit=HEAD,
            )
        )
    paperclip_container.merges().wait_seconds = 0.5
    yield {
        "company": company,
        "issue": issue,
        "runner_id": runner.id,
        "path": f"/api/companies/{cid}/issues/{issue['identifier']}/workspace/merge",
    }
    async with sessions.begin() as session:
        await session.execute(delete(Runner).where(Runner.id == runner.id))


async def set_workspace(container, world, **values):
    async with container.sessions().begin() as session:
        await session.execute(
            update(IssueWorkspace)
            .where(IssueWorkspace.issue_id == uuid.UUID(world["issue"]["id"]))
            .values(**values)
        )


async def set_runner(container, world, **values):
    async with container.sessions().begin() as session:
        await session.execute(
            update(Runner).where(Runner.id == world["runner_id"]).values(**values)
        )


async def answer(container, world, **fields):
    """The runner's ``workspace_merged`` for the issue's pending request, recorded."""
    async with container.sessions().begin() as session:
        request = (
            await session.execute(
                select(WorkspaceMerge).where(
                    WorkspaceMerge.issue_id == uuid.UUID(world["issue"]["id"]),
                    WorkspaceMerge.status == "pending",
                )
            )
        ).scalar_one()
        message = WorkspaceMerged(seq=1, request_id=request.id, issue_id=request.issue_id, **fields)
        await record_merged(session, world["runner_id"], message)
        return request.id


async def count(container, model, *where) -> int:
    async with container.sessions()() as session:
        return (
            await session.execute(select(func.count()).select_from(model).where(*where))
        ).scalar()


async def merge_messages(container, world) -> list[dict]:
    async with container.sessions()() as session:
        rows = await session.execute(
            select(RunnerMessage).where(
                RunnerMessage.runner_id == world["runner_id"],
                RunnerMessage.type == "merge_workspace",
            )
        )
        return [r.payload for r in rows.scalars()]


async def test_the_request_waits_then_the_answer_is_given_to_it_and_to_a_repeat(
    paperclip_client, paperclip_container, world
):
    timed_out = await paperclip_client.post(world["path"], json={"close_issue": True})
    assert timed_out.status_code == 504, timed_out.text
    assert timed_out.json()["code"] == "merge_timeout"
    [sent] = await merge_messages(paperclip_container, world)
    branch = f"paperclip/{world['issue']['identifier']}"
    assert sent["strategy"] == "merge_commit"
    assert sent["message"] == f"Merge {branch}: Fix the build"
    assert sent["workspace"]["branch"] == branch and sent["workspace"]["repo_path"]

    # Asked again before the runner answered: the same request, nothing sent again.
    again = await paperclip_client.post(world["path"])
    assert again.status_code == 504
    assert len(await merge_messages(paperclip_container, world)) == 1

    await answer(
        paperclip_container, world, status="merged", commit=MERGE, head=HEAD, merged_commits=2
    )
    expected = {
        "status": "merged",
        "strategy": "merge_commit",
        "branch": branch,
        "base_ref": "main",
        "commit": MERGE,
        "merged_commits": 2,
        "issue_status": "done",
    }
    for _ in range(2):  # the first merge's answer, however often it is asked for
        merged = await paperclip_client.post(world["path"], json={"close_issue": True})
        assert (merged.status_code, merged.json()) == (200, expected)
    issue_id = world["issue"]["id"]
    assert await activity(paperclip_container, issue_id) == ["workspace.merged"]
    async with paperclip_container.sessions()() as session:
        entry = (
            await session.execute(
                select(ActivityEntry).where(
                    ActivityEntry.entity_id == issue_id,
                    ActivityEntry.action == "workspace.merged",
                )
            )
        ).scalar_one()
        ws = await session.get(IssueWorkspace, uuid.UUID(issue_id))
    assert entry.actor_type == "user" and entry.details["by"] == "user:local-operator"
    assert {k: entry.details[k] for k in ("strategy", "commit", "merged_commits", "branch")} == {
        "strategy": "merge_commit",
        "commit": MERGE,
        "merged_commits": 2,
        "branch": branch,
    }
    assert ws.base_commit == HEAD  # what is left to review starts at the merged head
    issue = (
        await paperclip_client.get(f"/api/companies/{world['company']['id']}/issues/{issue_id}")
    ).json()
    assert issue["status"] == "done"
    # A repeat of the runner's answer changes nothing.
    async with paperclip_container.sessions().begin() as session:
        request = (
            await session.execute(
                select(WorkspaceMerge).where(WorkspaceMerge.issue_id == uuid.UUID(issue_id))
            )
        ).scalar_one()
        await record_merged(
            session,
            world["runner_id"],
            WorkspaceMerged(
                seq=2,
                request_id=request.id,
                issue_id=request.issue_id,
                status="merged",
                commit=MERGE,
                head=HEAD,
            ),
        )
    assert await activity(paperclip_container, issue_id) == ["workspace.merged"]


@pytest.mark.parametrize(
    ("fields", "extra"),
    [
        (
            {"error_code": "merge_conflict", "conflicts": ["a.py", "b/c.py"]},
            {"conflicts": ["a.py", "b/c.py"]},
        ),
        ({"error_code": "base_checkout_dirty", "files": ["a.py"]}, {"files": ["a.py"]}),
        ({"error_code": "nothing_to_merge"}, {}),
        ({"error_code": "not_fast_forward"}, {}),
        ({"error_code": "workspace_busy"}, {}),
    ],
)
async def test_a_refusal_is_answered_with_its_files_and_records_nothing(
    paperclip_client, paperclip_container, world, fields, extra
):
    paperclip_container.merges().wait_seconds = 10
    asked = asyncio.ensure_future(paperclip_client.post(world["path"], json={"close_issue": True}))
    for _ in range(200):
        if await merge_messages(paperclip_container, world):
            break
        await asyncio.sleep(0.05)
    await answer(paperclip_container, world, status="refused", error="no, because", **fields)

    refused = await asked

    assert refused.status_code == 409
    assert refused.json() == {
        "code": fields["error_code"],
        "message": "no, because",
        "details": None,
        **extra,
    }
    issue_id = world["issue"]["id"]
    assert await activity(paperclip_container, issue_id) == []
    issue = await paperclip_client.get(f"/api/companies/{world['company']['id']}/issues/{issue_id}")
    assert issue.json()["status"] != "done"
    # A refusal holds nothing: the next request asks the runner again.
    paperclip_container.merges().wait_seconds = 0.2
    assert (await paperclip_client.post(world["path"])).status_code == 504
    assert len(await merge_messages(paperclip_container, world)) == 2


async def activity(container, issue_id: str) -> list[str]:
    async with container.sessions()() as session:
        rows = await session.execute(
            select(ActivityEntry.action).where(
                ActivityEntry.entity_id == issue_id, ActivityEntry.action.like("workspace.%")
            )
        )
        return list(rows.scalars())


async def test_the_refusals_the_control_plane_makes_itself(
    paperclip_client, paperclip_container, world
):
    path = world["path"]
    cid = world["company"]["id"]

    async def refused(status: int, code: str, body=None) -> dict:
        answered = (
            await paperclip_client.post(path, json=body)
            if body is not None
            else await paperclip_client.post(path)
        )
        assert (answered.status_code, answered.json()["code"]) == (status, code), answered.text
        return answered.json()

    # A run of the issue is active: its agent may be writing.
    agent = (
        await paperclip_client.post(
            f"/api/companies/{cid}/agents", json={"name": "a", "provider": "fixture"}
        )
    ).json()
    run_id = uuid.uuid4()
    async with paperclip_container.sessions().begin() as session:
        session.add(
            Run(
                id=run_id,
                company_id=uuid.UUID(cid),
                agent_id=uuid.UUID(agent["id"]),
                issue_id=uuid.UUID(world["issue"]["id"]),
                provider="fixture",
                status="running",
            )
        )
    await refused(409, "run_active")
    async with paperclip_container.sessions().begin() as session:
        await session.execute(
            update(Run)
            .where(Run.id == run_id)
            .values(status="succeeded", finished_at=datetime.now(UTC))
        )

    await set_runner(paperclip_container, world, replica=None)
    assert "not connected" in (await refused(503, "runner_unavailable"))["message"]
    await set_runner(
        paperclip_container, world, replica="replica-a", offers={"features": [FEATURE_WORKSPACES]}
    )
    assert "upgrade" in (await refused(409, "merge_not_supported"))["message"]
    await set_runner(
        paperclip_container,
        world,
        offers={"features": [FEATURE_WORKSPACES, FEATURE_WORKSPACE_MERGE]},
    )

    for status in ("requested", "releasing", "released"):
        await set_workspace(paperclip_container, world, status=status)
        await refused(409, "workspace_not_ready")
    await set_workspace(
        paperclip_container,
        world,
        status="ready",
        repo_path=None,
        repo_url="https://example.com/a.git",
    )
    assert "clone URL" in (await refused(409, "merge_not_supported"))["message"]

    # Bad bodies, an issue without a worktree, an issue that is not there.
    await refused(400, "validation_error", {"close_issue": "yes"})
    await refused(400, "validation_error", {"close": True})
    other = (
        await paperclip_client.post(f"/api/companies/{cid}/issues", json={"title": "t"})
    ).json()
    await refused_at(
        paperclip_client,
        f"/api/companies/{cid}/issues/{other['identifier']}/workspace/merge",
        404,
        "workspace_not_found",
    )
    await refused_at(
        paperclip_client,
        f"/api/companies/{cid}/issues/ZZ-404/workspace/merge",
        404,
        "issue_not_found",
    )
    # Nothing was asked of the runner, nothing recorded.
    assert await merge_messages(paperclip_container, world) == []
    issue_id = uuid.UUID(world["issue"]["id"])
    assert (
        await count(paperclip_container, WorkspaceMerge, WorkspaceMerge.issue_id == issue_id) == 0
    )


async def refused_at(client, path, status, code):
    answered = await client.post(path)
    assert (answered.status_code, answered.json()["code"]) == (status, code), answered.text


async def test_a_project_s_merge_strategy(paperclip_client, world):
    base = f"/api/companies/{world['company']['id']}/projects"
    made = await paperclip_client.post(base, json={"name": "lib", "repo_path": "/srv/repos/lib"})
    assert made.json()["merge_strategy"] == "fast_forward"
    pid = made.json()["id"]
    changed = await paperclip_client.patch(f"{base}/{pid}", json={"merge_strategy": "merge_commit"})
    assert changed.json()["merge_strategy"] == "merge_commit"
    for body, call in (
        ({"merge_strategy": "squash"}, lambda b: paperclip_client.patch(f"{base}/{pid}", json=b)),
        (
            {"name": "x", "repo_path": "/srv/x", "merge_strategy": "rebase"},
            lambda b: paperclip_client.post(base, json=b),
        ),
    ):
        bad = await call(body)
        assert (bad.status_code, bad.json()["code"]) == (422, "invalid_merge_strategy")
        assert bad.json()["details"][0]["field"] == "merge_strategy"
    assert (await paperclip_client.get(f"{base}/{pid}")).json()["merge_strategy"] == "merge_commit"
