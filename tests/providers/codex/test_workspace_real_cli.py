"""The real Codex CLI works in an issue's worktree and commits on the issue's branch.

The model is the scripted endpoint on 127.0.0.1; its shell calls are Codex's own
``exec_command``, run by Codex in the turn's working directory, under Codex's
sandbox. Codex keeps a worktree's git folder read-only in ``workspace-write``
(by design: its ``.git`` and the folder it points to), so a commit leaves the
sandbox: the model asks (``require_escalated``), and the agent's settings
(``approval_policy: on-request``, ``approvals: approve``) say yes.
"""

from __future__ import annotations

import json

import pytest

from tests.engine.test_workspaces import connected, in_project, workspace
from tests.providers.codex.conftest import MODEL_KEY_VARIABLE
from tests.providers.codex.test_real_cli import WAIT, new_agent
from tests.support.git_repos import git, make_repo
from tests.support.model_endpoint_script import calls, codex_shell, mcp_tool, say

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins, pytest.mark.codex_cli]


def test_the_real_cli_edits_and_commits_on_the_issue_branch(real_stack, model_endpoint):
    repos = real_stack.tmp / "repos"
    repo = make_repo(repos / "app")
    base = git(repo, "rev-parse", "HEAD")
    real_stack.start_server()
    home = real_stack.tmp / "home"
    home.mkdir()
    real_stack.start_runner(
        launch={"codex": {"default": [str(real_stack.codex_cli), "app-server"]}},
        env={
            MODEL_KEY_VARIABLE: "scripted-dummy-key",
            "HOME": str(home),
            "PAPERCLIP_RUNNER_WORKSPACE_ROOTS": str(repos),
        },
    )
    connected(real_stack)
    commit = "git add fix.txt && git commit -qm 'Fix it' && git log --format=%s -1"
    steps = [
        calls(codex_shell("printf 'fixed\\n' > fix.txt && pwd")),  # in the sandbox
        calls(codex_shell(commit)),  # refused by the sandbox: the git folder is read-only
        calls(codex_shell(commit, escalate=True, justification="Commit the fix.")),
        calls(mcp_tool("finish", {"outcome": "done", "summary": "Committed the fix"})),
        say("Committed."),
    ]
    ctx = new_agent(
        real_stack, model_endpoint, steps, approval_policy="on-request", approvals="approve"
    )
    in_project(real_stack, ctx, repo, default_branch="main")
    real_stack.assign(ctx)
    run = real_stack.wait_for_terminal_run(ctx, timeout=WAIT)
    assert run["status"] == "succeeded", (run, real_stack.runner.tail())

    ws = workspace(real_stack, ctx)
    seen = [json.dumps(step.tool_outputs()) for step in model_endpoint.scripted(ctx["model"])]
    assert ws["path"] in seen[1]  # Codex ran the shell in the issue's worktree
    assert "Read-only file system" in seen[2]
    assert "Fix it" in seen[3]
    branch = f"paperclip/{ctx['issue']['identifier']}"
    assert git(repo, "log", "--format=%s", "-1", branch) == "Fix it"
    assert git(repo, "show", f"{branch}:fix.txt") == "fixed"
    assert git(repo, "rev-parse", "main") == base  # the default branch is untouched
    # Committed as the agent, not as the host's user.
    assert git(repo, "log", "--format=%an", "-1", branch) == ctx["agent"]["name"]
    product = ws["work_product"]
    assert (product["ahead"], product["dirty"]) == (1, False), product
    # Codex's own state stayed in the run's folder, out of the worktree and the repository.
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""
    assert not list(repo.rglob("codex-home"))
