"""An issue's worktree on the board, in headless Chromium, against a real ``paperclip serve``.

A real repository, a project on it, a local runner whose host allows it, and
the fake Codex editing files in the issue's worktree: the issue page shows the
worktree (runner, branch, base), then the work product and the diff as the
run's events bring them, without a reload and while the page's own re-reads
sleep. Forgetting the worktree is refused while the run is active, and shown
so; afterwards it is done. The run page says what each work product holds.
"""

from __future__ import annotations

import pytest

from tests.board.conftest import PHONE
from tests.support.git_repos import git, make_repo
from tests.support.processes import wait_until

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins, pytest.mark.browser]

expect = pytest.importorskip("playwright.sync_api").expect

FINISH = {"call_tool": {"name": "finish", "arguments": {"outcome": "done", "summary": "Edited"}}}
# A tracked file changed (one line out, one in) and a new, untracked one of 300 lines, which
# takes the diff past the runner's limit (set to its least, 1 KiB): no commit.
EDIT = "printf 'hello, world\\n' > README.md && seq 1 300 > notes.txt"
# The page's periodic re-reads skip a hidden tab; the run's event stream does not.
HIDE = "Object.defineProperty(document, 'hidden', { configurable: true, get: () => true })"


def connected(stack) -> None:
    def one():
        with stack.api() as api:
            return api.get("/health").json()["runners"]["connected_here"] == 1

    wait_until(one, 60, message="the local runner connected")


