"""Acting where you look, in Chromium against real processes: a failed run's Retry starts one
run (a double click included); the title and the description edited on the page are what the
API returns; the rows' states are the API's, kept live. (The review of an issue's changes and
its merge: test_merge_browser.py, with a runner of its own that allows the repositories.)"""

from __future__ import annotations

import uuid

import pytest

from tests.board import daily
from tests.support.db import query
from tests.support.processes import wait_until

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins, pytest.mark.browser]

expect = pytest.importorskip("playwright.sync_api").expect

FINISH = {"call_tool": {"name": "finish", "arguments": {"outcome": "done", "summary": "Done"}}}


def retry_wakes(stack, task: dict) -> list[uuid.UUID]:
    rows = query(
        stack.database_url,
        "SELECT id FROM wake_requests WHERE issue_id = $1 AND source = 'retry'",
        uuid.UUID(task["id"]),
    )
    return [r["id"] for r in rows]


def test_a_failed_runs_retry_starts_exactly_one_run(shared_stack, page, screenshots):
    stack = shared_stack
    acme = daily.company(stack, "Retries", "RTY")
    coder = daily.agent(stack, acme["id"], [{"message": "Trying."}, {"fail": "the model is down"}])
    task = daily.issue(stack, acme["id"], "Upgrade the runtime", assignee_agent_id=coder["id"])
    failed = daily.ended_run(stack, acme["id"], task["id"])
    assert failed["status"] == "failed"
    daily.script(stack, coder, [FINISH])

    page.goto(stack.board(f"/#/c/{acme['id']}/issues/{task['identifier']}"))
    entry = page.locator(f"ol.thread li[data-run='{failed['id']}']")
    expect(entry.locator(".run-words")).to_contain_text(
        "The model's provider ended the turn with an error: the model is down."
    )
    entry.get_by_text("Details").click()
    expect(entry.locator("details.code code")).to_have_text("provider_turn_failed")
    retry = entry.get_by_role("button", name=f"Retry run {failed['id'][:8]}")
    retry.dblclick()
    expect(entry.locator(".retry-note")).to_contain_text("the agent will run again")

    ended = daily.ended_run(stack, acme["id"], task["id"], count=2)
    assert ended["status"] == "succeeded"
    # One more run, not two: the double click, and a retry sent again over the API, are one.
    with stack.api() as api:
        again = api.post(f"/companies/{acme['id']}/runs/{failed['id']}/retry")
        assert again.status_code == 200, again.text
    # One retry wake, the one the repeat answered: no wake is left to make a third run.
    assert [str(w) for w in retry_wakes(stack, task)] == [again.json()["wake_request_id"]]
    assert len(daily.runs(stack, acme["id"], task["id"])) == 2
    expect(page.locator("ol.thread li[data-run]")).to_have_count(2)
    expect(page.locator("#issue-status")).to_have_attribute("data-status", "done")


