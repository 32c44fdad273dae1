"""An issue's branch merged into its base branch: real processes (control plane, runner, the fake
Codex app-server), a real git repository, the HTTP API and the CLI.

The agent commits on the issue's branch in its worktree (an escalated command,
as in Codex's sandbox); a person then merges it into ``main``, which is checked
out in the repository's own working tree.
"""

from __future__ import annotations

import os
import subprocess
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.engine.test_workspaces import (
    COMMITTER,
    FINISH,
    escalated,
    in_project,
    runner_with_roots,
    workspace,
)
from tests.support.db import query
from tests.support.git_repos import commit, git, make_repo, repo_state
from tests.support.processes import PAPERCLIP

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins]

FILES = {"a.txt": "one\ntwo\nthree\n", "b.txt": "bee\n"}
REVIEW = {
    "call_tool": {"name": "finish", "arguments": {"outcome": "needs_review", "summary": "ok"}}
}


def cli(stack, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*PAPERCLIP, *args, "--url", stack.url()],
        env={**os.environ, **stack.servers[0].client_env},
        capture_output=True,
        text=True,
        check=False,
    )


def merge(stack, ctx: dict, issue: dict | None = None, **body):
    issue = issue or ctx["issue"]
    with stack.api() as api:
        return api.post(
            f"/companies/{ctx['company']['id']}/issues/{issue['identifier']}/workspace/merge",
            json=body,
            timeout=90,
        )


def merged_activity(stack, issue: dict) -> list[dict]:
    return query(
        stack.database_url,
        "SELECT actor_type, details FROM activity_log "
        "WHERE action = 'workspace.merged' AND entity_id = $1",
        issue["id"],
    )


def test_a_double_click_fast_forwards_main_once_and_closes_the_issue(stack):
    repos = stack.tmp / "repos"
    repo = make_repo(repos / "app", FILES)
    runner_with_roots(stack, repos)
    ctx = stack.setup_issue(
        {
            "turns": [
                [
                    escalated(
                        "printf 'hello\\n' > notes.txt && git add notes.txt"
                        " && git commit -qm 'Add notes'"
                    ),
                    REVIEW,
                ]
            ]
        },
        extra_config=COMMITTER,
    )
    in_project(stack, ctx, repo, default_branch="main")
    stack.assign(ctx)
    run = stack.wait_for_terminal_run(ctx)
    assert run["status"] == "succeeded", (run, stack.runner.tail())
    branch = f"paperclip/{ctx['issue']['identifier']}"
    head = git(repo, "rev-parse", branch)

    # Two requests at once, as a double click sends them.
    with ThreadPoolExecutor(2) as pool:
        answers = list(pool.map(lambda _: merge(stack, ctx, close_issue=True), range(2)))

    expected = {
        "status": "merged",
        "strategy": "fast_forward",
        "branch": branch,
        "base_ref": "main",
        "commit": head,
        "merged_commits": 1,
        "issue_status": "done",
    }
    assert [(a.status_code, a.json()) for a in answers] == [(200, expected)] * 2
    assert git(repo, "rev-parse", "main") == head
    # main is checked out in the repository's own working tree: it followed.
    assert (repo / "notes.txt").read_text() == "hello\n"
    assert git(repo, "status", "--porcelain") == ""
    [entry] = merged_activity(stack, ctx["issue"])
    assert entry["actor_type"] == "user"
    assert '"merged_commits": 1' in entry["details"] and head in entry["details"]
    ws = workspace(stack, ctx)
    assert ws["base_commit"] == head and ws["work_product"]["ahead"] == 0
    with stack.api() as api:
        issue = api.get(f"/companies/{ctx['company']['id']}/issues/{ctx['issue']['id']}").json()
    assert issue["status"] == "done"

    # The CLI asks again for the same head: the first merge's answer, nothing merged again.
    shown = cli(
        stack, "workspace", "merge", ctx["issue"]["identifier"], "--company", ctx["company"]["id"]
    )
    assert shown.returncode == 0, shown.stderr
    assert f"merged {branch} into main (fast_forward): 1 commit(s)" in shown.stdout
    assert len(merged_activity(stack, ctx["issue"])) == 1
    assert git(repo, "rev-parse", "main") == head


def test_a_conflict_changes_nothing_then_a_merge_commit_and_nothing_to_merge(stack):
    repos = stack.tmp / "repos"
    repo = make_repo(repos / "app", FILES)
    runner_with_roots(stack, repos)
    # Only the first issue's agent edits a.txt; the second issue's makes no commit.
    edit = (
        'if [ "$(basename "$PWD")" = "ACM-1" ]; then'
        " printf 'one\\nthe agent\\nthree\\n' > a.txt && git commit -qam 'Agent edits a'; fi"
    )
    ctx = stack.setup_issue(
        {"turns": [[escalated(edit), FINISH]]}, title="Fix the thing", extra_config=COMMITTER
    )
    project = in_project(stack, ctx, repo, default_branch="main", merge_strategy="merge_commit")
    assert project["merge_strategy"] == "merge_commit"
    with stack.api() as api:
        second = api.post(
            f"/companies/{ctx['company']['id']}/issues",
            json={"title": "Nothing to do", "project_id": project["id"]},
        ).json()
    idle = {**ctx, "issue": second}
    for each in (ctx, idle):
        stack.assign(each)
    for each in (ctx, idle):
        run = stack.wait_for_terminal_run(each)
        assert run["status"] == "succeeded", (run, stack.runner.tail())
    head = git(repo, "rev-parse", "paperclip/ACM-1")

    # Meanwhile a person changed the same line on main.
    commit(repo, {"a.txt": "one\nthe person\nthree\n"}, "Person edits a")
    before = repo_state(repo)
    refused = cli(stack, "workspace", "merge", "ACM-1", "--company", ctx["company"]["id"])
    assert refused.returncode == 1, refused.stdout
    assert "merge_conflict" in refused.stderr and "  a.txt" in refused.stderr, refused.stderr
    assert "Traceback" not in refused.stderr
    assert repo_state(repo) == before  # refs, checkout, index and worktrees as they were
    assert merged_activity(stack, ctx["issue"]) == []

    # The person takes it back and changes another file: the merge commit is made.
    git(repo, "reset", "--hard", "--quiet", "HEAD~1")
    base = commit(repo, {"b.txt": "bee, by a person\n"}, "Person edits b")
    made = cli(stack, "workspace", "merge", "ACM-1", "--company", ctx["company"]["id"])
    assert made.returncode == 0, made.stderr
    assert "merged paperclip/ACM-1 into main (merge_commit): 1 commit(s)" in made.stdout
    assert git(repo, "rev-parse", "main^1", "main^2").split() == [base, head]
    assert git(repo, "log", "-1", "--format=%s", "main") == "Merge paperclip/ACM-1: Fix the thing"
    assert (repo / "a.txt").read_text() == "one\nthe agent\nthree\n"
    assert (repo / "b.txt").read_text() == "bee, by a person\n"
    assert git(repo, "status", "--porcelain") == ""
    assert len(merged_activity(stack, ctx["issue"])) == 1

    # The second issue's branch has nothing main does not have.
    nothing = merge(stack, idle)
    assert nothing.status_code == 409 and nothing.json()["code"] == "nothing_to_merge"
    assert merged_activity(stack, second) == []
    assert uuid.UUID(second["id"])  # its worktree stays for its next run
    assert workspace(stack, idle)["status"] == "ready"