def test_the_issue_page_shows_its_worktree_work_product_and_diff_live(stack, page, screenshots):
    repos = stack.tmp / "repos"
    base = git(make_repo(repos / "app", {"README.md": "hello\n"}), "rev-parse", "HEAD")
    stack.extra_env["PAPERCLIP_RUNNER_WORKSPACE_ROOTS"] = str(repos)
    # An ended issue's removal is scheduled within a second; the diff is cut at 1 KiB.
    stack.extra_env["PAPERCLIP_WORKSPACE_SWEEP_SECONDS"] = "1"
    stack.extra_env["PAPERCLIP_RUNNER_DIFF_LIMIT_BYTES"] = "1024"
    stack.start_server(local_runner=True)
    connected(stack)  # so the door knows the folder is allowed
    reached, gate = stack.tmp / "ws-reached", stack.tmp / "ws-go"
    script = {
        "turns": [
            [
                {"touch_file": str(reached)},
                {"wait_for_file": str(gate), "timeout": 180},
                {"shell": {"command": EDIT}},
                FINISH,
            ]
        ]
    }
    ctx = stack.setup_issue(script, title="Greet the world")
    cid, iid = ctx["company"]["id"], ctx["issue"]["id"]
    with stack.api() as api:
        project = api.post(
            f"/companies/{cid}/projects",
            json={"name": "App", "repo_path": str(repos / "app"), "default_branch": "main"},
        )
        assert project.status_code == 201, project.text
        moved = api.patch(
            f"/companies/{cid}/issues/{iid}", json={"project_id": project.json()["id"]}
        )
        assert moved.status_code == 200, moved.text

    page.goto(stack.board(f"/#/c/{cid}/issues/{iid}"))
    panel = page.get_by_role("region", name="Workspace")
    expect(panel).to_contain_text("will work in a worktree of the project's repository")
    expect(panel.locator("dl.facts")).to_be_hidden()

    page.get_by_label("Assignee").select_option(label=f"{ctx['agent']['name']} (codex)")
    page.get_by_role("button", name="Save", exact=True).click()
    wait_until(reached.exists, 90, message="the fake at its gate")
    branch = f"paperclip/{ctx['issue']['identifier']}"
    expect(panel).to_have_attribute("data-status", "ready")
    expect(panel.locator("[data-branch]")).to_have_text(branch)
    facts = panel.locator("dl.facts")
    expect(facts).to_contain_text(base[:7])
    expect(facts).to_contain_text("clean")
    expect(panel.locator("tr[data-path]")).to_have_count(0)

    # Forgetting the worktree of an active run is refused; the refusal is shown in the panel.
    panel.get_by_role("button", name="Forget worktree", exact=True).click()
    panel.get_by_role("button", name="Confirm: forget worktree", exact=True).click()
    expect(panel.locator(".forget .error")).to_contain_text("run_active")
    expect(panel).to_have_attribute("data-status", "ready")

    # From here only the run's events can bring the work product: the re-reads sleep. The
    # page has read the issue running first (what it must still show once the run ended).
    expect(page.locator("#issue-status")).to_have_attribute("data-status", "in_progress")
    page.evaluate(HIDE)
    page.evaluate("window.sameDocument = true")
    gate.touch()
    readme = panel.locator("tr[data-path='README.md']")
    expect(readme).to_have_attribute("data-status", "M", timeout=90_000)
    expect(readme).to_contain_text("+1 / -1")
    notes = panel.locator("tr[data-path='notes.txt']")
    expect(notes).to_have_attribute("data-status", "?")
    expect(notes).to_contain_text("+300 / -0")
    expect(facts).to_contain_text("uncommitted changes")
    expect(facts.locator("dd", has_text="1 file")).to_have_count(1)  # untracked
    # The changes, file by file, in the review above the thread.
    review = page.get_by_role("region", name="Review")
    readme_diff = review.locator("details.file-diff[data-path='README.md']")
    expect(readme_diff.locator("tr.d-add")).to_contain_text("hello, world")
    expect(readme_diff.locator("tr.d-del")).to_have_count(1)
    notes_diff = review.locator("details.file-diff[data-path='notes.txt'] tr.d-add")
    expect(notes_diff).not_to_have_count(0)  # notes.txt, begun
    expect(notes_diff.filter(has_text="300")).to_have_count(0)  # and cut
    expect(review.locator("[data-diff-truncated]")).to_contain_text("cut at the runner's limit")
    run = stack.wait_for_terminal_run(ctx)
    assert run["status"] == "succeeded", run
    # The issue is done, but the sleeping page has not re-read it: the events did the work.
    expect(page.locator("#issue-status")).to_have_attribute("data-status", "in_progress")
    assert page.evaluate("window.sameDocument") is True

    page.evaluate("delete document.hidden")
    expect(page.locator("#issue-status")).to_have_attribute("data-status", "done")
    # The issue ended: its worktree is kept for the retention time, and the panel says until when.
    expect(facts).to_contain_text("Removed after", timeout=30_000)
    expect(panel.locator(".forget .error")).to_have_count(0)  # the refusal was of another moment
    panel.scroll_into_view_if_needed()
    screenshots(page, "issue-workspace", full_page=True)

    # The run page says what each report held, in a line.
    page.locator("ol.thread li[data-run] a").first.click()
    # The run page's own log (the issue page holds one too, of its latest run).
    state = page.locator(".run ol.events li[data-type='workspace.state']")
    expect(state).to_contain_text(f"{branch} at ")
    expect(state).to_contain_text("0 ahead · 2 files changed · uncommitted changes")
    ready = page.locator(".run ol.events li[data-type='workspace.ready']")
    expect(ready).to_contain_text("0 files changed · clean")

    # Once the run has ended, the worktree may be forgotten.
    page.go_back()
    panel.get_by_role("button", name="Forget worktree", exact=True).click()
    panel.get_by_role("button", name="Confirm: forget worktree", exact=True).click()
    expect(panel).to_have_attribute("data-status", "released")
    expect(facts).to_contain_text("forgotten")
    expect(facts).not_to_contain_text("Removed after")
    expect(panel.get_by_role("button", name="Forget worktree")).to_be_hidden()
    with stack.api() as api:
        stored = api.get(f"/companies/{cid}/issues/{iid}/workspace").json()
    assert (stored["status"], stored["error_code"]) == ("released", "forgotten")

    # On a phone the panel, its table and its diff stay inside the screen.
    page.set_viewport_size(PHONE)
    page.reload()
    expect(panel).to_have_attribute("data-status", "released")
    expect(readme_diff.locator("tr.d-add")).to_contain_text("hello, world")
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
