"""Issue numbers: taken apart from the transaction that writes the issue.

Two issues of one company made at once used to be written one after the
other: the first's transaction held the company's row (its ``issue_counter``)
until it committed, and the second waited for it. Now the number is taken by
a statement that commits on its own, so the second goes on while the first
is still open; the database keeps the numbers unique.
"""

from __future__ import annotations

import asyncio
import uuid

import pytest

from paperclip.common.actor import LOCAL_OPERATOR
from paperclip.domain.companies.companies import company_writes
from paperclip.domain.issues.issues import create_issue
from paperclip.models import IssueStatus
from paperclip.testing import connect

WAITING = """
SELECT a.pid, a.wait_event_type, l.locktype, a.query FROM pg_locks l
JOIN pg_stat_activity a ON a.pid = l.pid
WHERE NOT l.granted AND a.datname = current_database()
"""


async def answered_or_waiting(request: asyncio.Task, database_url: str, within: float = 30):
    """Wait until the request answers, or a backend of the database waits for a lock (which
    would be the request, waiting for the open transaction): what happened first."""
    watcher = await connect(database_url)
    try:
        deadline = asyncio.get_running_loop().time() + within
        while asyncio.get_running_loop().time() < deadline:
            if request.done():
                return "answered", request.result()
            waiting = await watcher.fetch(WAITING)
            if waiting:
                return "waiting", [dict(w) for w in waiting]
            await asyncio.sleep(0.01)
        raise TimeoutError("neither answered nor waiting")
    finally:
        await watcher.close()


async def test_an_issue_is_made_while_another_of_the_company_is_uncommitted(
    paperclip_client, paperclip_container, paperclip_database_url, company
):
    company_id = uuid.UUID(company["id"])
    numbers = paperclip_container.issue_numbers()
    async with company_writes(paperclip_container.sessions(), company_id) as session:
        # The first: written, not committed (as a slow request's transaction is).
        first = await create_issue(
            session,
            LOCAL_OPERATOR,
            company_id,
            number=await numbers.one(company_id),
            title="first",
            description="",
            status=IssueStatus.TODO,
            priority="medium",
            assignee=None,
        )
        second = asyncio.create_task(
            paperclip_client.post(f"/api/companies/{company_id}/issues", json={"title": "second"})
        )
        what, answer = await answered_or_waiting(second, paperclip_database_url)
        assert what == "answered", answer  # before: it waited on the company's row
        assert answer.status_code == 201, answer.text
        assert answer.json()["number"] == first.number + 1
    issues = (await paperclip_client.get(f"/api/companies/{company_id}/issues")).json()["items"]
    assert sorted(i["identifier"] for i in issues) == ["PAP-1", "PAP-2"]


async def test_a_refused_creation_spends_no_number_and_a_rolled_back_one_leaves_a_gap(
    paperclip_client, paperclip_container, company
):
    base = f"/api/companies/{company['id']}/issues"
    assert (await paperclip_client.post(base, json={"title": "one"})).json()["number"] == 1
    refused = await paperclip_client.post(
        base, json={"title": "two", "assignee_agent_id": str(uuid.uuid4())}
    )
    assert refused.status_code == 422  # checked before a number is taken
    assert (await paperclip_client.post(base, json={"title": "two"})).json()["number"] == 2

    company_id = uuid.UUID(company["id"])
    with pytest.raises(RuntimeError):
        async with company_writes(paperclip_container.sessions(), company_id) as session:
            await create_issue(
                session,
                LOCAL_OPERATOR,
                company_id,
                number=await paperclip_container.issue_numbers().one(company_id),
                title="rolled back",
                description="",
                status=IssueStatus.TODO,
                priority="medium",
                assignee=None,
            )
            raise RuntimeError("the transaction fails after its issue was written")
    after = await paperclip_client.post(base, json={"title": "four"})
    assert after.json()["number"] == 4  # 3 was taken and never used
    company_now = (await paperclip_client.get(f"/api/companies/{company['id']}")).json()
    assert company_now["issue_counter"] == 4


async def test_issues_made_at_once_get_distinct_numbers(paperclip_client, company):
    base = f"/api/companies/{company['id']}/issues"
    answers = await asyncio.gather(
        *(paperclip_client.post(base, json={"title": f"t{i}"}) for i in range(20))
    )
    assert {a.status_code for a in answers} == {201}
    assert sorted(a.json()["number"] for a in answers) == list(range(1, 21))
