"""The org chart over HTTP: who reports to whom, moves that keep history, loops refused."""

from __future__ import annotations

import asyncio
import uuid

from sqlalchemy import select

from paperclip.models import ActivityEntry, Agent


async def hire(client, company, name: str, reports_to: str | None = None) -> dict:
    body = {"name": name, "provider": "fixture", "role": name.upper()}
    if reports_to is not None:
        body["reports_to"] = reports_to
    r = await client.post(f"/api/companies/{company['id']}/agents", json=body)
    assert r.status_code == 201, r.text
    return r.json()


async def chart(client, company) -> list[tuple[str, int, str | None]]:
    r = await client.get(f"/api/companies/{company['id']}/org-chart")
    assert r.status_code == 200, r.text
    names = {n["agent"]["id"]: n["agent"]["name"] for n in r.json()["agents"]}
    return [
        (n["agent"]["name"], n["depth"], names.get(n["agent"]["reports_to"]))
        for n in r.json()["agents"]
    ]


async def test_the_chart_is_a_tree_each_agent_under_its_manager(paperclip_client, company):
    ceo = await hire(paperclip_client, company, "ceo")
    cto = await hire(paperclip_client, company, "cto", ceo["id"])
    await hire(paperclip_client, company, "dev", cto["id"])
    await hire(paperclip_client, company, "cmo", ceo["id"])
    await hire(paperclip_client, company, "auditor")
    assert cto["reports_to"] == ceo["id"]

    assert await chart(paperclip_client, company) == [
        ("auditor", 0, None),
        ("ceo", 0, None),
        ("cmo", 1, "ceo"),
        ("cto", 1, "ceo"),
        ("dev", 2, "cto"),
    ]


async def test_a_loop_is_refused_and_nothing_is_written(paperclip_client, company):
    ceo = await hire(paperclip_client, company, "ceo")
    cto = await hire(paperclip_client, company, "cto", ceo["id"])
    dev = await hire(paperclip_client, company, "dev", cto["id"])
    base = f"/api/companies/{company['id']}/agents"
    for manager in (dev, ceo):
        r = await paperclip_client.patch(
            f"{base}/{ceo['id']}", json={"reports_to": manager["id"], "role": "boss"}
        )
        assert r.status_code == 422, r.text
        assert r.json()["code"] == "reports_to_cycle"
        assert r.json()["details"][0]["field"] == "reports_to"
    got = (await paperclip_client.get(f"{base}/{ceo['id']}")).json()
    assert (got["reports_to"], got["role"]) == (None, "CEO")


async def test_a_manager_of_another_company_or_none_is_refused(paperclip_client, company):
    other = (
        await paperclip_client.post("/api/companies", json={"name": "Other", "issue_prefix": "OT"})
    ).json()
    theirs = await hire(paperclip_client, other, "theirs")
    base = f"/api/companies/{company['id']}/agents"
    for missing in (theirs["id"], str(uuid.uuid4())):
        r = await paperclip_client.post(
            base, json={"name": "new", "provider": "fixture", "reports_to": missing}
        )
        assert r.status_code == 422 and r.json()["code"] == "agent_not_found", r.text
    assert (await paperclip_client.get(base)).json()["items"] == []


async def test_a_move_keeps_its_history_and_a_managers_deletion_lifts_its_reports(
    paperclip_client, company, paperclip_container
):
    ceo = await hire(paperclip_client, company, "ceo")
    cto = await hire(paperclip_client, company, "cto", ceo["id"])
    dev = await hire(paperclip_client, company, "dev", cto["id"])
    base = f"/api/companies/{company['id']}/agents"
    r = await paperclip_client.patch(f"{base}/{dev['id']}", json={"reports_to": ceo["id"]})
    assert r.status_code == 200 and r.json()["reports_to"] == ceo["id"]
    async with paperclip_container.sessions()() as session:
        moves = (
            await session.execute(
                select(ActivityEntry.details).where(
                    ActivityEntry.entity_id == dev["id"],
                    ActivityEntry.action == "agent.moved",
                )
            )
        ).scalars()
        assert list(moves) == [{"from": cto["id"], "to": ceo["id"]}]

    assert (await paperclip_client.delete(f"{base}/{ceo['id']}")).status_code == 204
    assert await chart(paperclip_client, company) == [("cto", 0, None), ("dev", 0, None)]


async def test_two_moves_at_once_cannot_close_a_loop(
    paperclip_client, company, paperclip_container
):
    a = await hire(paperclip_client, company, "a")
    b = await hire(paperclip_client, company, "b")
    base = f"/api/companies/{company['id']}/agents"
    answers = await asyncio.gather(
        paperclip_client.patch(f"{base}/{a['id']}", json={"reports_to": b["id"]}),
        paperclip_client.patch(f"{base}/{b['id']}", json={"reports_to": a["id"]}),
    )
    assert sorted(r.status_code for r in answers) == [200, 422]
    async with paperclip_container.sessions()() as session:
        rows = (
            await session.execute(
                select(Agent.reports_to).where(
                    Agent.id.in_([uuid.UUID(a["id"]), uuid.UUID(b["id"])])
                )
            )
        ).scalars()
        managers = sorted(str(row) for row in rows)
    assert managers in (sorted([a["id"], "None"]), sorted([b["id"], "None"]))
