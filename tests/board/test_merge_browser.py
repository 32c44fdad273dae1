"""Review and merge on the issue page, in Chromium against real processes and a real git
repository (a runner of its own that allows it): a line comment in the diff reaches the agent's
next prompt with its ``path:line``; Merge of a branch one commit ahead makes the base branch
point at it, and a conflicting merge changes nothing and names the files."""

from __future__ import annotations

import pytest

from tests.board import daily
from tests.board.conftest import PHONE
from tests.support.git_repos import commit, git, make_repo
from tests.support.processes import wait_until

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins, pytest.mark.browser]

expect = pytest.importorskip("playwright.sync_api").expect

FINISH = {"call_tool": {"name": "finish", "arguments": {"outcome": "done", "summary": "Done"}}}
COMMITTER = {"approval_policy": "on-request", "approvals": "approve"}
"""An agent whose escalated commands Codex asks about, and the driver says yes (a commit)."""
WIDE = {"width": 1400, "height": 900}


def committed(command: str) -> dict:
    """A shell step outside Codex's sandbox (approved): the way a commit goes."""
    return {"shell": {"command": command, "escalate": True}}


def workspace_stack(stack, repos):
    stack.extra_env["PAPERCLIP_RUNNER_WORKSPACE_ROOTS"] = str(repos)
    stack.start_server(local_runner=True)

    def connected():
        with stack.api() as api:
            return api.get("/health").json()["runners"]["connected_here"] == 1

    wait_until(connected, 60, message="the local runner connected")


def issue_in_repo(
    stack, repos, name: str, steps: list, title: str, strategy: str = "fast_forward"
) -> tuple[dict, dict, dict]:
    """A company, an agent that commits, a project on a new repository (merged by
    ``strategy``), and an issue of it assigned; returns (company, agent, issue) once its
    first run ended."""
    make_repo(repos / name, {"README.md": "hello\nworld\n", "app.py": "print('hi')\n"})
    acme = daily.company(stack, f"Review {name}", name.upper()[:6])
    coder = daily.agent(stack, acme["id"], {"turns": [steps]}, **COMMITTER)
    with stack.api() as api:
        project = api.post(
            f"/companies/{acme['id']}/projects",
            json={
                "name": "App",
                "repo_path": str(repos / name),
                "default_branch": "main",
                "merge_strategy": strategy,
            },
        )
        assert project.status_code == 201, project.text
        task = api.post(
            f"/companies/{acme['id']}/issues",
            json={
                "title": title,
                "project_id": project.json()["id"],
                "assignee_agent_id": coder["id"],
            },
        ).json()
    run = daily.ended_run(stack, acme["id"], task["id"])
    assert run["status"] == "succeeded", (
        run["error_code"],
        run["error_message"],
        run["status_reason"],
    )
    return acme, coder, task


def test_a_line_comment_reaches_the_agents_next_prompt(stack, page, screenshots):
    repos = stack.tmp / "repos"
    workspace_stack(stack, repos)
    edit = committed(
        "printf 'hello\\nbrave new world\\n' > README.md"
        " && printf \"def greet(name):\\n    return f'hi {name}'\\n\" > app.py"
        " && git add -A && git commit -qm 'Greet by name'"
    )
    acme, coder, task = issue_in_repo(stack, repos, "lines", [edit, FINISH], "Greet by name")
    daily.script(stack, coder, {"turns": [[FINISH]]})  # what the comment's run does

    page.set_viewport_size(WIDE)
    page.goto(stack.board(f"/#/c/{acme['id']}/issues/{task['identifier']}"))
    review = page.get_by_role("region", name="Review")
    readme = review.locator("details.file-diff[data-path='README.md']")
    expect(readme.locator("tr.d-add")).to_contain_text("brave new world")
    expect(
        review.locator("details.file-diff[data-path='app.py'] .hljs-keyword").first
    ).to_have_text("def")  # coloured as Python
    expect(review.locator("[data-diff-summary]")).to_contain_text("2 files changed")
    expect(review.locator("[data-diff-summary]")).to_contain_text("1 commit ahead of main")
    readme.locator("tr[data-line='README.md:2']").hover()
    readme.get_by_role("button", name="Comment on README.md:2").click()
    readme.get_by_role("textbox", name="Comment on README.md:2").fill(
        "Say *hello* to the whole world instead."
    )
    screenshots(page, "issue-review", full_page=True)
    readme.get_by_role("button", name="Comment", exact=True).click()
    expect(readme.locator("[data-line-commented='README.md:2']")).to_be_visible()
    expect(page.locator("ol.thread li[data-comment]").last).to_contain_text("README.md:2")

    # The comment woke the agent: its next run's prompt holds the line, path first.
    second = daily.ended_run(stack, acme["id"], task["id"], count=2)
    assert "`README.md:2` Say *hello* to the whole world instead." in str(second["execution_input"])
    review.get_by_role("button", name="Side by side").click()
    expect(readme.locator("table.diff-table.split")).to_be_visible()
    page.set_viewport_size(PHONE)
    page.reload()
    expect(review.locator("details.file-diff[data-path='README.md']")).to_be_visible()
    screenshots(page, "issue-review-phone", full_page=True)
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]


def test_merge_moves_the_base_branch_and_a_conflict_changes_nothing(stack, page):
    repos = stack.tmp / "repos"
    workspace_stack(stack, repos)
    edit = committed("printf 'merged\\n' > NOTES.md && git add -A && git commit -qm 'Add notes'")
    acme, _, task = issue_in_repo(stack, repos, "merge", [edit, FINISH], "Add notes")
    branch_head = daily.get(stack, f"/companies/{acme['id']}/issues/{task['id']}/workspace")[
        "head_commit"
    ]
    page.goto(stack.board(f"/#/c/{acme['id']}/issues/{task['identifier']}"))
    review = page.get_by_role("region", name="Review")
    review.get_by_role("button", name="Merge", exact=True).click()
    expect(review.locator("[data-merge='merged']")).to_contain_text("Merged")
    assert git(repos / "merge", "rev-parse", "main") == branch_head

    # A conflicting change: the base changed the same line; nothing moves, the file is named
    # (a merge commit is asked for: a fast-forward would be refused before any merge).
    edit = committed("printf 'ours\\n' > README.md && git add -A && git commit -qm 'Ours'")
    acme, _, task = issue_in_repo(
        stack, repos, "conflict", [edit, FINISH], "Conflict", strategy="merge_commit"
    )
    commit(repos / "conflict", {"README.md": "theirs\n"}, "Theirs")
    before = git(repos / "conflict", "rev-parse", "main")
    page.goto(stack.board(f"/#/c/{acme['id']}/issues/{task['identifier']}"))
    review.get_by_role("button", name="Merge", exact=True).click()
    refused = review.locator("[data-merge='merge_conflict']")
    expect(refused).to_contain_text("Not merged")
    expect(refused.locator(".merge-files")).to_contain_text("README.md")
    assert git(repos / "conflict", "rev-parse", "main") == before
    assert git(repos / "conflict", "status", "--porcelain") == ""
