"""Agents, issues and comments over HTTP, and the wakes they cause."""

from __future__ import annotations

import asyncio
import uuid

from sqlalchemy import select

from paperclip.models import WakeRequest


async def wakes(container, company_id):
    async with container.sessions()() as session:
        rows = await session.execute(
            select(WakeRequest).where(WakeRequest.company_id == uuid.UUID(company_id))
        )
        return list(rows.scalars())


async def test_agent_crud_pause_resume(paperclip_client, company):
    base = f"/api/companies/{company['id']}/agents"
    r = await paperclip_client.post(base, json={"name": "a1", "provider": "fixture"})
    agent = r.json()
    assert agent["status"] == "active" and agent["provider_config"] == {}
    r = await paperclip_client.post(base, json={"name": "a1", "provider": "fixture"})
    assert r.status_code == 409 and r.json()["code"] == "agent_name_taken"
    r = await paperclip_client.post(f"{base}/{agent['id']}/pause")
    assert r.status_code == 200 and r.json()["status"] == "paused"
    r = await paperclip_client.post(f"{base}/{agent['id']}/resume")
    assert r.json()["status"] == "active"
    r = await paperclip_client.patch(
        f"{base}/{agent['id']}", json={"role": "reviewer", "provider_config": {"model": "m2"}}
    )
    assert r.json()["role"] == "reviewer" and r.json()["provider_config"] == {"model": "m2"}
    r = await paperclip_client.get(base)
    assert [a["name"] for a in r.json()["items"]] == ["a1"]
    assert (await paperclip_client.delete(f"{base}/{agent['id']}")).status_code == 204
    assert (await paperclip_client.get(f"{base}/{agent['id']}")).status_code == 404


async def test_issue_identifiers_are_per_company_and_unique_under_concurrency(
    paperclip_client, company
):
    base = f"/api/companies/{company['id']}/issues"
    results = await asyncio.gather(
        *(paperclip_client.post(base, json={"title": f"t{i}"}) for i in range(12))
    )
    identifiers = sorted(r.json()["identifier"] for r in results)
    assert identifiers == sorted(f"PAP-{n}" for n in range(1, 13))
    other = (
        await paperclip_client.post("/api/companies", json={"name": "Other", "issue_prefix": "OTH"})
    ).json()
    r = await paperclip_client.post(f"/api/companies/{other['id']}/issues", json={"title": "first"})
    assert r.json()["identifier"] == "OTH-1"


async def test_issue_filters_parent_and_cycles(paperclip_client, company, agent):
    base = f"/api/companies/{company['id']}/issues"
    parent = (await paperclip_client.post(base, json={"title": "parent"})).json()
    child = (
        await paperclip_client.post(
            base,
            json={
                "title": "child task",
                "parent_id": parent["id"],
                "assignee_agent_id": agent["id"],
            },
        )
    ).json()
    await paperclip_client.post(base, json={"title": "done thing", "status": "done"})

    async def titles(**params):
        return sorted(
            i["title"] for i in (await paperclip_client.get(base, params=params)).json()["items"]
        )

    assert await titles(parent_id=parent["id"]) == ["child task"]
    assert await titles(assignee_agent_id=agent["id"]) == ["child task"]
    assert await titles(status="done") == ["done thing"]
    assert await titles(q="CHILD") == ["child task"]
    assert await titles(q="%") == []
    r = await paperclip_client.patch(f"{base}/{parent['id']}", json={"parent_id": child["id"]})
    assert r.status_code == 422 and r.json()["code"] == "parent_cycle"
    r = await paperclip_client.patch(f"{base}/{parent['id']}", json={"parent_id": parent["id"]})
    assert r.json()["code"] == "parent_cycle"
    r = await paperclip_client.get(base, params={"status": "nonsense"})
    assert r.status_code == 400


async def test_assignment_and_comments_wake_the_assignee_coalesced(
    paperclip_client, company, agent, paperclip_container
):
    base = f"/api/companies/{company['id']}/issues"
    issue = (await paperclip_client.post(base, json={"title": "work"})).json()
    assert await wakes(paperclip_container, company["id"]) == []
    r = await paperclip_client.patch(
        f"{base}/{issue['id']}", json={"assignee_agent_id": agent["id"]}
    )
    assert r.status_code == 200
    [wake] = await wakes(paperclip_container, company["id"])
    assert (wake.source, wake.status, wake.coalesced_count) == ("assignment", "queued", 0)

    for body in ("first", "second"):
        r = await paperclip_client.post(f"{base}/{issue['id']}/comments", json={"body": body})
        assert r.status_code == 201
    [wake] = await wakes(paperclip_container, company["id"])
    assert wake.coalesced_count == 2  # still one queued wake for this agent and issue


