"""A day's board, as a person uses it: a company with four agents, thirteen issues in every
status, runs that succeeded, failed, asked a question and still run, a budget, a routine, an
approval and a change under review. Each main page is taken at 1400 px and at 390 px
(``daily-*.png``, the pictures of docs/board.md), and what they show is checked: each row's
state is the API's, nothing is wider than a phone, a question waiting on you is the first
thing of its issue's page with its answers in the first screen, the phone's header folds into
a menu."""

from __future__ import annotations

import pytest

from tests.board import daily
from tests.board.conftest import PHONE
from tests.support.git_repos import make_repo
from tests.support.processes import wait_until

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins, pytest.mark.browser]

expect = pytest.importorskip("playwright.sync_api").expect

WIDE = {"width": 1400, "height": 900}
FINISH = {"call_tool": {"name": "finish", "arguments": {"outcome": "done", "summary": "Done"}}}
REVIEW = {
    "call_tool": {
        "name": "finish",
        "arguments": {"outcome": "needs_review", "summary": "Visitors are greeted by name"},
    }
}
GREET = (
    "printf '# Robot app\\n\\nThe robot greets each visitor by name.\\n' > README.md"
    " && printf \"def greet(name: str) -> str:\\n    return f'Hello, {name}!'\\n\" > greet.py"
    " && git add -A && git commit -qm 'Greet visitors by name'"
)
ASK = {
    "call_tool": {
        "name": "request_human_input",
        "arguments": {
            "kind": "question",
            "title": "Which charging dock?",
            "body": "Two docks fit the **Mark II** base.",
            "options": ["Dock A (cheaper)", "Dock B (faster)"],
        },
    }
}
YIELD = {"call_tool": {"name": "finish", "arguments": {"outcome": "yielded", "summary": "Asked"}}}
MORE = [
    ("Write the onboarding guide", {"status": "backlog", "priority": "low"}),
    ("Order spare grippers", {"status": "todo", "priority": "medium"}),
    ("Tune the path planner", {"status": "in_progress", "priority": "high"}),
    ("Review the safety checklist", {"status": "in_review", "priority": "urgent"}),
    ("Replace the lidar", {"status": "blocked", "priority": "high"}),
    ("Ship firmware 1.4", {"status": "done", "priority": "medium"}),
    ("Try the old vision model", {"status": "cancelled", "priority": "low"}),
    ("Plan the demo day", {"status": "todo", "priority": "medium"}),
    ("Release 2.0 to the fleet", {"status": "todo", "priority": "urgent"}),
]


