"""Costs, budgets and prices over HTTP: the figures, the 4xx codes, the company's time zone."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from paperclip.models import CostEvent, Run


async def seed_costs(container, company, agent) -> uuid.UUID:
    """A run of the agent with three cost events, on two days in the company's zone."""
    async with container.sessions().begin() as session:
        run = Run(
            id=uuid.uuid4(),
            company_id=uuid.UUID(company["id"]),
            agent_id=uuid.UUID(agent["id"]),
            provider="fixture",
            status="running",
        )
        session.add(run)
        await session.flush()
        for key, model, tokens, cost, source, at in (
            ("a", "gpt-x", 100, 1500, "priced", datetime(2026, 12, 1, 9, tzinfo=UTC)),
            ("b", "gpt-x", 200, 2500, "provider", datetime(2026, 12, 1, 23, 30, tzinfo=UTC)),
            ("c", "mystery", 50, None, "unknown", datetime(2026, 12, 2, 10, tzinfo=UTC)),
        ):
            session.add(
                CostEvent(
                    company_id=run.company_id,
                    agent_id=run.agent_id,
                    run_id=run.id,
                    key=key,
                    provider="fixture",
                    model=model,
                    input_tokens=tokens,
                    output_tokens=tokens // 10,
                    cost_micros=cost,
                    cost_source=source,
                    occurred_at=at,
                )
            )
    return run.id


async def test_costs_by_day_model_and_agent_and_a_runs_usage(
    paperclip_client, paperclip_container, company, agent
):
    run_id = await seed_costs(paperclip_container, company, agent)
    base = f"/api/companies/{company['id']}"
    by_day = (await paperclip_client.get(f"{base}/costs", params={"group_by": "day"})).json()
    assert by_day["totals"]["events"] == 3 and by_day["totals"]["cost_micros"] == 4000
    assert by_day["totals"]["unpriced_events"] == 1
    assert {g["key"]: g["totals"]["cost_micros"] for g in by_day["groups"]} == {
        "2026-12-01": 4000,
        "2026-12-02": 0,
    }
    # In Paris 23:30 UTC is the next day.
    r = await paperclip_client.patch(base, json={"time_zone": "Europe/Paris"})
    assert r.status_code == 200 and r.json()["time_zone"] == "Europe/Paris"
    by_day = (await paperclip_client.get(f"{base}/costs", params={"group_by": "day"})).json()
    assert {g["key"]: g["totals"]["cost_micros"] for g in by_day["groups"]} == {
        "2026-12-02": 2500,
        "2026-12-01": 1500,
    }
    by_agent = (await paperclip_client.get(f"{base}/costs")).json()
    assert [(g["key"], g["name"]) for g in by_agent["groups"]] == [(agent["id"], "coder")]
    ranged = (
        await paperclip_client.get(
            f"{base}/costs",
            params={"group_by": "model", "since": "2026-12-01T12:00:00Z", "until": "2026-12-03"},
        )
    ).json()
    assert [(g["key"], g["totals"]["events"]) for g in ranged["groups"]] == [
        ("gpt-x", 1),
        ("mystery", 1),
    ]

    run = (await paperclip_client.get(f"{base}/runs/{run_id}")).json()
    assert run["usage"] == {
        "input_tokens": 350,
        "cached_input_tokens": 0,
        "output_tokens": 35,
        "reasoning_tokens": 0,
        "cost_micros": 4000,
        "events": 3,
        "unpriced_events": 1,
    }
    page = (
        await paperclip_client.get(
            f"{base}/cost-events", params={"run_id": str(run_id), "limit": 2}
        )
    ).json()
    assert [e["key"] for e in page["items"]] == ["a", "b"] and page["next_cursor"]
    rest = (
        await paperclip_client.get(
            f"{base}/cost-events",
            params={"run_id": str(run_id), "cursor": page["next_cursor"], "limit": 2},
        )
    ).json()
    assert [e["key"] for e in rest["items"]] == ["c"] and rest["next_cursor"] is None


