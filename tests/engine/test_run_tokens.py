"""A run token acts only as its own run, agent and company."""

from __future__ import annotations

import uuid

import pytest

from paperclip.domain.runs.run_tokens import new_run_token, token_run
from paperclip.engine.endings.turn_end import finish_run
from paperclip.models import Run, RunStatus

pytestmark = pytest.mark.usefixtures("fixture_kind")


async def make_run(client, container, name):
    company = (await client.post("/api/companies", json={"name": name})).json()
    cid = company["id"]
    agent = (
        await client.post(f"/api/companies/{cid}/agents", json={"name": "a", "provider": "fixture"})
    ).json()
    other_agent = (
        await client.post(f"/api/companies/{cid}/agents", json={"name": "b", "provider": "fixture"})
    ).json()
    issue = (
        await client.post(f"/api/companies/{cid}/issues", json={"title": f"{name} task"})
    ).json()
    async with container.sessions().begin() as session:
        run = Run(
            id=uuid.uuid4(),
            company_id=uuid.UUID(cid),
            agent_id=uuid.UUID(agent["id"]),
            issue_id=uuid.UUID(issue["id"]),
            provider="codex",
            status=RunStatus.RUNNING,
        )
        session.add(run)
        await session.flush()
        token = new_run_token(session, run)
        sibling = Run(
            id=uuid.uuid4(),
            company_id=uuid.UUID(cid),
            agent_id=uuid.UUID(other_agent["id"]),
            provider="codex",
            status=RunStatus.RUNNING,
        )
        session.add(sibling)
    return {
        "company_id": cid,
        "agent_id": agent["id"],
        "other_agent_id": other_agent["id"],
        "issue_id": issue["id"],
        "run_id": str(run.id),
        "sibling_run_id": str(sibling.id),
        "token": token,
    }


@pytest.fixture
async def two_runs(paperclip_client, paperclip_container):
    return await make_run(paperclip_client, paperclip_container, "Alpha"), await make_run(
        paperclip_client, paperclip_container, "Bravo"
    )


async def test_run_token_reads_and_comments_in_its_own_company(paperclip_client, two_runs):
    a, _ = two_runs
    auth = {"Authorization": f"Bearer {a['token']}"}
    base = f"/api/companies/{a['company_id']}"
    assert (
        await paperclip_client.get(f"{base}/issues/{a['issue_id']}", headers=auth)
    ).status_code == 200
    assert (
        await paperclip_client.get(f"{base}/runs/{a['run_id']}", headers=auth)
    ).status_code == 200
    r = await paperclip_client.post(
        f"{base}/issues/{a['issue_id']}/comments", json={"body": "from the agent"}, headers=auth
    )
    assert r.status_code == 201
    comment = r.json()
    assert (
        comment["author_agent_id"] == a["agent_id"] and comment["created_by_run_id"] == a["run_id"]
    )


async def test_run_token_cannot_reach_another_company(paperclip_client, two_runs):
    a, b = two_runs
    auth = {"Authorization": f"Bearer {a['token']}"}
    for url in (
        f"/api/companies/{b['company_id']}/issues/{b['issue_id']}",
        f"/api/companies/{b['company_id']}/runs/{b['run_id']}",
        f"/api/companies/{b['company_id']}/issues",
    ):
        r = await paperclip_client.get(url, headers=auth)
        assert r.status_code == 404, url
        assert "Bravo" not in r.text
    r = await paperclip_client.post(
        f"/api/companies/{b['company_id']}/issues/{b['issue_id']}/comments",
        json={"body": "x"},
        headers=auth,
    )
    assert r.status_code == 404


async def test_run_token_cannot_act_as_another_run_or_agent(paperclip_client, two_runs):
    a, _ = two_runs
    auth = {"Authorization": f"Bearer {a['token']}"}
    base = f"/api/companies/{a['company_id']}"
    r = await paperclip_client.get(f"{base}/runs/{a['sibling_run_id']}", headers=auth)
    assert r.status_code == 404 and r.json()["code"] == "run_not_found"
    r = await paperclip_client.get(f"{base}/runs/{a['sibling_run_id']}/events", headers=auth)
    assert r.status_code == 404
    r = await paperclip_client.get(f"{base}/agents/{a['other_agent_id']}", headers=auth)
    assert r.status_code == 404 and r.json()["code"] == "agent_not_found"
    r = await paperclip_client.post(f"{base}/agents/{a['agent_id']}/wakeup", json={}, headers=auth)
    assert r.status_code == 403 and r.json()["code"] == "run_token_forbidden"
    r = await paperclip_client.patch(
        f"{base}/issues/{a['issue_id']}", json={"title": "x"}, headers=auth
    )
    assert r.status_code == 403
    r = await paperclip_client.get("/api/companies", headers=auth)
    assert r.status_code == 403


async def test_run_token_dies_with_its_run(paperclip_client, paperclip_container, two_runs):
    a, _ = two_runs
    auth = {"Authorization": f"Bearer {a['token']}"}
    async with paperclip_container.sessions().begin() as session:
        run = await session.get(Run, uuid.UUID(a["run_id"]), with_for_update=True)
        assert await finish_run(session, run, RunStatus.SUCCEEDED)
        assert await token_run(session, a["token"]) is None
    r = await paperclip_client.get(
        f"/api/companies/{a['company_id']}/issues/{a['issue_id']}", headers=auth
    )
    assert r.status_code == 401 and r.json()["code"] == "invalid_run_token"


