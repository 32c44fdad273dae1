"""What the board's Costs page and issue page read: runs counted once in each group, and an
issue's spend summed over its runs (``issue_id``), another company's issue refused."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from paperclip.models import CostEvent, Run


async def seed(container, company: dict, agent: dict, issue_ids: list[str | None]) -> None:
    """One run per entry (on that issue, or none), each with two priced responses of 100."""
    async with container.sessions().begin() as session:
        for n, issue_id in enumerate(issue_ids):
            run = Run(
                id=uuid.uuid4(),
                company_id=uuid.UUID(company["id"]),
                agent_id=uuid.UUID(agent["id"]),
                issue_id=uuid.UUID(issue_id) if issue_id else None,
                provider="fixture",
                status="succeeded",
            )
            session.add(run)
            await session.flush()
            for key in ("a", "b"):
                session.add(
                    CostEvent(
                        company_id=run.company_id,
                        agent_id=run.agent_id,
                        issue_id=run.issue_id,
                        run_id=run.id,
                        key=key,
                        provider="fixture",
                        model="gpt-x",
                        input_tokens=10 * (n + 1),
                        output_tokens=1,
                        cost_micros=100,
                        cost_source="priced",
                        occurred_at=datetime(2026, 12, 3, 9, tzinfo=UTC),
                    )
                )


async def test_groups_count_their_runs_once_and_an_issue_sums_its_runs(
    paperclip_client, paperclip_container, company, agent
):
    base = f"/api/companies/{company['id']}"
    made = await paperclip_client.post(f"{base}/issues", json={"title": "Spend"})
    assert made.status_code == 201, made.text
    issue = made.json()
    await seed(paperclip_container, company, agent, [issue["id"], issue["id"], None])

    by_agent = (await paperclip_client.get(f"{base}/costs", params={"group_by": "agent"})).json()
    assert (by_agent["totals"]["events"], by_agent["totals"]["runs"]) == (6, 3)
    [group] = by_agent["groups"]
    assert (group["name"], group["totals"]["runs"], group["totals"]["cost_micros"]) == (
        "coder",
        3,
        600,
    )

    of_issue = (
        await paperclip_client.get(
            f"{base}/costs", params={"issue_id": issue["id"], "group_by": "model"}
        )
    ).json()
    assert (
        of_issue["totals"]["runs"],
        of_issue["totals"]["input_tokens"],
        of_issue["totals"]["cost_micros"],
    ) == (2, 2 * 10 + 2 * 20, 400)
    assert [(g["key"], g["totals"]["runs"]) for g in of_issue["groups"]] == [("gpt-x", 2)]

    other = (
        await paperclip_client.post("/api/companies", json={"name": "Other", "issue_prefix": "OTH"})
    ).json()
    foreign = await paperclip_client.get(
        f"/api/companies/{other['id']}/costs", params={"issue_id": issue["id"]}
    )
    assert (foreign.status_code, foreign.json()["code"]) == (422, "issue_not_found")
