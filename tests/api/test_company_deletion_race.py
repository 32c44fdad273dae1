"""Deleting a company while its agents and issues are written never deadlocks into a 500.

A writer locked an agent or an issue, then wrote its activity entry (whose
foreign key takes a lock on the company); the deletion held the company and
waited for that agent or issue: PostgreSQL ended one of them (``deadlock
detected``) and the request answered 500 (10 of 285 in the trust review).
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import logging
import uuid

import pytest
from sqlalchemy import text

pytestmark = pytest.mark.usefixtures("fixture_kind")

WRITERS = 12
ROUNDS = 4
WRITES_BEFORE_DELETE = 48

COMPANY_TABLES = ("agents", "issues", "comments", "wake_requests", "activity_log", "runs")


async def test_writers_meet_the_deletion_with_answers_never_a_500(
    paperclip_client, paperclip_container, caplog
):
    caplog.set_level(logging.WARNING)
    statuses: collections.Counter[int] = collections.Counter()
    for round_ in range(ROUNDS):
        company_id, writes, deletion = await delete_while_writing(paperclip_client, round_)
        statuses.update(writes)
        assert deletion == 204, statuses
        async with paperclip_container.sessions()() as session:
            for table in COMPANY_TABLES:
                left = await session.scalar(
                    text(f"SELECT count(*) FROM {table} WHERE company_id = :c"), {"c": company_id}
                )
                assert left == 0, table
    assert {s for s in statuses if s >= 500} == set(), statuses
    assert statuses[404] >= ROUNDS  # writers saw the company go
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == []


async def delete_while_writing(client, round_: int) -> tuple[uuid.UUID, list[int], int]:
    """A company written by ``WRITERS`` loops and deleted once they are under way:
    its id, the writes' statuses and the deletion's."""
    company = (await client.post("/api/companies", json={"name": f"Doomed {round_}"})).json()
    base = f"/api/companies/{company['id']}"
    agents = [
        (await client.post(f"{base}/agents", json={"name": f"a{i}", "provider": "fixture"})).json()[
            "id"
        ]
        for i in range(4)
    ]
    issues = [
        (
            await client.post(
                f"{base}/issues", json={"title": f"t{i}", "assignee_agent_id": agents[i % 4]}
            )
        ).json()["id"]
        for i in range(8)
    ]
    names, writes = itertools.count(), itertools.count(1)
    started, deleted = asyncio.Event(), asyncio.Event()

    async def write(i: int):
        agent, issue = agents[i % len(agents)], issues[i % len(issues)]
        match i % 6:
            case 0:
                return await client.patch(f"{base}/agents/{agent}", json={"role": f"r{i}"})
            case 1:
                return await client.patch(f"{base}/issues/{issue}", json={"title": f"x{i}"})
            case 2:
                return await client.post(f"{base}/issues/{issue}/comments", json={"body": f"c{i}"})
            case 3:
                return await client.post(
                    f"{base}/issues", json={"title": f"n{i}", "assignee_agent_id": agent}
                )
            case 4:
                return await client.post(f"{base}/agents/{agent}/wakeup", json={})
            case _:
                return await client.post(
                    f"{base}/agents", json={"name": f"b{next(names)}", "provider": "fixture"}
                )

    async def writer(first: int) -> list[int]:
        answers = []
        for i in itertools.count(first, WRITERS):
            answer = await write(i)
            answers.append(answer.status_code)
            if next(writes) >= WRITES_BEFORE_DELETE:
                started.set()
            if answer.status_code == 404 or deleted.is_set():  # the company is gone
                return answers
        raise AssertionError("unreachable")

    async def delete() -> int:
        await started.wait()  # the writers are under way
        try:
            return (await client.delete(base)).status_code
        finally:
            deleted.set()

    *answers, deletion = await asyncio.wait_for(
        asyncio.gather(*(writer(i) for i in range(WRITERS)), delete()), 120
    )
    return uuid.UUID(company["id"]), list(itertools.chain.from_iterable(answers)), deletion
