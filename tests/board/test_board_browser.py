"""The board in headless Chromium against a real ``paperclip serve``, its runner and the fake Codex.

A person's paths, clicked and typed: make a company, an agent and an issue,
assign it, watch the run's events arrive while it runs and the issue turn
done; hold a task and resolve the hold; and a SIGKILL of the control plane
while a run's events stream, after which the page resumes without a gap or a
duplicate. The tests take the screenshots docs/board.md shows.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.board.conftest import PHONE
from tests.support.db import query
from tests.support.processes import lines_with, wait_until

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins, pytest.mark.browser]

# Imported here only where the browser extra is installed (tox board); elsewhere the
# module is deselected by its marker, and must still import.
expect = pytest.importorskip("playwright.sync_api").expect


def gated_script(stack, name: str) -> tuple[dict, object, object]:
    """One turn that speaks, writes a comment, then waits at a gate before it finishes."""
    reached, gate = stack.tmp / f"{name}-reached", stack.tmp / f"{name}-go"
    script = {
        "turns": [
            [
                {"message": "Looking at the build."},
                {"call_tool": {"name": "post_comment", "arguments": {"body": "On it."}}},
                {"touch_file": str(reached)},
                {"wait_for_file": str(gate), "timeout": 180},
                {"call_tool": {"name": "get_task_context", "arguments": {}}},
                {"message": "I fixed the build."},
                {
                    "call_tool": {
                        "name": "finish",
                        "arguments": {"outcome": "done", "summary": "Fixed the build"},
                    }
                },
            ]
        ]
    }
    return script, reached, gate


def shown_seqs(page) -> list[int]:
    return page.locator("ol.events li").evaluate_all("els => els.map(e => Number(e.dataset.seq))")


def test_assign_an_issue_and_watch_its_run_live_until_done(stack, page, screenshots):
    stack.start_server(local_runner=True)
    script, reached, gate = gated_script(stack, "live")
    stack.script_dir.mkdir(parents=True, exist_ok=True)
    (stack.script_dir / "board-live.json").write_text(json.dumps(script))
    page.goto(stack.board("/"))

    page.get_by_role("button", name="New company").click()
    page.get_by_label("Name", exact=True).fill("Acme")
    page.get_by_role("button", name="Create company").click()
    expect(page.get_by_role("heading", name="Issues")).to_be_visible()

    page.get_by_role("link", name="Agents").click()
    page.get_by_role("button", name="New agent").click()
    page.get_by_label("Name", exact=True).fill("coder")
    page.get_by_label("Provider", exact=True).select_option("codex")
    page.get_by_label("Launch").fill("fake")  # the codex schema's fields (test_agents_browser)
    page.get_by_label("Model", exact=True).fill("board-live")
    page.get_by_role("button", name="Create agent").click()
    expect(page.locator("tr[data-agent]")).to_have_count(1)
    expect(page.locator("tr[data-agent]")).to_contain_text("fake")
    expect(page.locator("tr[data-agent] .capabilities")).to_contain_text("steer")

    page.get_by_role("link", name="Acme: issues").click()
    page.get_by_role("button", name="New issue").click()
    page.get_by_label("Title").fill("Fix the build")
    page.get_by_label("Description").fill("The build is red.")
    page.get_by_role("button", name="Create issue").click()
    expect(page.locator("#issue-status")).to_have_attribute("data-status", "todo")

    page.get_by_label("Assignee").select_option(label="coder (codex)")
    page.get_by_role("button", name="Save").click()

    # The run's events appear while it runs: it is held at its gate, not finished.
    wait_until(reached.exists, 90, message="the fake at its gate")
    events = page.locator("ol.events")  # the raw log, behind the transcript
    transcript = page.get_by_role("list", name="Transcript")
    expect(transcript.locator("li[data-kind='message'] .text").first).to_have_text(
        "Looking at the build."
    )
    expect(page.locator(".stream-state")).to_have_attribute("data-state", "live")
    expect(events.locator("li[data-type='run.finished']")).to_have_count(0)
    expect(page.locator("#issue-status")).to_have_attribute("data-status", "in_progress")
    expect(page.locator("ol.thread")).to_contain_text("On it.")
    before = len(shown_seqs(page))
    screenshots(page, "issue-live", full_page=True)

    gate.touch()
    expect(events.locator("li[data-type='run.finished']")).to_have_count(1, timeout=90_000)
    expect(page.locator("#issue-status")).to_have_attribute("data-status", "done", timeout=30_000)
    expect(page.locator("ol.thread")).to_contain_text("I fixed the build.")
    expect(page.get_by_label("Status")).to_have_value("done")  # the form follows the issue

    company_id = page.evaluate("location.hash").split("/")[2]
    with stack.api() as api:
        [run] = api.get(f"/companies/{company_id}/runs").json()["items"]
        stored = api.get(f"/companies/{company_id}/runs/{run['id']}/events?limit=1000").json()
    stored_seqs = [e["seq"] for e in stored["items"]]
    # Everything the log holds was shown, once, in order, and more came after the gate.
    assert shown_seqs(page) == stored_seqs == list(range(1, len(stored_seqs) + 1))
    assert len(stored_seqs) > before > 0
    assert events.get_attribute("data-anomalies") == "0"
    screenshots(page, "issue-done", full_page=True)

    page.locator("ol.thread li[data-run] a").first.click()
    expect(page.locator("dl.facts")).to_have_attribute("data-status", "succeeded")
    expect(page.locator("tr[data-turn]")).to_have_count(1)
    expect(page.locator("#steer-text")).to_be_disabled()
    expect(page.locator("#steer-reason")).to_have_text("No turn is running.")
    expect(page.locator(".stream-state")).to_have_attribute("data-state", "ended")
    assert shown_seqs(page) == stored_seqs

    page.get_by_role("link", name="Acme: issues").click()
    expect(page.locator("tr[data-issue]")).to_have_count(1)
    page.get_by_label("Status").select_option("in_progress")
    expect(page.locator("tr[data-issue]")).to_have_count(0)
    page.get_by_label("Status").select_option("done")
    expect(page.locator("tr[data-issue]")).to_have_count(1)

    page.get_by_role("link", name="Plugins").click()
    expect(page.locator("tr[data-plugin='codex']")).to_contain_text("Loaded")
    screenshots(page, "plugins")
    page.get_by_role("link", name="Recovery").click()
    expect(page.locator("tr[data-policy]").first).to_be_visible()
    screenshots(page, "recovery")

    # A phone-sized viewport: the issue page reflows to one column, nothing wider than it.
    page.set_viewport_size(PHONE)
    page.goto(stack.board(f"/#/c/{company_id}/issues/{run['issue_id']}"))
    expect(page.locator("#issue-status")).to_have_attribute("data-status", "done")
    expect(page.locator(".stream-state")).to_have_attribute("data-state", "ended")
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    screenshots(page, "issue-phone", full_page=True)


def test_hold_a_task_and_resolve_the_hold_from_the_keyboard(stack, page, screenshots):
    stack.start_server()
    with stack.api() as api:
        company = api.post("/companies", json={"name": "Holdco"}).json()
        issue = api.post(
            f"/companies/{company['id']}/issues", json={"title": "Wait for the freeze"}
        ).json()
    page.goto(stack.board(f"/#/c/{company['id']}/issues/{issue['id']}"))

    page.get_by_label("Reason to hold").fill("The release branch is frozen")
    page.get_by_label("Reason to hold").press("Enter")  # submits the form
    hold = page.locator("ul.holds li[data-hold]")
    expect(hold).to_have_attribute("data-status", "active")
    expect(hold).to_contain_text("The release branch is frozen")
    screenshots(page, "hold")

    resolve = page.get_by_role("button", name="Resolve hold: The release branch is frozen")
    resolve.focus()
    page.keyboard.press("Enter")
    expect(hold).to_have_attribute("data-status", "resolved")
    expect(hold).to_contain_text("released by operator")
    with stack.api() as api:
        [stored] = api.get(
            f"/companies/{company['id']}/holds", params={"issue_id": issue["id"]}
        ).json()["items"]
    assert (stored["status"], stored["resolution"], stored["resolved_by"]) == (
        "resolved",
        "released",
        "operator",
    )

    # A comment from the form is sent with a key of its own: a retry cannot post it twice.
    page.get_by_label("Comment", exact=True).fill("The freeze ends on Friday.")
    page.get_by_role("button", name="Post comment").click()
    expect(page.locator("ol.thread li[data-comment]")).to_have_count(1)
    expect(page.locator("ol.thread")).to_contain_text("The freeze ends on Friday.")
    sql = "SELECT idempotency_key FROM comments WHERE issue_id = $1"
    with ThreadPoolExecutor(1) as pool:  # Playwright's loop runs in this thread
        [keyed] = pool.submit(query, stack.database_url, sql, uuid.UUID(issue["id"])).result()
    assert keyed["idempotency_key"]


def test_sigkill_of_the_control_plane_during_a_live_view_loses_and_repeats_nothing(stack, page):
    stack.start_server()
    stack.start_runner()
    script, reached, gate = gated_script(stack, "restart")
    ctx = stack.setup_issue(script)
    stack.assign(ctx)
    wait_until(reached.exists, 90, message="the fake at its gate")
    [run] = stack.runs(ctx)
    page.goto(stack.board(f"/#/c/{ctx['company']['id']}/runs/{run['id']}"))
    state = page.locator(".stream-state")
    expect(state).to_have_attribute("data-state", "live")
    wait_until(lambda: len(shown_seqs(page)) == len(stack.events(ctx, run["id"])), 30)
    before = shown_seqs(page)
    # The turn runs and Codex steers: a comment on the issue, steered into the turn.
    expect(page.locator("#steer-reason")).to_have_text("Goes into the running turn.")
    page.get_by_label("Message to the running turn").fill("Also run the linter.")
    page.get_by_role("button", name="Steer", exact=True).click()
    expect(page.locator("#steer-reason")).to_have_text("Steered into turn 1.")
    expect(page.get_by_label("Message to the running turn")).to_have_value("")
    with stack.api() as api:
        comments = api.get(
            f"/companies/{ctx['company']['id']}/issues/{ctx['issue']['id']}/comments"
        ).json()["items"]
    [steered] = [c for c in comments if c["body"] == "Also run the linter."]
    assert steered["author_agent_id"] is None
    wait_until(
        lambda: any(e["type"] == "steering_acknowledgement" for e in stack.events(ctx, run["id"])),
        30,
        message="the provider acknowledged the steer",
    )
    wait_until(lambda: len(shown_seqs(page)) == len(stack.events(ctx, run["id"])), 30)
    before = shown_seqs(page)

    retries = lines_with(stack.runner.log_path, "; retrying")
    stack.servers[0].kill()
    expect(state).to_have_attribute("data-state", "reconnecting")
    gate.touch()  # the turn goes on while no control plane answers; the runner keeps it
    wait_until(
        lambda: lines_with(stack.runner.log_path, "; retrying") > retries,
        30,
        message="the runner going on without a control plane",
    )
    stack.start_server()  # the same port: the page's origin

    events = page.locator("ol.events")
    expect(events.locator("li[data-type='run.finished']")).to_have_count(1, timeout=120_000)
    stored = [e["seq"] for e in stack.events(ctx, run["id"])]
    shown = shown_seqs(page)
    assert shown == stored == list(range(1, len(stored) + 1))
    assert shown[: len(before)] == before and len(shown) > len(before)
    assert events.get_attribute("data-anomalies") == "0"
    expect(page.locator("dl.facts")).to_have_attribute("data-status", "succeeded")


def make_key(stack, name: str, *extra: str) -> str:
    out = subprocess.run(
        [sys.executable, "-m", "paperclip", "keys", "create", name, *extra, "--json"],
        env={**os.environ, **stack.server_env(0)},
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)["key"]


def test_with_login_the_page_asks_for_a_key_and_a_viewer_may_only_look(stack, page):
    stack.extra_env["PAPERCLIP_DEPLOYMENT_MODE"] = "authenticated"
    stack.start_server()
    admin = {"Authorization": f"Bearer {make_key(stack, 'operator')}"}
    with stack.api() as api:
        company = api.post("/companies", json={"name": "Keyed"}, headers=admin).json()
        api.post(f"/companies/{company['id']}/issues", json={"title": "Seen"}, headers=admin)
    viewer = make_key(stack, "watcher", "--company", company["id"], "--role", "viewer")

    page.goto(stack.board("/"))
    page.get_by_label("API key").fill(viewer)
    page.get_by_role("button", name="Use this key").click()
    page.get_by_role("link", name="Keyed").click()
    expect(page.locator("tr[data-issue]")).to_contain_text("Seen")
    # The key's role decides, as for any client: a viewer's write is refused, and said so.
    page.get_by_role("button", name="New issue").click()
    page.get_by_label("Title").fill("Not allowed")
    page.get_by_role("button", name="Create issue").click()
    expect(page.get_by_role("alert")).to_contain_text("insufficient_role")
    # The key lives in this tab only: a new tab asks again.
    other = page.context.new_page()
    other.goto(stack.board("/"))
    expect(other.get_by_label("API key")).to_be_visible()