async def test_a_run_token_is_bound_to_one_run_in_the_journal(
    paperclip_client, paperclip_container, two_runs
):
    a, b = two_runs
    async with paperclip_container.sessions()() as session:
        assert str(await token_run(session, a["token"])) == a["run_id"]
        assert str(await token_run(session, b["token"])) == b["run_id"]
        assert await token_run(session, "pcr_forged") is None


async def test_a_run_abandoned_by_its_runner_is_failed_once(
    paperclip_client, paperclip_container, two_runs
):
    from sqlalchemy import text

    a, _ = two_runs
    engine = paperclip_container.run_engine()
    engine.leases.abandon_after = 1
    async with paperclip_container.sessions().begin() as session:
        await session.execute(
            text(
                "UPDATE runs SET lease_expires_at = now() - interval '1 hour', controller_epoch = 3, "
                "phase = 'turn' WHERE id = :id"
            ),
            {"id": a["run_id"]},
        )
    assert await engine.leases.fail_abandoned_runs() >= 1
    assert await engine.leases.fail_abandoned_runs() == 0
    run = (
        await paperclip_client.get(f"/api/companies/{a['company_id']}/runs/{a['run_id']}")
    ).json()
    assert run["status"] == "failed" and run["error_code"] == "runner_unavailable"
    assert run["controller_epoch"] == 4  # adopted (fence moved) before it was ended


async def test_run_token_cannot_list_other_runs(paperclip_client, two_runs):
    a, _ = two_runs
    r = await paperclip_client.get(
        f"/api/companies/{a['company_id']}/runs", headers={"Authorization": f"Bearer {a['token']}"}
    )
    assert r.status_code == 403 and r.json()["code"] == "run_token_forbidden"


async def test_a_run_token_reads_only_its_run_agent_issue_and_the_issue_comments(
    paperclip_app, paperclip_client, two_runs
):
    """Every route of the app, with the run's own ids (and others of its company where the
    route takes another kind): exactly the run's own reads, and its comment, succeed."""
    from paperclip.http.access import Access
    from tests.api.tenancy import http_routes

    a, _ = two_runs
    base = f"/api/companies/{a['company_id']}"
    # Another agent's chat about another task of the same company, with a comment.
    other_issue = (await paperclip_client.post(f"{base}/issues", json={"title": "theirs"})).json()
    chat = await paperclip_client.post(
        f"{base}/conversations",
        json={"issue_id": other_issue["id"], "agent_id": a["other_agent_id"], "title": "c"},
    )
    assert chat.status_code == 201, chat.text
    ids = {
        "company_id": a["company_id"],
        "agent_id": a["agent_id"],
        "run_id": a["run_id"],
        "issue_id": a["issue_id"],
        "conversation_id": chat.json()["id"],
    }
    auth = {"Authorization": f"Bearer {a['token']}"}
    answered = {}
    for route in http_routes(paperclip_app):
        if not route.path.startswith("/api/") or route.access is Access.PUBLIC:
            continue
        path = route.path
        for name, value in ids.items():
            path = path.replace("{" + name + "}", value)
        path = path.replace("{", "").replace("}", "")  # any other id: one that does not exist
        if route.path.endswith("/stream"):
            path += "?wait=0"
        body = {"body": "from the agent"} if route.takes_body else None
        r = await paperclip_client.request(route.method, path, json=body, headers=auth)
        answered[(route.method, route.path)] = r.status_code
    allowed = {route for route, status in answered.items() if status < 400}
    assert allowed == {
        ("GET", "/api/companies/{company_id}/runs/{run_id}"),
        ("GET", "/api/companies/{company_id}/runs/{run_id}/events"),
        ("GET", "/api/companies/{company_id}/runs/{run_id}/events/stream"),
        ("GET", "/api/companies/{company_id}/runs/{run_id}/turns"),
        ("GET", "/api/companies/{company_id}/runs/{run_id}/tool-calls"),
        ("GET", "/api/companies/{company_id}/agents/{agent_id}"),
        ("GET", "/api/companies/{company_id}/issues/{issue_id}"),
        ("GET", "/api/companies/{company_id}/issues/{issue_id}/comments"),
        ("POST", "/api/companies/{company_id}/issues/{issue_id}/comments"),
    }
    refused = {answered[r] for r in answered if r not in allowed}
    assert refused <= {403, 404, 405}, answered
    # The lists of its company, another task and another agent's chat: not the run's to read.
    for path in (
        "/issues",
        f"/issues/{other_issue['id']}",
        f"/issues/{other_issue['id']}/comments",
        "/conversations",
        f"/conversations/{chat.json()['id']}/messages",
        "",
    ):
        r = await paperclip_client.get(base + path, headers=auth)
        assert r.status_code in (403, 404), (path, r.status_code)
        assert "theirs" not in r.text
    r = await paperclip_client.post(
        f"{base}/issues/{other_issue['id']}/comments", json={"body": "x"}, headers=auth
    )
    assert r.status_code == 404 and r.json()["code"] == "issue_not_found"
