"""A parent issue is not done while a part of it is open, unless a person says so."""

from __future__ import annotations

import uuid

import pytest

from paperclip.common.actor import Actor
from paperclip.errors import ConflictError


async def test_a_parent_with_open_parts_is_not_done_until_they_are(paperclip_client, company):
    base = f"/api/companies/{company['id']}/issues"
    goal = (await paperclip_client.post(base, json={"title": "Ship it"})).json()
    parts = [
        (await paperclip_client.post(base, json={"title": t, "parent_id": goal["id"]})).json()
        for t in ("Changelog", "Tag")
    ]

    r = await paperclip_client.patch(f"{base}/{goal['id']}", json={"status": "done"})
    assert r.status_code == 409, r.text
    assert r.json()["code"] == "issue_parts_open"
    assert r.json()["open_parts"] == [p["identifier"] for p in parts]
    assert (await paperclip_client.get(f"{base}/{goal['id']}")).json()["status"] == "todo"

    await paperclip_client.patch(f"{base}/{parts[0]['id']}", json={"status": "done"})
    await paperclip_client.patch(f"{base}/{parts[1]['id']}", json={"status": "cancelled"})
    r = await paperclip_client.patch(f"{base}/{goal['id']}", json={"status": "done"})
    assert r.status_code == 200 and r.json()["status"] == "done"


async def test_a_person_may_close_a_parent_anyway(paperclip_client, company):
    base = f"/api/companies/{company['id']}/issues"
    goal = (await paperclip_client.post(base, json={"title": "Ship it"})).json()
    part = (
        await paperclip_client.post(base, json={"title": "Tag", "parent_id": goal["id"]})
    ).json()
    r = await paperclip_client.patch(
        f"{base}/{goal['id']}", json={"status": "done", "even_with_open_parts": True}
    )
    assert r.status_code == 200 and r.json()["status"] == "done"
    assert (await paperclip_client.get(f"{base}/{part['id']}")).json()["status"] == "todo"


async def test_an_agent_cannot_close_a_parent_anyway(
    paperclip_client, company, paperclip_container
):
    base = f"/api/companies/{company['id']}/issues"
    goal = (await paperclip_client.post(base, json={"title": "Ship it"})).json()
    await paperclip_client.post(base, json={"title": "Tag", "parent_id": goal["id"]})
    company_id = uuid.UUID(company["id"])
    agent = Actor(type="agent", id="coder", company_id=company_id, run_id=uuid.uuid4())
    with pytest.raises(ConflictError) as refused:
        await paperclip_container.issues().update(
            agent,
            company_id,
            uuid.UUID(goal["id"]),
            {"status": "done", "even_with_open_parts": True},
        )
    assert refused.value.code == "issue_parts_open"
