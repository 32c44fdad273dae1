"""A person's comment and a claim of the issue's wake never deadlock.

A comment's transaction inserts the comment (its foreign key takes ``FOR KEY
SHARE`` on the issue), then coalesces into the issue's queued wake. A claim
holds that wake and locks the issue to start its run. With ``FOR UPDATE`` on
the issue, each waited for the other: PostgreSQL ended one with ``deadlock
detected`` and the comment's ``POST`` answered 500 (seen under ``paperclip
chaos``). The issue is locked ``FOR NO KEY UPDATE`` (``ISSUE_LOCK``).
"""

from __future__ import annotations

import asyncio
import uuid

import pytest
from sqlalchemy import select

from paperclip.common.actor import LOCAL_OPERATOR
from paperclip.domain.issues.comments import add_comment
from paperclip.domain.issues.issues import ISSUE_LOCK
from paperclip.domain.runs.wakes import request_wake
from paperclip.models import Issue, WakeRequest, WakeStatus

pytestmark = pytest.mark.usefixtures("fixture_kind")


async def test_a_comment_and_a_claim_of_the_issue_wake_both_commit(
    paperclip_client, paperclip_container
):
    company = (await paperclip_client.post("/api/companies", json={"name": "Locks"})).json()
    cid = uuid.UUID(company["id"])
    agent = (
        await paperclip_client.post(
            f"/api/companies/{cid}/agents", json={"name": "a", "provider": "fixture"}
        )
    ).json()
    issue = (
        await paperclip_client.post(f"/api/companies/{cid}/issues", json={"title": "task"})
    ).json()
    issue_id, agent_id = uuid.UUID(issue["id"]), uuid.UUID(agent["id"])
    sessions = paperclip_container.sessions()
    async with sessions.begin() as session:
        (await session.get(Issue, issue_id)).assignee_agent_id = agent_id  # no wake of its own
        wake = await request_wake(
            session,
            LOCAL_OPERATOR,
            company_id=cid,
            agent_id=agent_id,
            issue_id=issue_id,
            source="assignment",
        )
    wake_id = wake.wake.id

    async with sessions.begin() as claim:
        # The claim holds the queued wake, as the scheduler's does.
        await claim.execute(select(WakeRequest).where(WakeRequest.id == wake_id).with_for_update())

        async def comment() -> None:
            async with sessions.begin() as session:
                await add_comment(session, LOCAL_OPERATOR, cid, issue_id, body="One more thing.")

        commenting = asyncio.create_task(comment())
        await asyncio.sleep(0.5)  # the comment is written; it waits for the wake
        assert not commenting.done()
        locked = await asyncio.wait_for(claim.get(Issue, issue_id, with_for_update=ISSUE_LOCK), 10)
        assert locked is not None
        (await claim.get(WakeRequest, wake_id)).status = WakeStatus.CLAIMED
    await asyncio.wait_for(commenting, 10)
    async with sessions() as session:
        queued = (
            (
                await session.execute(
                    select(WakeRequest).where(
                        WakeRequest.issue_id == issue_id, WakeRequest.status == WakeStatus.QUEUED
                    )
                )
            )
            .scalars()
            .all()
        )
    assert len(queued) == 1 and queued[0].id != wake_id  # the comment's own wake
