"""The inbox (what waits on a person) and the dashboard (what runs, what failed, each agent's load)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from sqlalchemy import func, select

from paperclip.models import Run, WakeRequest


async def issue(client, company_id, title, **extra):
    r = await client.post(f"/api/companies/{company_id}/issues", json={"title": title, **extra})
    assert r.status_code == 201, r.text
    return r.json()


async def add_runs(container, company_id, agent_id, specs):
    """Runs as the engine leaves them: (issue id or None, status), each a transaction of its
    own so each is newer than the one before."""
    ids = []
    for issue_id, status in specs:
        async with container.sessions().begin() as session:
            run = Run(
                id=uuid.uuid4(),
                company_id=uuid.UUID(company_id),
                agent_id=uuid.UUID(agent_id),
                issue_id=uuid.UUID(issue_id) if issue_id else None,
                provider="fixture",
                status=status,
                error_code="provider_turn_failed" if status == "failed" else None,
            )
            session.add(run)
        ids.append(str(run.id))
    return ids


async def test_the_inbox_lists_what_waits_on_a_person(
    paperclip_client, paperclip_container, company, agent
):
    cid = company["id"]
    base = f"/api/companies/{cid}"
    asked = await issue(paperclip_client, cid, "Needs an approval")
    approval = (
        await paperclip_client.post(
            f"{base}/issues/{asked['id']}/interactions",
            json={"kind": "approval", "title": "Ship it?", "body": "The release is ready."},
        )
    ).json()
    decided = (
        await paperclip_client.post(
            f"{base}/issues/{asked['id']}/interactions", json={"kind": "approval", "title": "Old"}
        )
    ).json()
    r = await paperclip_client.post(
        f"{base}/interactions/{decided['id']}/actions", json={"action": "approve"}
    )
    assert r.status_code == 200
    held = await issue(paperclip_client, cid, "Frozen")
    hold = (
        await paperclip_client.post(
            f"{base}/holds", json={"issue_id": held["id"], "reason": "freeze"}
        )
    ).json()
    gone = (
        await paperclip_client.post(
            f"{base}/holds", json={"issue_id": held["id"], "reason": "gone"}
        )
    ).json()
    await paperclip_client.post(f"{base}/holds/{gone['id']}/resolve", json={})

    failed_open = await issue(paperclip_client, cid, "Failed, open")
    retried = await issue(paperclip_client, cid, "Failed, then ran again")
    closed = await issue(paperclip_client, cid, "Failed, then closed", status="done")
    parked = await issue(paperclip_client, cid, "Failed, parked", status="backlog")
    stuck = await issue(paperclip_client, cid, "Blocked, nobody on it", status="blocked")
    attended = await issue(paperclip_client, cid, "Blocked, a manager woken", status="blocked")
    running = await issue(paperclip_client, cid, "Blocked, its run going", status="blocked")
    async with paperclip_container.sessions().begin() as session:
        session.add(
            WakeRequest(
                company_id=uuid.UUID(cid),
                agent_id=uuid.UUID(agent["id"]),
                issue_id=uuid.UUID(attended["id"]),
                source="escalated",
            )
        )
    [_, unseen, _, _, _, _, _, issueless] = await add_runs(
        paperclip_container,
        cid,
        agent["id"],
        [
            (running["id"], "running"),
            (failed_open["id"], "failed"),
            (retried["id"], "failed"),
            (retried["id"], "succeeded"),
            (closed["id"], "failed"),
            (parked["id"], "failed"),
            (None, "succeeded"),
            (None, "failed"),  # the agent's latest run without an issue
        ],
    )
    # Another company's rows never show.
    other = (await paperclip_client.post("/api/companies", json={"name": "Other"})).json()
    other_issue = await issue(paperclip_client, other["id"], "Theirs")
    await paperclip_client.post(
        f"/api/companies/{other['id']}/holds", json={"issue_id": other_issue["id"], "reason": "x"}
    )

    r = await paperclip_client.get(f"{base}/inbox")
    assert r.status_code == 200, r.text
    inbox = r.json()
    assert [(i["id"], i["title"], i["body"]) for i in inbox["interactions"]] == [
        (approval["id"], "Ship it?", "The release is ready.")
    ]
    assert inbox["interactions"][0]["issue"]["identifier"] == asked["identifier"]
    assert [(h["id"], h["issue"]["title"]) for h in inbox["holds"]] == [(hold["id"], "Frozen")]
    assert [r["id"] for r in inbox["failed_runs"]] == [issueless, unseen]  # newest first
    assert inbox["failed_runs"][1]["issue"]["title"] == "Failed, open"
    assert inbox["failed_runs"][0]["issue"] is None
    assert [i["title"] for i in inbox["blocked_issues"]] == [stuck["title"]]
    assert inbox["counts"] == {
        "interactions": 1,
        "holds": 1,
        "failed_runs": 2,
        "blocked_issues": 1,
    }
    count = (await paperclip_client.get(f"{base}/inbox/count")).json()
    assert count == {**inbox["counts"], "total": 5}

    # Running the work again, or parking the issue, takes the failure out of the inbox.
    r = await paperclip_client.patch(
        f"{base}/issues/{failed_open['id']}", json={"status": "backlog"}
    )
    assert r.status_code == 200
    after = (await paperclip_client.get(f"{base}/inbox")).json()
    assert [r["id"] for r in after["failed_runs"]] == [issueless]


async def test_the_inbox_of_an_unknown_company_is_a_404(paperclip_client):
    for path in ("inbox", "dashboard"):
        r = await paperclip_client.get(f"/api/companies/{uuid.uuid4()}/{path}")
        assert r.status_code == 404 and r.json()["code"] == "company_not_found"


async def test_the_dashboard_shows_what_runs_what_failed_and_each_agents_load(
    paperclip_client, paperclip_container, company, agent
):
    cid = company["id"]
    base = f"/api/companies/{cid}"
    other_agent = (
        await paperclip_client.post(f"{base}/agents", json={"name": "idle", "provider": "fixture"})
    ).json()
    busy = await issue(paperclip_client, cid, "Busy", assignee_agent_id=agent["id"])
    await issue(paperclip_client, cid, "Queued too", assignee_agent_id=agent["id"])
    await issue(paperclip_client, cid, "Done", assignee_agent_id=agent["id"], status="done")
    [failed, running] = await add_runs(
        paperclip_container,
        cid,
        agent["id"],
        [(busy["id"], "failed"), (busy["id"], "running")],
    )
    async with paperclip_container.sessions().begin() as session:
        # An old failure counts among the recent failures, not in the last 24 hours.
        old = Run(
            id=uuid.uuid4(),
            company_id=uuid.UUID(cid),
            agent_id=uuid.UUID(agent["id"]),
            provider="fixture",
            status="failed",
            created_at=datetime.now(UTC) - timedelta(days=3),
        )
        session.add(old)
    async with paperclip_container.sessions()() as session:
        queued = await session.scalar(
            select(func.count())
            .select_from(WakeRequest)
            .where(WakeRequest.agent_id == uuid.UUID(agent["id"]), WakeRequest.status == "queued")
        )

    r = await paperclip_client.get(f"{base}/dashboard")
    assert r.status_code == 200, r.text
    board = r.json()
    assert [r["id"] for r in board["active_runs"]] == [running]
    assert board["active_runs"][0]["issue"]["identifier"] == busy["identifier"]
    assert [r["id"] for r in board["recent_failures"]] == [failed, str(old.id)]
    loads = {a["name"]: a for a in board["agents"]}
    assert set(loads) == {"coder", "idle"}
    coder = loads["coder"]
    assert queued == 3  # one per assignment; no runner is connected: nothing claims them
    assert (coder["active_runs"], coder["open_issues"], coder["queued_wakes"]) == (1, 2, 3)
    assert (coder["runs_recent"], coder["failed_recent"]) == (2, 1)
    assert loads["idle"]["agent_id"] == other_agent["id"]
    assert (loads["idle"]["active_runs"], loads["idle"]["open_issues"]) == (0, 0)
    assert board["issues_by_status"]["todo"] == 2
    assert board["issues_by_status"]["done"] == 1
    assert board["issues_by_status"]["cancelled"] == 0
