"""An issue's worktree and the runner that holds it: a worktree half made when its runner
died is made once, and a wake waits for the runner holding the worktree until that runner is
forgotten. Real processes, real git (the helpers of tests/engine/test_workspaces.py)."""

from __future__ import annotations

import signal
import uuid

import pytest

from tests.engine.test_workspaces import (
    COMMITTER,
    FINISH,
    comment,
    connected,
    escalated,
    in_project,
    runner_with_roots,
    shell,
    shell_outputs,
    workspace,
    worktree_paths,
)
from tests.support.db import query
from tests.support.git_repos import git, make_repo
from tests.support.processes import wait_until

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins]


def test_a_worktree_half_made_when_the_runner_died_is_made_once_and_the_run_succeeds(stack):
    repos = stack.tmp / "repos"
    make_repo(repos / "app")
    stack.start_server()
    roots = {"PAPERCLIP_RUNNER_WORKSPACE_ROOTS": str(repos)}
    # Killed inside `git worktree add`'s aftermath: staged, not yet moved into place.
    stack.start_runner(env={**roots, "PAPERCLIP_FAILPOINTS": "runner.workspace.after_add=kill"})
    connected(stack)
    ctx = stack.setup_issue({"turns": [[shell("git status --short --branch"), FINISH]]})
    in_project(stack, ctx, repos / "app")
    stack.assign(ctx)
    stack.runner.proc.wait(60)
    assert stack.runner.proc.returncode == -signal.SIGKILL, stack.runner.tail()
    assert "failpoint runner.workspace.after_add fired" in stack.runner.tail()
    stack.start_runner(env=roots)

    run = stack.wait_for_terminal_run(ctx, timeout=120)
    assert run["status"] == "succeeded", (run, stack.runner.tail())
    branch = f"paperclip/{ctx['issue']['identifier']}"
    assert shell_outputs(stack, ctx, run["id"])[-1] == f"## {branch}\n"
    assert len(worktree_paths(repos / "app")) == 2  # the repository's own, and the issue's
    staging = stack.runner_folder / "workspaces" / ".staging"
    assert not any(staging.iterdir())


def test_a_wake_waits_for_the_runner_holding_the_worktree_until_it_is_forgotten(stack):
    repos = stack.tmp / "repos"
    make_repo(repos / "app")
    runner_with_roots(stack, repos)
    ctx = stack.setup_issue(
        {"turns": [[escalated("touch first.txt && git add -A && git commit -qm first"), FINISH]]},
        extra_config=COMMITTER,
    )
    in_project(stack, ctx, repos / "app")
    stack.assign(ctx)
    first = stack.wait_for_terminal_run(ctx)
    assert first["status"] == "succeeded", (first, stack.runner.tail())
    held_by = workspace(stack, ctx)
    stack.runner.stop()  # its host goes away, with the issue's worktree on its disk
    git(repos / "app", "worktree", "remove", "--force", held_by["path"])

    # Another runner host (its own folder) that allows the same repositories.
    stack.start_runner(another=True, env={"PAPERCLIP_RUNNER_WORKSPACE_ROOTS": str(repos)})
    connected(stack)
    stack.rewrite_script(ctx, {"turns": [[shell("ls"), FINISH]]})
    comment(stack, ctx, "One more thing.")
    # Other work is not held up: an issue without a project runs on the new runner.
    other = stack.setup_issue({"turns": [[FINISH]]}, title="Elsewhere")
    stack.assign(other)
    assert stack.wait_for_terminal_run(other)["status"] == "succeeded"
    [wake] = query(
        stack.database_url,
        "SELECT status FROM wake_requests WHERE issue_id = $1 AND source = 'comment'",
        uuid.UUID(ctx["issue"]["id"]),
    )
    assert wake["status"] == "queued"  # it waits for the worktree's host
    assert [r["id"] for r in stack.runs(ctx)] == [first["id"]]

    with stack.api() as api:
        forgotten = api.delete(
            f"/companies/{ctx['company']['id']}/issues/{ctx['issue']['id']}/workspace"
        )
    assert forgotten.status_code == 200, forgotten.text
    assert forgotten.json()["error_code"] == "forgotten"
    second = wait_until(
        lambda: next(
            (r for r in stack.runs(ctx) if r["id"] != first["id"] and r["status"] == "succeeded"),
            None,
        ),
        90,
        message="the run on the other runner",
    )
    now = workspace(stack, ctx)
    assert now["runner_id"] != held_by["runner_id"] and now["path"] != held_by["path"]
    # Made again from the issue's branch, in the same repository: the first run's commit is there.
    assert shell_outputs(stack, ctx, second["id"]) == ["README.md\nfirst.txt\n"]
