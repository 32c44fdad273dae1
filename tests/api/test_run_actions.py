"""A failed run retried (one wake, whatever the clicks) and dismissed from the inbox (once)."""

from __future__ import annotations

import asyncio
import uuid

from sqlalchemy import func, select

from paperclip.models import Run, WakeRequest
from tests.api.test_overview import add_runs, issue


async def wakes_of(container, issue_id: str) -> list[WakeRequest]:
    async with container.sessions()() as session:
        found = await session.execute(
            select(WakeRequest).where(WakeRequest.issue_id == uuid.UUID(issue_id))
        )
        return list(found.scalars())


async def test_a_failed_run_is_retried_once_whatever_the_key(
    paperclip_client, paperclip_container, company, agent
):
    cid = company["id"]
    base = f"/api/companies/{cid}"
    task = await issue(paperclip_client, cid, "Upgrade the runtime")
    [failed] = await add_runs(paperclip_container, cid, agent["id"], [(task["id"], "failed")])

    r = await paperclip_client.post(
        f"{base}/runs/{failed}/retry", headers={"Idempotency-Key": "click-1"}
    )
    assert r.status_code == 201, r.text
    first = r.json()
    assert first["issue_id"] == task["id"]
    [wake] = await wakes_of(paperclip_container, task["id"])
    assert str(wake.id) == first["wake_request_id"]
    assert (wake.source, wake.payload, wake.idempotency_key) == (
        "retry",
        {"retry_of": failed},
        "click-1",
    )

    # The same key again, another key (a second click), no key at all: the same wake.
    for headers in ({"Idempotency-Key": "click-1"}, {"Idempotency-Key": "click-2"}, {}):
        again = await paperclip_client.post(f"{base}/runs/{failed}/retry", headers=headers)
        assert again.status_code == 200, again.text
        assert again.json() == first
    assert len(await wakes_of(paperclip_container, task["id"])) == 1


async def test_two_retries_at_once_make_one_wake(
    paperclip_client, paperclip_container, company, agent
):
    cid = company["id"]
    task = await issue(paperclip_client, cid, "Double click")
    [failed] = await add_runs(paperclip_container, cid, agent["id"], [(task["id"], "failed")])
    url = f"/api/companies/{cid}/runs/{failed}/retry"
    answers = await asyncio.gather(
        *(paperclip_client.post(url, headers={"Idempotency-Key": f"k{n}"}) for n in range(4))
    )
    assert sorted(a.status_code for a in answers) == [200, 200, 200, 201]
    assert len({a.json()["wake_request_id"] for a in answers}) == 1
    assert len(await wakes_of(paperclip_container, task["id"])) == 1


async def test_a_retry_is_refused_for_a_run_that_did_not_fail_or_a_closed_issue(
    paperclip_client, paperclip_container, company, agent
):
    cid = company["id"]
    base = f"/api/companies/{cid}"
    task = await issue(paperclip_client, cid, "Fine")
    closed = await issue(paperclip_client, cid, "Closed")
    [ok, failed] = await add_runs(
        paperclip_container, cid, agent["id"], [(task["id"], "succeeded"), (closed["id"], "failed")]
    )
    r = await paperclip_client.post(f"{base}/runs/{ok}/retry")
    assert (r.status_code, r.json()["code"]) == (409, "run_not_failed")
    await paperclip_client.patch(f"{base}/issues/{closed['id']}", json={"status": "done"})
    r = await paperclip_client.post(f"{base}/runs/{failed}/retry")
    assert (r.status_code, r.json()["code"]) == (409, "issue_closed")
    r = await paperclip_client.post(f"{base}/runs/{uuid.uuid4()}/retry")
    assert (r.status_code, r.json()["code"]) == (404, "run_not_found")
    assert await wakes_of(paperclip_container, closed["id"]) == []


async def test_a_key_used_for_another_request_is_refused(
    paperclip_client, paperclip_container, company, agent
):
    cid = company["id"]
    base = f"/api/companies/{cid}"
    one = await issue(paperclip_client, cid, "One")
    two = await issue(paperclip_client, cid, "Two")
    [a, b] = await add_runs(
        paperclip_container, cid, agent["id"], [(one["id"], "failed"), (two["id"], "failed")]
    )
    r = await paperclip_client.post(f"{base}/runs/{a}/retry", headers={"Idempotency-Key": "same"})
    assert r.status_code == 201
    r = await paperclip_client.post(f"{base}/runs/{b}/retry", headers={"Idempotency-Key": "same"})
    assert (r.status_code, r.json()["code"]) == (409, "idempotency_key_reused")
    assert r.json()["details"][0]["source"] == "header"
    assert await wakes_of(paperclip_container, two["id"]) == []
    r = await paperclip_client.post(
        f"{base}/runs/{b}/retry", headers={"Idempotency-Key": "x" * 201}
    )
    assert r.status_code == 400, r.text


async def test_a_dismissed_failure_leaves_the_inbox_once(
    paperclip_client, paperclip_container, company, agent
):
    cid = company["id"]
    base = f"/api/companies/{cid}"
    task = await issue(paperclip_client, cid, "Flaky")
    [ok, failed] = await add_runs(
        paperclip_container, cid, agent["id"], [(None, "succeeded"), (task["id"], "failed")]
    )
    count = (await paperclip_client.get(f"{base}/inbox/count")).json()
    assert count == {"interactions": 0, "holds": 0, "failed_runs": 1, "blocked_issues": 0, "total": 1}

    r = await paperclip_client.post(f"{base}/runs/{failed}/dismiss")
    assert r.status_code == 200, r.text
    assert r.json()["run_id"] == failed and r.json()["dismissed_by"] == "local-operator"
    again = await paperclip_client.post(f"{base}/runs/{failed}/dismiss")
    assert (again.status_code, again.json()["code"]) == (409, "run_already_dismissed")
    r = await paperclip_client.post(f"{base}/runs/{ok}/dismiss")
    assert (r.status_code, r.json()["code"]) == (409, "run_not_failed")

    inbox = (await paperclip_client.get(f"{base}/inbox")).json()
    assert inbox["failed_runs"] == [] and inbox["counts"]["failed_runs"] == 0
    assert (await paperclip_client.get(f"{base}/inbox/count")).json()["total"] == 0
    run = (await paperclip_client.get(f"{base}/runs/{failed}")).json()
    assert run["dismissed_at"] == r.json().get("dismissed_at", run["dismissed_at"])
    async with paperclip_container.sessions()() as session:
        dismissed = await session.execute(
            select(func.count()).select_from(Run).where(Run.dismissed_at.is_not(None))
        )
        assert dismissed.scalar_one() == 1


async def test_a_failed_run_reads_as_a_sentence(
    paperclip_client, paperclip_container, company, agent
):
    cid = company["id"]
    task = await issue(paperclip_client, cid, "Broken")
    [failed] = await add_runs(paperclip_container, cid, agent["id"], [(task["id"], "failed")])
    run = (await paperclip_client.get(f"/api/companies/{cid}/runs/{failed}")).json()
    assert run["error_code"] == "provider_turn_failed"
    assert run["reason"] == "The model's provider ended the turn with an error."
    inbox = (await paperclip_client.get(f"/api/companies/{cid}/inbox")).json()
    assert inbox["failed_runs"][0]["reason"] == run["reason"]
