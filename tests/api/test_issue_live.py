"""Each issue of a list says what it is doing now (``live``), read in the list's own statement."""

from __future__ import annotations

import uuid

from sqlalchemy import event

from paperclip.models import Run
from tests.api.test_overview import add_runs, issue


async def test_each_issue_of_the_list_carries_its_live_state(
    paperclip_client, paperclip_container, company, agent
):
    cid = company["id"]
    base = f"/api/companies/{cid}"
    running = await issue(paperclip_client, cid, "Running")
    failed = await issue(paperclip_client, cid, "Failed")
    waiting = await issue(paperclip_client, cid, "Waiting")
    held = await issue(paperclip_client, cid, "Held")
    await issue(paperclip_client, cid, "Idle")
    succeeded = await issue(paperclip_client, cid, "Succeeded")
    parked = await issue(paperclip_client, cid, "Failed, then done")
    [_, run_now, run_failed, _, done_run, parked_run] = await add_runs(
        paperclip_container,
        cid,
        agent["id"],
        [
            (running["id"], "failed"),
            (running["id"], "running"),
            (failed["id"], "failed"),
            (waiting["id"], "failed"),
            (succeeded["id"], "succeeded"),
            (parked["id"], "failed"),
        ],
    )
    await paperclip_client.patch(f"{base}/issues/{parked['id']}", json={"status": "done"})
    r = await paperclip_client.post(
        f"{base}/issues/{waiting['id']}/interactions",
        json={"kind": "approval", "title": "Ship 2.0?"},
    )
    assert r.status_code == 201, r.text
    r = await paperclip_client.post(
        f"{base}/holds", json={"issue_id": held["id"], "reason": "Release freeze"}
    )
    assert r.status_code == 201, r.text

    r = await paperclip_client.get(f"{base}/issues")
    assert r.status_code == 200, r.text
    live = {i["title"]: i["live"] for i in r.json()["items"]}
    assert live["Running"]["state"] == "running"
    assert live["Running"]["run_id"] == run_now
    assert live["Running"]["reason"] == "The agent is working."
    assert live["Failed"] == {
        "state": "failed",
        "since": live["Failed"]["since"],
        "run_id": run_failed,
        "reason": "The model's provider ended the turn with an error.",
        "code": "provider_turn_failed",
    }
    # What waits on a person comes before the failure that made it wait.
    assert live["Waiting"]["state"] == "waiting"
    assert live["Waiting"]["reason"] == "Waiting for approval: Ship 2.0?"
    assert live["Waiting"]["code"] == "approval" and live["Waiting"]["since"]
    assert live["Held"]["state"] == "held"
    assert live["Held"]["reason"] == "Held: Release freeze."
    assert live["Held"]["code"] == "operator_hold"
    assert live["Idle"] == {
        "state": "idle",
        "since": None,
        "run_id": None,
        "reason": "No run yet.",
        "code": None,
    }
    assert live["Succeeded"]["state"] == "idle" and live["Succeeded"]["run_id"] == done_run
    assert live["Succeeded"]["reason"] == "The last run succeeded."
    assert live["Failed, then done"]["state"] == "idle"
    assert live["Failed, then done"]["run_id"] == parked_run

    # The single issue is as it was: no live state there.
    one = (await paperclip_client.get(f"{base}/issues/{failed['id']}")).json()
    assert "live" not in one

    # Dismissed, the failure is no longer the row's state.
    await paperclip_client.post(f"{base}/runs/{run_failed}/dismiss")
    r = await paperclip_client.get(f"{base}/issues", params={"q": "Failed", "status": "todo"})
    assert [i["live"]["state"] for i in r.json()["items"]] == ["idle"]


async def test_the_live_state_costs_the_list_no_query_per_issue(
    paperclip_client, paperclip_container, company, agent
):
    cid = company["id"]
    ids = [(await issue(paperclip_client, cid, f"Issue {n}"))["id"] for n in range(12)]
    await add_runs(paperclip_container, cid, agent["id"], [(i, "failed") for i in ids])
    engine = paperclip_container.engine()
    statements: list[str] = []

    def count(conn, cursor, statement, *args):
        statements.append(statement)

    event.listen(engine.sync_engine, "before_cursor_execute", count)
    try:
        r = await paperclip_client.get(f"/api/companies/{cid}/issues", params={"limit": 5})
    finally:
        event.remove(engine.sync_engine, "before_cursor_execute", count)
    assert r.status_code == 200
    assert [i["live"]["state"] for i in r.json()["items"]] == ["failed"] * 5
    runs = [s for s in statements if "FROM runs" in s]
    assert len(runs) == 1, statements  # one lateral join in the list's statement
    # The next page goes on where this one ended, with its live states.
    nxt = await paperclip_client.get(
        f"/api/companies/{cid}/issues", params={"limit": 5, "cursor": r.json()["next_cursor"]}
    )
    assert [i["title"] for i in nxt.json()["items"]] == [f"Issue {n}" for n in range(5, 10)]
    assert Run.__tablename__ == "runs" and uuid.UUID(nxt.json()["items"][0]["live"]["run_id"])
