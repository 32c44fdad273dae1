"""Companies: CRUD, validation, pagination, the error body, the activity log."""

from __future__ import annotations

import uuid

from sqlalchemy import func, select

from paperclip.models import ActivityEntry
from paperclip.plugin_host.seed_policies import SEED_POLICIES


async def test_health_reports_the_database(paperclip_client):
    r = await paperclip_client.get("/api/health")
    assert r.status_code == 200
    body = r.json()
    # The test's plugin host has the built-ins only: every seed's recovery policy is off,
    # which degrades the health but keeps it 200 (tests/process/test_recovery_policies_off.py
    # has a server with them, and with one disabled).
    assert body["status"] == "degraded"
    off = body["recovery_policies_off"]
    assert [p["distribution"] for p in off] == [p.distribution for p in SEED_POLICIES]
    assert {(p["why"], p["setting"]) for p in off} == {("not_installed", None)}
    assert body["database"] == {
        "status": "ok",
        "kind": "external",
        "latency_ms": body["database"]["latency_ms"],
        "error": None,
    }


async def test_create_get_update_delete(paperclip_client):
    r = await paperclip_client.post(
        "/api/companies", json={"name": "Paper Clip Inc", "issue_prefix": "PAP"}
    )
    assert r.status_code == 201
    company = r.json()
    assert company["issue_prefix"] == "PAP" and company["issue_counter"] == 0

    r = await paperclip_client.get(f"/api/companies/{company['id']}")
    assert r.json()["name"] == "Paper Clip Inc"

    r = await paperclip_client.patch(f"/api/companies/{company['id']}", json={"name": "Renamed"})
    assert r.status_code == 200 and r.json()["name"] == "Renamed"

    r = await paperclip_client.delete(f"/api/companies/{company['id']}")
    assert r.status_code == 204
    r = await paperclip_client.get(f"/api/companies/{company['id']}")
    assert r.status_code == 404
    assert r.json() == {
        "code": "company_not_found",
        "message": f"company {company['id']} not found",
        "details": None,
    }


async def test_prefix_is_derived_from_the_name(paperclip_client):
    r = await paperclip_client.post("/api/companies", json={"name": "acme tools"})
    assert r.json()["issue_prefix"] == "ACM"


async def test_bad_input_is_a_400_with_a_code(paperclip_client):
    for body in (
        {},
        {"name": ""},
        {"name": "x", "issue_prefix": "lower"},
        {"name": "x", "extra": 1},
    ):
        r = await paperclip_client.post("/api/companies", json=body)
        assert r.status_code == 400, body
        assert r.json()["code"] == "validation_error"
        assert r.json()["message"]
    r = await paperclip_client.post(
        "/api/companies", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert r.status_code == 400
    assert r.json()["code"] == "malformed_json"


async def test_body_size_is_limited(paperclip_client):
    r = await paperclip_client.post("/api/companies", json={"name": "x" * 2_000_000})
    assert r.status_code == 413
    assert r.json()["code"] == "request_too_large"


async def test_unknown_route_and_method_use_the_error_body(paperclip_client):
    r = await paperclip_client.get("/api/nothing-here")
    assert r.status_code == 404 and r.json()["code"] == "not_found"
    r = await paperclip_client.put("/api/companies")
    assert r.status_code == 405 and r.json()["code"] == "method_not_allowed"


async def test_pagination_walks_every_row_once(paperclip_client):
    made = set()
    for i in range(7):
        r = await paperclip_client.post("/api/companies", json={"name": f"Co {i}"})
        made.add(r.json()["id"])
    seen: list[str] = []
    cursor = None
    while True:
        params = {"limit": 3} | ({"cursor": cursor} if cursor else {})
        page = (await paperclip_client.get("/api/companies", params=params)).json()
        assert len(page["items"]) <= 3
        seen += [c["id"] for c in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert made <= set(seen)
    assert len(seen) == len(set(seen))


async def test_page_size_is_bounded_and_cursors_checked(paperclip_client):
    r = await paperclip_client.get("/api/companies", params={"limit": 10_000})
    assert r.status_code == 400
    r = await paperclip_client.get("/api/companies", params={"cursor": "garbage!"})
    assert r.status_code == 422 and r.json()["code"] == "invalid_cursor"


async def test_every_write_is_in_the_activity_log(paperclip_client, paperclip_container):
    r = await paperclip_client.post("/api/companies", json={"name": "Logged"})
    company_id = uuid.UUID(r.json()["id"])
    await paperclip_client.patch(f"/api/companies/{company_id}", json={"name": "Logged 2"})
    async with paperclip_container.sessions()() as session:
        actions = (
            await session.execute(
                select(ActivityEntry.action, ActivityEntry.actor_type)
                .where(ActivityEntry.entity_id == str(company_id))
                .order_by(ActivityEntry.id)
            )
        ).all()
    assert actions == [("company.created", "user"), ("company.updated", "user")]


async def test_a_refused_write_writes_nothing(paperclip_client, paperclip_container):
    async def count():
        async with paperclip_container.sessions()() as session:
            return (await session.execute(select(func.count()).select_from(ActivityEntry))).scalar()

    before = await count()
    r = await paperclip_client.post("/api/companies", json={"name": "x", "issue_prefix": "1BAD"})
    assert r.status_code == 400
    assert await count() == before