def test_the_rows_say_what_each_issue_does_as_the_api_does(shared_stack, page):
    stack = shared_stack
    acme = daily.company(stack, "States", "STA")
    reached, gate = stack.tmp / "sta-reached", stack.tmp / "sta-go"
    worker = daily.agent(
        stack,
        acme["id"],
        [{"touch_file": str(reached)}, {"wait_for_file": str(gate), "timeout": 120}, FINISH],
        name="worker",
    )
    broken = daily.agent(stack, acme["id"], [{"fail": "the model is down"}], name="broken")
    ask = {
        "call_tool": {
            "name": "request_human_input",
            "arguments": {"kind": "question", "title": "Which region?", "options": ["EU", "US"]},
        }
    }
    yielded = {"call_tool": {"name": "finish", "arguments": {"outcome": "yielded", "summary": "?"}}}
    asker = daily.agent(stack, acme["id"], [ask, yielded], name="asker")
    failing = daily.issue(stack, acme["id"], "Fails", assignee_agent_id=broken["id"])
    asking = daily.issue(stack, acme["id"], "Asks", assignee_agent_id=asker["id"])
    daily.ended_run(stack, acme["id"], failing["id"])
    daily.ended_run(stack, acme["id"], asking["id"])
    working = daily.issue(stack, acme["id"], "Works", assignee_agent_id=worker["id"])
    wait_until(reached.exists, 90, message="the fake at its gate")
    idle = daily.issue(stack, acme["id"], "Waits for nobody")

    page.goto(stack.board(f"/#/c/{acme['id']}"))
    listed = daily.get(stack, f"/companies/{acme['id']}/issues")["items"]
    states = {i["id"]: i["live"]["state"] for i in listed}
    assert states == {
        working["id"]: "running",
        failing["id"]: "failed",
        asking["id"]: "waiting",
        idle["id"]: "idle",
    }
    for issue_id, state in states.items():
        row = page.locator(f"tr[data-issue='{issue_id}']")
        expect(row).to_have_attribute("data-live", state)
    expect(page.locator(f"tr[data-issue='{working['id']}'] .live")).to_contain_text("Running for")
    expect(page.locator(f"tr[data-issue='{failing['id']}'] .live")).to_contain_text("Failed")
    expect(page.locator(f"tr[data-issue='{failing['id']}'] .live")).to_contain_text(
        "the model is down"
    )
    expect(page.locator(f"tr[data-issue='{asking['id']}'] .live")).to_contain_text(
        "Waiting on you: Which region?"
    )
    # The header counts what waits: the question and the failure.
    expect(page.locator("[data-inbox-count]")).to_have_text("2")

    # The running one ends: its row says so without a reload (its run's stream ended).
    gate.touch()
    expect(page.locator(f"tr[data-issue='{working['id']}']")).to_have_attribute(
        "data-live", "idle", timeout=60_000
    )
    page.get_by_role("link", name="Kanban view").click()
    card = page.locator(f".kanban-card[data-issue='{failing['id']}']")
    expect(card).to_have_attribute("data-live", "failed")
    expect(card).to_contain_text("the model is down")


def test_the_title_and_description_edited_on_the_page_are_the_apis(shared_stack, page):
    stack = shared_stack
    acme = daily.company(stack, "Editors", "EDT")
    task = daily.issue(stack, acme["id"], "Fix teh login", description="Old words.")
    page.goto(stack.board(f"/#/c/{acme['id']}/issues/{task['identifier']}"))
    expect(page.locator(".description")).to_have_text("Old words.")
    page.get_by_role("button", name="Edit title and description").click()
    form = page.get_by_role("form", name="Edit the issue")
    form.get_by_label("Title").fill("Fix the login")
    form.get_by_label("Description", exact=True).fill(
        "Users **cannot** sign in.\n\n- check `auth.py`\n\n<script>alert(1)</script>"
    )
    form.get_by_role("button", name="Preview").click()
    expect(form.locator(".md-preview strong")).to_have_text("cannot")
    form.get_by_role("button", name="Save changes").click()
    expect(page.get_by_role("heading", name="EDT-1 · Fix the login")).to_be_visible()
    expect(page.locator(".description strong")).to_have_text("cannot")
    expect(page.locator(".description code")).to_have_text("auth.py")
    expect(page.locator(".description script")).to_have_count(0)  # sanitised: no HTML injection
    stored = daily.get(stack, f"/companies/{acme['id']}/issues/{task['id']}")
    assert stored["title"] == "Fix the login"
    assert stored["description"].startswith("Users **cannot** sign in.")
    # The priority, from the details at the side.
    page.get_by_role("region", name="Details").get_by_label("Priority").select_option("urgent")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator("#issue-priority")).to_have_text("Urgent")
    assert daily.get(stack, f"/companies/{acme['id']}/issues/{task['id']}")["priority"] == "urgent"

    # A person's comment, edited in place (PATCH …/comments/{id}): the API has the new words.
    page.get_by_label("Comment", exact=True).fill("Look at `auth.py` first.")
    page.get_by_role("button", name="Post comment").click()
    posted = page.locator("ol.thread li[data-comment]")
    expect(posted.locator("code")).to_have_text("auth.py")
    posted.get_by_role("button", name="Edit comment").click()
    posted.get_by_label("Edit the comment").fill("Look at `session.py` first.")
    posted.get_by_role("button", name="Save comment").click()
    expect(posted.locator("code")).to_have_text("session.py")
    expect(posted).to_contain_text("edited")
    [comment] = daily.get(stack, f"/companies/{acme['id']}/issues/{task['id']}/comments")["items"]
    assert comment["body"] == "Look at `session.py` first." and comment["edited_at"]
