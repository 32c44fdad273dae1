"""A run as people read it, and what waits on them, in Chromium against real processes.

The run page's transcript while the run works and after: streamed text merged
into one message, each tool call with its arguments, result and duration (the
journal filling in what the provider leaves out), a command with its exit code
and output, progress notes, the turn and how it ended; the raw events one
click away. A question card with options answered by a button, the hold it
made shown until then; the inbox and the dashboard. One server for the module.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.board import daily
from tests.support.processes import wait_until

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins, pytest.mark.browser]

expect = pytest.importorskip("playwright.sync_api").expect


@pytest.fixture
def stack(shared_stack):
    return shared_stack


def test_a_run_reads_as_a_transcript_while_it_works_and_after(stack, page, screenshots):
    acme = daily.company(stack, "Transcripts", "TRN")
    reached, gate = stack.tmp / "trn-reached", stack.tmp / "trn-go"
    script = [
        {"message": "Looking at the build now."},
        {"shell": {"command": "echo building; ls /nonexistent-folder"}},
        {"call_tool": {"name": "get_task_context", "arguments": {}}},
        {"call_tool": {"name": "report_progress", "arguments": {"summary": "Read the task"}}},
        {"touch_file": str(reached)},
        {"wait_for_file": str(gate), "timeout": 120},
        {"call_tool": {"name": "post_comment", "arguments": {}}},
        {"call_tool": {"name": "post_comment", "arguments": {"body": "Fixed the flaky test."}}},
        {"call_tool": {"name": "finish", "arguments": {"outcome": "done", "summary": "Fixed"}}},
        {"message": "All done: the build is green."},
    ]
    coder = daily.agent(stack, acme["id"], script)
    task = daily.issue(stack, acme["id"], "Fix the build", assignee_agent_id=coder["id"])
    wait_until(reached.exists, 90, message="the fake at its gate")
    [run] = daily.runs(stack, acme["id"], task["id"])

    page.goto(stack.board(f"/#/c/{acme['id']}/runs/{run['id']}"))
    log = page.get_by_role("list", name="Transcript")
    # One message, not a line per streamed word.
    message = log.locator("li[data-kind='message']")
    expect(message).to_have_count(1)
    expect(message.locator(".text")).to_have_text("Looking at the build now.")
    command = log.locator("li[data-kind='command']")
    expect(command).to_contain_text("echo building; ls /nonexistent-folder")
    expect(command).to_contain_text("exit 2")
    expect(command).to_have_attribute("data-status", "failed")
    command.get_by_text("Output").click()
    expect(command.locator("pre")).to_contain_text("No such file or directory")
    context = log.locator("li[data-tool='get_task_context']")
    expect(context).to_have_attribute("data-status", "completed")
    expect(context.locator(".facts")).to_contain_text(re.compile(r"Completed · [\d.]+ m?s"))
    context.get_by_text("Result").click()
    expect(context.locator("pre")).to_contain_text('"identifier": "TRN-1"')
    expect(log.locator("li[data-kind='progress']")).to_have_text("Progress Read the task")
    expect(log.locator("li[data-kind='turn']")).to_have_text("Turn 1 started")
    expect(page.locator(".stream-state")).to_have_attribute("data-state", "live")

    gate.touch()  # the rest arrives live, into the same page
    expect(log.locator("li[data-kind='finished']")).to_have_attribute(
        "data-status", "succeeded", timeout=90_000
    )
    refused = log.locator("li[data-tool='post_comment'][data-status='failed']")
    expect(refused.locator(".call-error")).to_contain_text("'body' is a required property")
    posted = log.locator("li[data-tool='post_comment'][data-status='completed']")
    posted.get_by_text("Arguments").click()
    expect(posted.locator("pre").first).to_contain_text('"body": "Fixed the flaky test."')
    expect(log.locator("li[data-kind='message'] .text").last).to_have_text(
        "All done: the build is green."
    )
    expect(log.locator("li[data-kind='turn']").last).to_have_text("Turn 1 ended: Completed")
    # The journal: every call of a Paperclip tool the control plane kept, refused ones excluded.
    journal = page.get_by_role("region", name="Tool calls")
    expect(journal.locator("tr[data-call]")).to_have_count(4)
    expect(journal.locator("tr[data-tool='finish']")).to_contain_text("Settled")
    log.evaluate("list => { list.scrollTop = 0; }")  # the picture shows the start
    screenshots(page, "run", full_page=True)
    # The technical details are words too: where the run is, which server looked after it.
    page.get_by_text("Technical details").click()
    tech = page.locator("dl.facts-tech")
    expect(tech).to_contain_text("Finished")
    expect(tech).to_contain_text("Looked after by")
    expect(tech).not_to_contain_text("epoch")

    # The raw log stays a click away, one line per stored event.
    stored = daily.get(stack, f"/companies/{acme['id']}/runs/{run['id']}/events", limit=1000)
    page.get_by_role("button", name="Raw events").click()
    raw = page.get_by_role("list", name="Run events")
    expect(raw).to_be_visible()
    expect(raw.locator("li")).to_have_count(len(stored["items"]))
    expect(raw.locator("li[data-type='item/agentMessage/delta']").first).to_be_visible()
    expect(raw.locator("li[data-type='progress']")).to_contain_text("Read the task")
    page.keyboard.press("r")  # the shortcut goes back
    expect(log).to_be_visible()

    # The issue page follows the same run, newest first, in the same words.
    page.get_by_role("link", name="TRN-1 · Fix the build").click()
    expect(page.locator(".live-run li[data-kind='finished']")).to_have_count(1)
    expect(page.locator(".live-run li[data-kind='message'] .text").first).to_have_text(
        "Looking at the build now."
    )


def test_a_card_with_options_is_answered_with_a_button_and_held_the_task_until_then(
    stack, page, screenshots
):
    acme = daily.company(stack, "Cards", "CRD")
    ask = {
        "call_tool": {
            "name": "request_human_input",
            "arguments": {
                "kind": "question",
                "title": "Which team hires?",
                "body": "The designer can join the web or the mobile team.",
                "options": ["Web", "Mobile"],
            },
        }
    }
    then = [
        {"message": "Noted."},
        {"call_tool": {"name": "finish", "arguments": {"outcome": "done", "summary": "ok"}}},
    ]
    yielded = {
        "call_tool": {"name": "finish", "arguments": {"outcome": "yielded", "summary": "asked"}}
    }
    coder = daily.agent(stack, acme["id"], [ask, yielded])
    task = daily.issue(stack, acme["id"], "Hire a designer", assignee_agent_id=coder["id"])
    daily.ended_run(stack, acme["id"], task["id"])
    daily.script(stack, coder, then)  # what the agent does once answered

    page.goto(stack.board(f"/#/c/{acme['id']}/issues/{task['identifier']}"))
    cards = page.get_by_role("region", name="Questions and approvals")
    card = cards.locator("li[data-status='pending']")
    expect(card).to_contain_text("Which team hires?")
    expect(card.locator(".body")).to_have_text("The designer can join the web or the mobile team.")
    expect(card.get_by_role("button")).to_have_count(2)
    expect(card.get_by_role("textbox")).to_have_count(0)  # options offered: no free text
    holds = page.get_by_role("region", name="Holds")
    expect(holds.locator("li[data-holding-interaction]")).to_contain_text("Which team hires?")
    expect(holds.locator("li[data-holding-interaction]")).to_contain_text(
        "holds the task until answered"
    )
    expect(page.locator("#issue-status")).to_have_attribute("data-status", "in_progress")
    expect(page.locator("#issue-status")).to_have_text("In progress")  # as people read it
    screenshots(page, "issue-card", full_page=True)

    card.get_by_role("button", name="Web (answer to Which team hires?)").click()
    answered = cards.locator("li[data-status='answered']")
    expect(answered.locator(".outcome")).to_contain_text("Answered by a person: Web")
    expect(holds.locator("li[data-holding-interaction]")).to_have_count(0)
    expect(holds).to_contain_text("Nothing holds this task")
    # The answer woke the agent: its second run, listed first.
    daily.ended_run(stack, acme["id"], task["id"], count=2)
    expect(page.locator("ol.thread li[data-run]")).to_have_count(2)
    newest = daily.runs(stack, acme["id"], task["id"])[0]
    expect(page.locator("ol.thread li[data-run]").last).to_have_attribute("data-run", newest["id"])
    [stored] = daily.get(stack, f"/companies/{acme['id']}/issues/{task['id']}/interactions")[
        "items"
    ]
    assert stored["response"] == {"action": "answer", "answer": "Web"}


def test_the_inbox_and_the_dashboard_show_what_waits_and_what_failed(stack, page, screenshots):
    acme = daily.company(stack, "Northwind", "INB")
    broken = daily.agent(
        stack, acme["id"], [{"message": "Trying."}, {"fail": "the model is down"}], name="broken"
    )
    failed = daily.issue(stack, acme["id"], "Upgrade the runtime", assignee_agent_id=broken["id"])
    run = daily.ended_run(stack, acme["id"], failed["id"])
    assert run["status"] == "failed"
    approval_issue = daily.issue(stack, acme["id"], "Ship the release")
    held_issue = daily.issue(stack, acme["id"], "Wait for the freeze")
    with stack.api() as api:
        base = f"/companies/{acme['id']}"
        api.post(
            f"{base}/issues/{approval_issue['id']}/interactions",
            json={"kind": "approval", "title": "Ship 2.0?", "body": "All checks are green."},
        )
        api.post(f"{base}/holds", json={"issue_id": held_issue["id"], "reason": "Release freeze"})

    page.goto(stack.board(f"/#/c/{acme['id']}"))
    page.get_by_role("link", name="Inbox", exact=True).click()
    expect(page.get_by_role("heading", name="Inbox", exact=True)).to_be_visible()
    expect(page.locator("[data-total]")).to_have_text("3 things wait on a person.")
    approvals = page.get_by_role("region", name="Questions and approvals")
    expect(approvals.locator("li[data-kind='approval']")).to_contain_text("Ship 2.0?")
    expect(approvals.locator("li[data-kind='approval']")).to_contain_text("All checks are green.")
    expect(page.get_by_role("region", name="Holds")).to_contain_text("Release freeze")
    failures = page.get_by_role("region", name="Failed runs")
    expect(failures.locator(f"li[data-run='{run['id']}']")).to_contain_text(
        "INB-1 · Upgrade the runtime"
    )
    screenshots(page, "inbox", full_page=True)

    # Decided from the inbox: it leaves it.
    approvals.get_by_label("Note on Ship 2.0?").fill("Go ahead.")
    approvals.get_by_role("button", name="Approve: Ship 2.0?").click()
    expect(page.locator("[data-total]")).to_have_text("2 things wait on a person.")
    [decided] = daily.get(stack, f"{base}/issues/{approval_issue['id']}/interactions")["items"]
    assert decided["status"] == "approved" and decided["response"]["note"] == "Go ahead."

    page.get_by_role("link", name="Dashboard", exact=True).click()
    expect(page.get_by_role("heading", name="Dashboard")).to_be_visible()
    recent = page.get_by_role("region", name="Recent failures")
    expect(recent.locator(f"tr[data-run='{run['id']}']")).to_contain_text("the model is down")
    loads = page.get_by_role("region", name="Load per agent")
    expect(loads.locator(f"tr[data-agent='{broken['id']}']")).to_contain_text("broken")
    expect(loads.locator(f"tr[data-agent='{broken['id']}'] td").nth(5)).to_have_text("1")
    counts = page.get_by_role("list", name="Issues by status")
    expect(counts.locator("li[data-status='todo']")).to_contain_text("3")
    screenshots(page, "dashboard", full_page=True)
    # A count leads to the list it counts.
    counts.locator("li[data-status='todo'] a").click()
    expect(page.locator("tr[data-issue]")).to_have_count(3)
    expect(page.get_by_role("group", name="Filters").get_by_label("Status")).to_have_value("todo")


DATA = Path(__file__).parent / "data"
# What each provider's fake emitted for the same script (a message, a command where the
# provider has a shell, get_task_context, report_progress, post_comment refused for its
# arguments, then accepted, finish, a last message), as the run's log stored it, with the
# run's tool journal. The fakes are kept honest by the conformance tests against real CLIs.
READ = """async ({ events, calls }) => {
  const { transcript } = await import("/board/js/transcript.js");
  const node = transcript("recorded");
  document.getElementById("view").replaceChildren(node);
  for (const event of events) node.add(event);
  node.journal(calls);
  return [...node.querySelectorAll("ol.transcript > li")].map((li) => ({
    kind: li.dataset.kind, tool: li.dataset.tool || null, status: li.dataset.status || null,
    journaled: "journaled" in li.dataset, text: li.textContent,
    args: li.querySelector("details pre")?.textContent || null,
  }));
}"""


@pytest.mark.parametrize("provider", ["codex", "opencode", "pi", "gateway"])
def test_each_providers_log_reads_as_the_same_transcript(stack, page, provider):
    recorded = json.loads((DATA / f"transcript-{provider}.json").read_text())
    page.goto(stack.board("/#/"))
    entries = page.evaluate(READ, recorded)
    kinds = [e["kind"] for e in entries]
    messages = [e["text"] for e in entries if e["kind"] == "message"]
    assert messages == ["AgentLooking at the build now.", "AgentAll done."], entries
    tools = [(e["tool"], e["status"]) for e in entries if e["kind"] == "tool"]
    assert tools == [
        ("get_task_context", "completed"),
        ("report_progress", "completed"),
        ("post_comment", "failed"),
        ("post_comment", "completed"),
        ("finish", "completed"),
    ], entries
    if provider != "gateway":  # its fake has no shell; Codex's command also lists a missing folder
        [command] = [e for e in entries if e["kind"] == "command"]
        assert "echo hi" in command["text"]
        assert command["status"] == ("failed" if provider == "codex" else "completed")
    assert [e["text"] for e in entries if e["kind"] == "progress"] == ["Progress Read the task"]
    assert kinds.count("turn") == 2 and entries[-1]["kind"] == "finished"
    assert entries[-1]["text"] == "Run finished: Succeeded"
    # The journal fills in what a provider leaves out: the gateway reports no arguments.
    [posted] = [e for e in entries if e["tool"] == "post_comment" and e["status"] == "completed"]
    assert posted["journaled"] and '"body": "Looking at it."' in posted["args"]
    [refused] = [e for e in entries if e["tool"] == "post_comment" and e["status"] == "failed"]
    assert not refused["journaled"]  # refused before the journal: no row of another call taken
    assert not [e for e in entries if e["kind"] == "other"], entries  # every type understood


def test_a_providers_protocol_is_told_in_words(stack, page):
    """A request for approval and an event no reader knows: words, never the protocol's names
    (those stay in the raw events)."""
    ask = {
        "command": "/bin/bash -lc \"git commit -qm 'Greet visitors by name'\"",
        "commandActions": [
            {"type": "unknown", "command": "git commit -qm 'Greet visitors by name'"}
        ],
        "reason": "The command needs to leave the sandbox.",
        "itemId": "call_1",
    }
    events = [
        {"seq": 1, "turn": 1, "type": "turn/started", "payload": {"turn": {"id": "t1"}}},
        {"seq": 2, "turn": 1, "type": "item/commandExecution/requestApproval", "payload": ask},
        {"seq": 3, "turn": 1, "type": "serverRequest/resolved", "payload": {"requestId": 0}},
        {"seq": 4, "turn": 1, "type": "item/fileChange/requestApproval", "payload": {}},
        {"seq": 5, "turn": 1, "type": "item/someNewThing/happened", "payload": {}},
        {
            "seq": 6,
            "turn": 1,
            "type": "run.finished",
            "payload": {"status": "failed", "error_code": "turn_timeout"},
        },
    ]
    page.goto(stack.board("/#/"))
    entries = page.evaluate(READ, {"events": events, "calls": []})
    texts = [e["text"] for e in entries]
    assert texts == [
        "Turn 1 started",
        "Approval Asked to run a command outside its sandbox: git commit -qm 'Greet visitors"
        " by name' · The command needs to leave the sandbox.",
        "Approval Asked to change files outside its sandbox",
        "Provider event",
        "Run finished: Failed · Turn timeout",
    ], texts
    assert not any("item/" in t or "requestApproval" in t or "_" in t for t in texts), texts
    page.get_by_role("button", name="Raw events").click()
    expect(page.get_by_role("list", name="Run events").locator("li")).to_have_count(6)
    expect(page.locator("li[data-type='item/commandExecution/requestApproval']")).to_have_count(1)