async def test_comment_revision_edit_and_delete(paperclip_client, company):
    issue = (
        await paperclip_client.post(f"/api/companies/{company['id']}/issues", json={"title": "t"})
    ).json()
    base = f"/api/companies/{company['id']}/issues/{issue['id']}/comments"
    c = (await paperclip_client.post(base, json={"body": "  hello  "})).json()
    import hashlib

    assert c["revision"] == hashlib.sha256(b"hello").hexdigest()
    assert c["author_user_id"] == "local-operator" and c["author_agent_id"] is None
    edited = (
        await paperclip_client.patch(f"{base}/{c['id']}", json={"body": "hello, world"})
    ).json()
    assert edited["edited_at"] and edited["revision"] == hashlib.sha256(b"hello, world").hexdigest()
    deleted = (await paperclip_client.delete(f"{base}/{c['id']}")).json()
    assert deleted["deleted_at"] and deleted["body"] == ""
    r = await paperclip_client.patch(f"{base}/{c['id']}", json={"body": "again"})
    assert r.status_code == 409 and r.json()["code"] == "comment_deleted"
    listed = (await paperclip_client.get(base)).json()["items"]
    assert [x["id"] for x in listed] == [c["id"]]


async def test_wakeup_idempotency_key_and_coalescing(paperclip_client, company, agent):
    issue = (
        await paperclip_client.post(f"/api/companies/{company['id']}/issues", json={"title": "t"})
    ).json()
    url = f"/api/companies/{company['id']}/agents/{agent['id']}/wakeup"
    first = await paperclip_client.post(
        url, json={"issue_id": issue["id"], "idempotency_key": "k1"}
    )
    assert first.status_code == 201
    again = await paperclip_client.post(
        url, json={"issue_id": issue["id"], "idempotency_key": "k1"}
    )
    assert again.status_code == 200 and again.json()["deduplicated"] is True
    assert again.json()["id"] == first.json()["id"] and again.json()["coalesced_count"] == 0
    other_key = await paperclip_client.post(
        url, json={"issue_id": issue["id"], "idempotency_key": "k2"}
    )
    assert other_key.status_code == 200 and other_key.json()["coalesced_count"] == 1
    # k2 now resolves to the wake it was folded into, without counting again
    replay = await paperclip_client.post(
        url, json={"issue_id": issue["id"], "idempotency_key": "k2"}
    )
    assert replay.json()["deduplicated"] is True and replay.json()["coalesced_count"] == 1


async def test_an_idempotency_key_reused_for_another_request_is_a_conflict(
    paperclip_client, company, agent, paperclip_container
):
    url = f"/api/companies/{company['id']}/agents/{agent['id']}/wakeup"
    first = await paperclip_client.post(url, json={"reason": "deploy", "idempotency_key": "k"})
    assert first.status_code == 201
    for other in ({"reason": "rollback"}, {"reason": "deploy", "payload": {"x": 1}}):
        r = await paperclip_client.post(url, json={**other, "idempotency_key": "k"})
        assert r.status_code == 409 and r.json()["code"] == "idempotency_key_reused"
        assert r.json()["details"][0]["field"] == "idempotency_key"
    same = await paperclip_client.post(url, json={"reason": "deploy", "idempotency_key": "k"})
    assert same.status_code == 200 and same.json()["deduplicated"] is True
    assert len(await wakes(paperclip_container, company["id"])) == 1


async def test_concurrent_identical_keys_create_one_wake(
    paperclip_client, company, agent, paperclip_container
):
    url = f"/api/companies/{company['id']}/agents/{agent['id']}/wakeup"
    results = await asyncio.gather(
        *(
            paperclip_client.post(url, json={"idempotency_key": "same", "reason": "r"})
            for _ in range(8)
        )
    )
    assert sorted(r.status_code for r in results) == [200] * 7 + [201]
    assert len({r.json()["id"] for r in results}) == 1
    assert len(await wakes(paperclip_container, company["id"])) == 1


async def test_runs_list_and_events_of_an_unknown_run(paperclip_client, company):
    r = await paperclip_client.get(f"/api/companies/{company['id']}/runs")
    assert r.status_code == 200 and r.json() == {"items": [], "next_cursor": None}
    r = await paperclip_client.get(f"/api/companies/{company['id']}/runs/{uuid.uuid4()}/events")
    assert r.status_code == 404 and r.json()["code"] == "run_not_found"


async def test_coalescing_survives_generic_prepared_plans(paperclip_client, company, agent):
    # PostgreSQL switches a prepared statement to a generic plan after five
    # executions; the partial-index conflict target must still be found then.
    issues = f"/api/companies/{company['id']}/issues"
    url = f"/api/companies/{company['id']}/agents/{agent['id']}/wakeup"
    for i in range(8):
        issue = (await paperclip_client.post(issues, json={"title": f"t{i}"})).json()
        for _ in range(2):
            r = await paperclip_client.post(url, json={"issue_id": issue["id"]})
            assert r.status_code in (200, 201), r.text
        r = await paperclip_client.post(url, json={})
        assert r.status_code == 201, r.text