def test_a_days_board_at_1400_and_390_px(stack, page, screenshots):
    repos = stack.tmp / "repos"
    make_repo(repos / "robot", {"README.md": "# Robot app\n", "greet.py": "print('hi')\n"})
    stack.extra_env["PAPERCLIP_RUNNER_WORKSPACE_ROOTS"] = str(repos)
    stack.start_server(local_runner=True)

    def connected():
        with stack.api() as api:
            return api.get("/health").json()["runners"]["connected_here"] == 1

    wait_until(connected, 60, message="the local runner connected")
    acme = daily.company(stack, "Acme Robotics", "ACME")
    cid = acme["id"]
    reached, gate = stack.tmp / "tour-reached", stack.tmp / "tour-go"
    commit = {"shell": {"command": GREET, "escalate": True}}
    builder = daily.agent(
        stack,
        cid,
        {"turns": [[commit, REVIEW]]},
        name="builder",
        approval_policy="on-request",
        approvals="approve",
    )
    worker = daily.agent(
        stack,
        cid,
        [
            {"message": "Reading the sensor logs."},
            {"shell": {"command": "echo calibrating; sleep 0.2; echo ok"}},
            {"call_tool": {"name": "report_progress", "arguments": {"summary": "Logs read"}}},
            {"touch_file": str(reached)},
            {"wait_for_file": str(gate), "timeout": 300},
            FINISH,
        ],
        name="calibrator",
    )
    asker = daily.agent(stack, cid, [ASK, YIELD], name="planner")
    broken = daily.agent(
        stack,
        cid,
        [{"message": "Running the arm tests."}, {"fail": "the model's rate limit was reached"}],
        name="tester",
    )
    with stack.api() as api:
        project = api.post(
            f"/companies/{cid}/projects",
            json={"name": "Robot app", "repo_path": str(repos / "robot"), "default_branch": "main"},
        ).json()
    review = daily.issue(
        stack,
        cid,
        "Greet visitors by name",
        project_id=project["id"],
        assignee_agent_id=builder["id"],
        priority="high",
        description="Visitors should hear their **own name**.\n\n- read it from the badge\n- fall back to *friend*",
    )
    failing = daily.issue(stack, cid, "Fix the flaky arm test", assignee_agent_id=broken["id"])
    asking = daily.issue(stack, cid, "Choose a charging dock", assignee_agent_id=asker["id"])
    for made in (review, failing, asking):
        daily.ended_run(stack, cid, made["id"])
    running = daily.issue(
        stack, cid, "Calibrate the sensors", assignee_agent_id=worker["id"], priority="urgent"
    )
    wait_until(reached.exists, 90, message="the calibrator at work")
    extra = {title: daily.issue(stack, cid, title, **fields) for title, fields in MORE}
    with stack.api() as api:
        base = f"/companies/{cid}"
        api.post(
            f"{base}/issues/{extra['Release 2.0 to the fleet']['id']}/interactions",
            json={
                "kind": "approval",
                "title": "Roll out 2.0 to all robots?",
                "body": "The canary fleet ran it for a week.",
            },
        )
        api.post(
            f"{base}/holds",
            json={
                "issue_id": extra["Replace the lidar"]["id"],
                "reason": "Waiting for the new lidar to arrive",
            },
        )
        api.post(
            f"{base}/budgets",
            json={"scope": "company", "monthly_limit_micros": 50_000_000, "warn_percent": 80},
        )
        api.post(
            f"{base}/routines",
            json={
                "name": "Morning triage",
                "agent_id": asker["id"],
                "title": "Triage {{date}}",
                "cron": "0 9 * * 1-5",
                "timezone": "Europe/Paris",
            },
        )
    [live_run] = daily.runs(stack, cid, running["id"])
    listed = daily.get(stack, f"/companies/{cid}/issues", limit=50)["items"]
    assert len(listed) == 13
    states = {i["title"]: i["live"]["state"] for i in listed}
    assert states["Calibrate the sensors"] == "running"
    assert states["Fix the flaky arm test"] == "failed"
    assert states["Choose a charging dock"] == "waiting"
    assert states["Release 2.0 to the fleet"] == "waiting"
    assert states["Replace the lidar"] == "held"

    pages = [
        ("dashboard", f"#/c/{cid}/dashboard", "tr[data-run][data-status='running']"),
        ("issues", f"#/c/{cid}", "tr[data-live='running']"),
        ("kanban", f"#/c/{cid}/kanban", ".kanban-card[data-live='failed']"),
        (
            "issue-review",
            f"#/c/{cid}/issues/{review['identifier']}",
            "details.file-diff .hljs-keyword",
        ),
        ("issue-waiting", f"#/c/{cid}/issues/{asking['identifier']}", "[data-waiting] button"),
        ("run-live", f"#/c/{cid}/runs/{live_run['id']}", "li[data-kind='progress']"),
        ("routines", f"#/c/{cid}/routines", "tr[data-routine] .schedule"),
        ("agent", f"#/c/{cid}/agents/{broken['id']}", "[data-retry]"),
        ("inbox", f"#/c/{cid}/inbox", "li[data-run] [data-retry]"),
    ]
    for size, suffix in ((WIDE, ""), (PHONE, "-phone")):
        page.set_viewport_size(size)
        for name, route, ready in pages:
            page.goto(stack.board(f"/{route}"))
            expect(page.locator(ready).first).to_be_visible()
            if name == "issues":
                for title, state in states.items():
                    row = page.locator("tr[data-issue]", has_text=title)
                    expect(row).to_have_attribute("data-live", state)
            expect(page.locator("[role=alert], [data-problem]")).to_have_count(0)  # no refusal
            # Nothing loading, the fonts in, and a frame drawn with them: then the picture.
            expect(page.locator("[aria-busy=true]")).to_have_count(0)
            page.evaluate("document.fonts.ready.then(() => new Promise(requestAnimationFrame))")
            # Wide, the whole page; on a phone, its first screen (what a person sees first).
            screenshots(page, f"daily-{name}{suffix}", full_page=not suffix)
            if suffix:
                assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"], name
            if name == "kanban" and not suffix:  # readable columns, a menu and no select
                widths = page.locator(".kanban-column:not(.folded)").evaluate_all(
                    "columns => columns.map((c) => c.getBoundingClientRect().width)"
                )
                assert len(widths) == 5 and min(widths) >= 200, widths
                expect(page.locator(".kanban select")).to_have_count(0)
                expect(page.locator(".kanban-column:not(.folded) .menu-trigger")).to_have_count(11)
            if name == "issue-waiting":  # the question first, its answers in the first screen
                waiting = page.get_by_role("region", name="Waiting on you")
                title = page.locator(".issue-head h1")
                assert waiting.bounding_box()["y"] < title.bounding_box()["y"]
                option = waiting.get_by_role("button", name="Dock A (cheaper)")
                box = option.bounding_box()
                assert box["y"] + box["height"] <= size["height"], box
    # On a phone the header is a menu.
    expect(page.get_by_role("link", name="Dashboard")).to_be_hidden()
    page.get_by_role("button", name="Menu").click()
    expect(page.get_by_role("link", name="Dashboard")).to_be_visible()
    gate.touch()