async def test_bad_times_zones_and_budgets_are_refused_with_a_code(
    paperclip_client, company, agent
):
    base = f"/api/companies/{company['id']}"
    r = await paperclip_client.get(f"{base}/costs", params={"since": "yesterday"})
    assert (r.status_code, r.json()["code"]) == (422, "invalid_time")
    r = await paperclip_client.get(
        f"{base}/costs", params={"since": "2026-12-02", "until": "2026-12-01"}
    )
    assert r.status_code == 422 and r.json()["details"][0]["field"] == "since"
    r = await paperclip_client.patch(base, json={"time_zone": "Mars/Olympus"})
    assert (r.status_code, r.json()["code"]) == (422, "invalid_time_zone")
    r = await paperclip_client.post(
        "/api/companies", json={"name": "Zoned", "time_zone": "../../etc/passwd"}
    )
    assert (r.status_code, r.json()["code"]) == (422, "invalid_time_zone")

    r = await paperclip_client.post(
        f"{base}/budgets", json={"scope": "agent", "monthly_limit_micros": 5}
    )
    assert r.status_code == 422 and r.json()["details"][0]["field"] == "scope_id"
    r = await paperclip_client.post(
        f"{base}/budgets", json={"scope": "company", "monthly_limit_micros": -1}
    )
    assert (r.status_code, r.json()["code"]) == (400, "validation_error")
    made = await paperclip_client.post(
        f"{base}/budgets",
        json={"scope": "agent", "scope_id": agent["id"], "monthly_limit_micros": 50_000_000},
    )
    assert made.status_code == 201, made.text
    budget = made.json()
    assert (budget["spent_micros"], budget["exceeded"], budget["warn_percent"]) == (0, False, 80)
    again = await paperclip_client.post(
        f"{base}/budgets",
        json={"scope": "agent", "scope_id": agent["id"], "monthly_limit_micros": 1},
    )
    assert (again.status_code, again.json()["code"]) == (409, "budget_exists")
    r = await paperclip_client.patch(
        f"{base}/budgets/{budget['id']}", json={"monthly_limit_micros": 80_000_000}
    )
    assert r.status_code == 200 and r.json()["monthly_limit_micros"] == 80_000_000
    listed = (await paperclip_client.get(f"{base}/budgets")).json()["items"]
    assert [b["id"] for b in listed] == [budget["id"]]
    assert (await paperclip_client.delete(f"{base}/budgets/{budget['id']}")).status_code == 204


async def test_prices_are_the_instances_and_the_tables_win(paperclip_client):
    put = await paperclip_client.put(
        "/api/prices/gpt-x",
        json={"input_per_million_micros": 2_000_000, "output_per_million_micros": 8_000_000},
    )
    assert put.status_code == 200, put.text
    assert put.json()["cached_input_per_million_micros"] == 2_000_000  # the input price
    listed = (await paperclip_client.get("/api/prices")).json()
    assert {p["model"]: p["source"] for p in listed}["gpt-x"] == "table"
    r = await paperclip_client.put("/api/prices/gpt-x", json={"input_per_million_micros": -5})
    assert r.status_code == 400
    assert (await paperclip_client.delete("/api/prices/gpt-x")).status_code == 204
    r = await paperclip_client.delete("/api/prices/gpt-x")
    assert (r.status_code, r.json()["code"]) == (404, "price_not_found")


async def test_a_parts_cost_rolls_up_to_the_issue_it_is_a_part_of(
    paperclip_client, paperclip_container, company, agent
):
    base = f"/api/companies/{company['id']}"

    async def issue(title: str, parent: dict | None = None) -> dict:
        body = {"title": title, "parent_id": parent["id"] if parent else None}
        made = await paperclip_client.post(f"{base}/issues", json=body)
        assert made.status_code == 201, made.text
        return made.json()

    whole = await issue("Ship v2")
    part = await issue("Write the changelog", whole)
    part_of_part = await issue("Collect the pull requests", part)
    aside = await issue("Something else")
    async with paperclip_container.sessions().begin() as session:
        for key, on, cost in (("w", whole, 100), ("p", part, 20), ("pp", part_of_part, 3)):
            run = Run(
                id=uuid.uuid4(),
                company_id=uuid.UUID(company["id"]),
                agent_id=uuid.UUID(agent["id"]),
                issue_id=uuid.UUID(on["id"]),
                provider="fixture",
                status="succeeded",
            )
            session.add(run)
            await session.flush()
            session.add(
                CostEvent(
                    company_id=run.company_id,
                    agent_id=run.agent_id,
                    run_id=run.id,
                    issue_id=run.issue_id,
                    key=key,
                    provider="fixture",
                    model="gpt-x",
                    input_tokens=10,
                    output_tokens=1,
                    cost_micros=cost,
                    cost_source="priced",
                    occurred_at=datetime(2026, 12, 1, 9, tzinfo=UTC),
                )
            )

    async def spent(issue: dict, **params) -> tuple[int, dict]:
        answer = await paperclip_client.get(
            f"{base}/costs", params={"issue_id": issue["id"], "group_by": "issue", **params}
        )
        assert answer.status_code == 200, answer.text
        body = answer.json()
        return body["totals"]["cost_micros"], {
            g["name"]: g["totals"]["cost_micros"] for g in body["groups"]
        }

    assert (await spent(whole))[0] == 100
    total, by_issue = await spent(whole, with_parts="true")
    assert total == 123
    assert by_issue == {
        whole["identifier"]: 100,
        part["identifier"]: 20,
        part_of_part["identifier"]: 3,
    }
    assert (await spent(part, with_parts="true"))[0] == 23
    assert (await spent(aside, with_parts="true"))[0] == 0
    events = await paperclip_client.get(
        f"{base}/cost-events", params={"issue_id": part["id"], "with_parts": "true"}
    )
    assert [e["key"] for e in events.json()["items"]] == ["p", "pp"]

    refused = await paperclip_client.get(f"{base}/costs", params={"with_parts": "true"})
    assert refused.status_code == 422 and refused.json()["code"] == "invalid_input"
