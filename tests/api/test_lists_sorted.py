"""Issue and run lists in other orders (newest first, last changed first), and issue search."""

from __future__ import annotations

import uuid

from paperclip.models import Run
from tests.api.test_pages import walk


async def make_issues(client, company_id, specs):
    made = []
    for spec in specs:
        r = await client.post(f"/api/companies/{company_id}/issues", json=spec)
        assert r.status_code == 201, r.text
        made.append(r.json())
    return made


async def test_issues_newest_first_and_last_changed_first_page_by_page(paperclip_client, company):
    base = f"/api/companies/{company['id']}/issues"
    issues = await make_issues(
        paperclip_client, company["id"], [{"title": f"t{i}"} for i in range(5)]
    )
    ids = [i["id"] for i in issues]

    assert await walk(paperclip_client, base) == ids
    assert await walk(paperclip_client, base, sort="-created") == ids[::-1]
    # A change moves an issue to the front of "last changed first", and to the end of "updated".
    r = await paperclip_client.patch(f"{base}/{ids[1]}", json={"title": "changed"})
    assert r.status_code == 200
    assert (await walk(paperclip_client, base, sort="-updated"))[0] == ids[1]
    assert (await walk(paperclip_client, base, sort="updated"))[-1] == ids[1]
    assert sorted(await walk(paperclip_client, base, sort="-updated")) == sorted(ids)


async def test_a_cursor_of_one_order_is_refused_in_another(paperclip_client, company):
    base = f"/api/companies/{company['id']}/issues"
    await make_issues(paperclip_client, company["id"], [{"title": "a"}, {"title": "b"}])
    cursor = (await paperclip_client.get(base, params={"limit": 1})).json()["next_cursor"]
    r = await paperclip_client.get(base, params={"limit": 1, "sort": "-created", "cursor": cursor})
    assert r.status_code == 422 and r.json()["code"] == "invalid_cursor"
    newest = (await paperclip_client.get(base, params={"limit": 1, "sort": "-created"})).json()
    r = await paperclip_client.get(
        base, params={"sort": "-created", "cursor": newest["next_cursor"]}
    )
    assert r.status_code == 200 and [i["title"] for i in r.json()["items"]] == ["a"]


async def test_an_unknown_order_is_refused_with_a_code(paperclip_client, company):
    for path in ("issues", "runs"):
        r = await paperclip_client.get(
            f"/api/companies/{company['id']}/{path}", params={"sort": "title"}
        )
        assert r.status_code == 400, r.text
        assert r.json()["code"] and "sort" in r.text


async def test_search_matches_title_description_and_identifier(paperclip_client, company):
    base = f"/api/companies/{company['id']}/issues"
    await make_issues(
        paperclip_client,
        company["id"],
        [
            {"title": "Fix the build", "priority": "high"},
            {"title": "Docs", "description": "The BUILD page is stale"},
            {"title": "Release", "priority": "urgent"},
        ],
    )

    async def titles(**params):
        r = await paperclip_client.get(base, params=params)
        assert r.status_code == 200, r.text
        return [i["title"] for i in r.json()["items"]]

    assert await titles(q="build") == ["Fix the build", "Docs"]
    assert await titles(q="pap-3") == ["Release"]  # the identifier, any case
    assert await titles(q="build", priority="high") == ["Fix the build"]
    assert await titles(priority="urgent", sort="-created") == ["Release"]
    assert await titles(q="50%") == []  # a LIKE wildcard is text


async def test_runs_newest_first(paperclip_client, paperclip_container, company, agent):
    async with paperclip_container.sessions().begin() as session:
        ids = []
        for _ in range(3):
            run = Run(
                id=uuid.uuid4(),
                company_id=uuid.UUID(company["id"]),
                agent_id=uuid.UUID(agent["id"]),
                provider="fixture",
                status="succeeded",
            )
            session.add(run)
            await session.flush()
            ids.append(str(run.id))
    base = f"/api/companies/{company['id']}/runs"
    # One transaction: the same created_at, so the id orders them, both ways.
    oldest_first = await walk(paperclip_client, base)
    assert sorted(oldest_first) == sorted(ids)
    assert await walk(paperclip_client, base, sort="-created") == oldest_first[::-1]
