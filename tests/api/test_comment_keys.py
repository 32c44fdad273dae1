"""A comment's idempotency key: a client that lost the answer to its POST sends it again."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from paperclip.models import Comment, WakeRequest


async def _count(container, model, **where) -> int:
    async with container.sessions()() as session:
        stmt = select(func.count()).select_from(model)
        for column, value in where.items():
            stmt = stmt.where(getattr(model, column) == value)
        return int(await session.scalar(stmt))


async def _issue(client, company, **fields) -> dict:
    r = await client.post(f"/api/companies/{company['id']}/issues", json={"title": "t", **fields})
    assert r.status_code == 201, r.text
    return r.json()


async def test_a_retried_comment_with_its_key_is_written_once_and_wakes_once(
    paperclip_client, paperclip_container, company, agent
):
    issue = await _issue(paperclip_client, company, assignee_agent_id=agent["id"])
    url = f"/api/companies/{company['id']}/issues/{issue['id']}/comments"
    sent = {"body": "Please also check the docs.", "idempotency_key": "c-1"}
    first = await paperclip_client.post(url, json=sent)
    assert first.status_code == 201, first.text
    [wake] = [w for w in await _wakes(paperclip_container, issue["id"]) if w.status == "queued"]
    folded = wake.coalesced_count

    again = await paperclip_client.post(url, json=sent)
    assert again.status_code == 200, again.text
    assert again.json() == first.json()
    assert await _count(paperclip_container, Comment, issue_id=uuid.UUID(issue["id"])) == 1
    [wake] = [w for w in await _wakes(paperclip_container, issue["id"]) if w.status == "queued"]
    assert wake.coalesced_count == folded  # the retry did not wake the agent again

    reused = await paperclip_client.post(url, json={"body": "Other", "idempotency_key": "c-1"})
    assert reused.status_code == 409, reused.text
    assert reused.json()["code"] == "idempotency_key_reused"
    assert reused.json()["details"][0]["field"] == "idempotency_key"

    # A key names a comment on one issue: another issue may use it.
    other = await _issue(paperclip_client, company)
    r = await paperclip_client.post(
        f"/api/companies/{company['id']}/issues/{other['id']}/comments", json=sent
    )
    assert r.status_code == 201 and r.json()["id"] != first.json()["id"]

    async with paperclip_container.sessions().begin() as session:
        with pytest.raises(IntegrityError):  # the database, not only the check, refuses it
            session.add(
                Comment(
                    company_id=uuid.UUID(company["id"]),
                    issue_id=uuid.UUID(issue["id"]),
                    author_user_id="someone",
                    body=sent["body"],
                    revision="x",
                    idempotency_key="c-1",
                )
            )
            await session.flush()

    r = await paperclip_client.post(url, json={"body": "x", "idempotency_key": ""})
    assert r.status_code in (400, 422) and "code" in r.json()


async def test_concurrent_posts_with_one_key_make_one_comment(
    paperclip_client, paperclip_container, company
):
    issue = await _issue(paperclip_client, company)
    url = f"/api/companies/{company['id']}/issues/{issue['id']}/comments"
    results = await asyncio.gather(
        *(
            paperclip_client.post(url, json={"body": "once", "idempotency_key": "same"})
            for _ in range(8)
        )
    )
    assert sorted(r.status_code for r in results) == [200] * 7 + [201]
    assert len({r.json()["id"] for r in results}) == 1
    assert await _count(paperclip_container, Comment, issue_id=uuid.UUID(issue["id"])) == 1


async def test_a_retry_after_the_comment_was_edited_is_that_comment(paperclip_client, company):
    issue = await _issue(paperclip_client, company)
    url = f"/api/companies/{company['id']}/issues/{issue['id']}/comments"
    sent = {"body": "draft", "idempotency_key": "k"}
    first = (await paperclip_client.post(url, json=sent)).json()
    await paperclip_client.patch(f"{url}/{first['id']}", json={"body": "final"})
    again = await paperclip_client.post(url, json=sent)
    assert again.status_code == 200, again.text
    assert (again.json()["id"], again.json()["body"]) == (first["id"], "final")


async def _wakes(container, issue_id: str) -> list[WakeRequest]:
    async with container.sessions()() as session:
        rows = await session.execute(
            select(WakeRequest).where(WakeRequest.issue_id == uuid.UUID(issue_id))
        )
        return list(rows.scalars())
