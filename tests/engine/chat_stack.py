"""Agent chat over the real API of a running stack: conversations, cards, replies."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from tests.support.db import query
from tests.support.processes import wait_until

CANDIDATES = """
SELECT r.id FROM runs r
WHERE r.status = 'succeeded' AND r.presentation IS NULL AND r.answer IS NOT NULL
"""
"""Runs the presentation recovery still has to decide (any age)."""


def held_turn(answer: str, outcome: str = "yielded", *, card: bool = False) -> dict:
    """A fake-Codex script: one chat turn that ends with ``answer`` and ``finish(outcome)``;
    with ``card``, it first asks the person through ``request_human_input``."""
    steps: list[dict] = []
    if card:
        steps.append(
            {
                "call_tool": {
                    "name": "request_human_input",
                    "arguments": {"kind": "question", "title": "Which team hires?"},
                }
            }
        )
    steps += [
        {"message": answer},
        {"call_tool": {"name": "finish", "arguments": {"outcome": outcome, "summary": "ok"}}},
    ]
    return {"turns": [steps]}


def base(ctx: dict) -> str:
    return f"/companies/{ctx['company']['id']}"


def link_interaction(stack, ctx: dict, kind: str, *then: str) -> dict:
    """An approval, stage or blocker on the task, then the actions ``then`` on it."""
    with stack.api() as api:
        r = api.post(
            f"{base(ctx)}/issues/{ctx['issue']['id']}/interactions",
            json={"kind": kind, "title": f"A {kind}"},
        )
        assert r.status_code == 201, r.text
        interaction = r.json()
        for action in then:
            r = api.post(
                f"{base(ctx)}/interactions/{interaction['id']}/actions", json={"action": action}
            )
            assert r.status_code == 200, r.text
            interaction = r.json()
    return interaction


def open_chat(stack, ctx: dict, index: int = 0) -> dict:
    with stack.api(index) as api:
        r = api.post(
            f"{base(ctx)}/conversations",
            json={"issue_id": ctx["issue"]["id"], "agent_id": ctx["agent"]["id"]},
        )
        assert r.status_code == 201, r.text
        ctx["conversation"] = r.json()
    return ctx["conversation"]


def say(stack, ctx: dict, body: str, index: int = 0) -> dict:
    with stack.api(index) as api:
        r = api.post(
            f"{base(ctx)}/conversations/{ctx['conversation']['id']}/messages", json={"body": body}
        )
        assert r.status_code == 202, r.text
        return r.json()


def messages(stack, ctx: dict, index: int = 0) -> list[dict]:
    items: list[dict] = []
    cursor = None
    with stack.api(index) as api:
        while True:
            params = {"limit": 2, **({"cursor": cursor} if cursor else {})}
            page = api.get(
                f"{base(ctx)}/conversations/{ctx['conversation']['id']}/messages", params=params
            ).json()
            items += page["items"]
            cursor = page.get("next_cursor")
            if not cursor:
                return items


def conversation(stack, ctx: dict, index: int = 0) -> dict:
    with stack.api(index) as api:
        return api.get(f"{base(ctx)}/conversations/{ctx['conversation']['id']}").json()


def interactions(stack, ctx: dict) -> list[dict]:
    with stack.api() as api:
        return api.get(f"{base(ctx)}/issues/{ctx['issue']['id']}/interactions").json()["items"]


def issue_status(stack, ctx: dict) -> str:
    with stack.api() as api:
        return api.get(f"{base(ctx)}/issues/{ctx['issue']['id']}").json()["status"]


def presented_run(stack, ctx: dict, timeout: float = 60) -> dict:
    return wait_until(
        lambda: next((r for r in stack.runs(ctx) if r["presentation"]), None),
        timeout,
        message="the presentation decision recorded",
    )


def candidates(stack, run_id: str) -> list[dict]:
    return [r for r in query(stack.database_url, CANDIDATES) if r["id"] == uuid.UUID(run_id)]


def replies(stack, ctx: dict, index: int = 0) -> list[str]:
    return [m["body"] for m in messages(stack, ctx, index) if m["role"] == "agent"]


def presentation_pass_after(stack, index: int, instant: datetime, timeout: float = 60) -> None:
    """Wait until replica ``index``'s presentation recovery completed a pass that began after
    ``instant`` (``GET /api/recovery``): what it would present by then, it has."""

    def passed() -> bool:
        with stack.api(index) as api:
            response = api.get("/recovery")
        started = response.json()["presentation"]["last_pass_started_at"]
        return started is not None and datetime.fromisoformat(started) > instant

    wait_until(passed, timeout, 0.1, f"a presentation recovery pass of replica {index}")


def past_the_grace(stack, run: dict) -> datetime:
    """When the live path's grace for ``run``'s answer is over (its end plus twice the lease):
    from then on, recovery may present it."""
    finished = datetime.fromisoformat(run["finished_at"])
    return finished + timedelta(seconds=2 * stack.lease_seconds)
