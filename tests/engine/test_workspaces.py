"""An issue of a project works in a git worktree of the project's repository: real processes, real git.

The control plane, the runner and the fake Codex app-server are separate OS
processes; the fake's shell steps run real commands in the turn's working
directory, which is the issue's worktree. As in Codex's sandbox, the worktree's
git folder is read-only there: a commit is an escalated command, which an agent
with ``COMMITTER``'s settings gets run.
"""

from __future__ import annotations

import os
import signal
import subprocess
import uuid
from pathlib import Path

import pytest

from tests.support.db import query
from tests.support.git_repos import git, make_bare, make_repo, worktrees
from tests.support.processes import PAPERCLIP, wait_until

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins]

FINISH = {"call_tool": {"name": "finish", "arguments": {"outcome": "done", "summary": "done"}}}


COMMITTER = {"approval_policy": "on-request", "approvals": "approve"}
"""An agent whose escalated commands Codex asks about, and the driver says yes."""


def shell(command: str) -> dict:
    return {"shell": {"command": command}}


def escalated(command: str) -> dict:
    """A shell step run outside Codex's sandbox (once approved): the way a commit goes."""
    return {"shell": {"command": command, "escalate": True}}


def in_project(stack, ctx: dict, repo: Path, **fields) -> dict:
    """A project on ``repo`` in the issue's company, and the issue moved into it."""
    company = ctx["company"]["id"]
    with stack.api() as api:
        made = api.post(
            f"/companies/{company}/projects",
            json={"name": f"app-{uuid.uuid4().hex[:6]}", "repo_path": str(repo), **fields},
        )
        assert made.status_code == 201, made.text
        moved = api.patch(
            f"/companies/{company}/issues/{ctx['issue']['id']}",
            json={"project_id": made.json()["id"]},
        )
        assert moved.status_code == 200, moved.text
    return made.json()


def workspace(stack, ctx: dict) -> dict:
    with stack.api() as api:
        got = api.get(f"/companies/{ctx['company']['id']}/issues/{ctx['issue']['id']}/workspace")
        assert got.status_code == 200, got.text
        return got.json()


def worktree_paths(repo: Path) -> list[str]:
    return [entry["worktree"] for entry in worktrees(repo)]


def shell_outputs(stack, ctx: dict, run_id: str) -> list[str]:
    return [
        e["payload"]["item"].get("aggregatedOutput") or ""
        for e in stack.events(ctx, run_id)
        if e["type"] == "item/completed"
        and e["payload"].get("item", {}).get("type") == "commandExecution"
    ]


def paperclip_cli(stack, *args: str) -> str:
    """A client command of ``paperclip`` against the stack's server; its output."""
    done = subprocess.run(
        [*PAPERCLIP, *args, "--url", stack.url()],
        env={**os.environ, **stack.servers[0].client_env},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def runner_with_roots(stack, root: Path, **env: str):
    """A control plane and a runner whose host allows repositories under ``root``, connected
    (so the door knows what it allows)."""
    stack.start_server()
    runner = stack.start_runner(env={"PAPERCLIP_RUNNER_WORKSPACE_ROOTS": str(root), **env})
    connected(stack)
    return runner


def connected(stack) -> None:
    def one():
        with stack.api() as api:
            return api.get("/health").json()["runners"]["connected_here"] == 1

    wait_until(one, 60, message="the runner connected")


def comment(stack, ctx: dict, body: str) -> None:
    with stack.api() as api:
        made = api.post(
            f"/companies/{ctx['company']['id']}/issues/{ctx['issue']['id']}/comments",
            json={"body": body},
        )
        assert made.status_code == 201, made.text


def test_a_commit_lands_on_the_issue_branch_and_the_next_wake_sees_it(stack):
    repos = stack.tmp / "repos"
    base = git(make_repo(repos / "app"), "rev-parse", "HEAD")
    runner_with_roots(stack, repos)
    ctx = stack.setup_issue(
        {
            "turns": [
                [
                    escalated(
                        "printf 'hello\\n' > notes.txt && git add notes.txt"
                        " && git commit -qm 'Add notes' && git rev-parse --abbrev-ref HEAD"
                    ),
                    FINISH,
                ]
            ]
        },
        extra_config=COMMITTER,
    )
    in_project(stack, ctx, repos / "app", default_branch="main")
    stack.assign(ctx)

    run = stack.wait_for_terminal_run(ctx)
    assert run["status"] == "succeeded", (run, stack.runner.tail())
    branch = f"paperclip/{ctx['issue']['identifier']}"
    assert shell_outputs(stack, ctx, run["id"]) == [f"{branch}\n"]
    assert git(repos / "app", "log", "--format=%s", branch) == "Add notes\ninitial"
    assert git(repos / "app", "rev-parse", "main") == base  # the default branch is untouched
    # The prompt named the worktree the provider worked in.
    ws = workspace(stack, ctx)
    assert (ws["status"], ws["branch"], ws["base_commit"]) == ("ready", branch, base)
    assert ws["path"] in str(run["execution_input"]) and branch in str(run["execution_input"])
    assert ws["path"] in worktree_paths(repos / "app")
    product = ws["work_product"]
    assert (product["ahead"], product["dirty"]) == (1, False)
    assert product["files"] == [{"path": "notes.txt", "status": "A", "added": 1, "deleted": 0}]
    with stack.api() as api:
        diff = api.get(
            f"/companies/{ctx['company']['id']}/issues/{ctx['issue']['id']}/workspace/diff"
        ).json()
    assert "+hello" in diff["diff"] and diff["truncated"] is False
    events = [e["type"] for e in stack.events(ctx, run["id"])]
    assert events.count("workspace.ready") == 1 and events.count("workspace.state") == 1
    # Only the runner's user enters the worktree and the run's folder (the provider's state).
    for folder in (Path(ws["path"]), stack.runner_folder / "runs" / run["id"]):
        assert folder.stat().st_mode & 0o777 == 0o700, folder
    assert not (Path(ws["path"]) / "codex-home").exists()

    # The CLI shows the same, the issue named as people name it.
    shown = paperclip_cli(stack, "workspace", "show", ctx["issue"]["identifier"].lower())
    assert branch in shown and "A notes.txt" in shown and "1 ahead" in shown, shown
    assert paperclip_cli(stack, "workspace", "diff", ctx["issue"]["identifier"]) == diff["diff"]
    missing = subprocess.run(
        [*PAPERCLIP, "workspace", "diff", "ACM-99", "--url", stack.url()],
        env={**os.environ, **stack.servers[0].client_env},
        capture_output=True,
        text=True,
    )
    assert missing.returncode == 1 and "no issue 'ACM-99'" in missing.stderr, missing.stderr
    assert "Traceback" not in missing.stderr

    # A later wake of the same issue works in the same worktree, and finds the work there.
    stack.rewrite_script(ctx, {"turns": [[shell("cat notes.txt && pwd"), FINISH]]})
    comment(stack, ctx, "Look again, please.")
    second = wait_until(
        lambda: next(
            (r for r in stack.runs(ctx) if r["id"] != run["id"] and r["status"] == "succeeded"),
            None,
        ),
        90,
        message="the second run",
    )
    assert shell_outputs(stack, ctx, second["id"]) == [f"hello\n{ws['path']}\n"]
    assert workspace(stack, ctx)["path"] == ws["path"]


def test_a_runner_killed_mid_turn_goes_on_in_the_same_worktree_with_the_edit(stack):
    repos = stack.tmp / "repos"
    make_repo(repos / "app")
    runner_with_roots(stack, repos)
    reached = stack.tmp / "reached"
    ctx = stack.setup_issue(
        {
            "turns": [
                [
                    shell("printf 'draft\\n' > draft.txt"),
                    {"touch_file": str(reached)},
                    {"wait_for_file": str(stack.tmp / "never"), "timeout": 300},
                ],
                [shell("cat draft.txt"), FINISH],
            ]
        }
    )
    in_project(stack, ctx, repos / "app")
    stack.assign(ctx)
    wait_until(reached.exists, 60, message="the first turn after its edit")
    path = workspace(stack, ctx)["path"]
    assert (Path(path) / "draft.txt").read_text() == "draft\n"

    stack.runner.proc.send_signal(signal.SIGKILL)
    stack.runner.proc.wait(10)
    stack.start_runner(env={"PAPERCLIP_RUNNER_WORKSPACE_ROOTS": str(repos)})

    run = stack.wait_for_terminal_run(ctx, timeout=120)
    assert run["status"] == "succeeded", (run, stack.runner.tail())
    assert [r["id"] for r in stack.runs(ctx)] == [run["id"]]  # once
    turns = query(
        stack.database_url,
        "SELECT number, kind, status FROM run_turns WHERE run_id = $1 ORDER BY number",
        uuid.UUID(run["id"]),
    )
    assert [(t["kind"], t["status"]) for t in turns] == [
        ("initial", "lost"),
        ("continuation", "completed"),
    ]
    # The continuation found the lost turn's uncommitted edit, in the same worktree.
    assert shell_outputs(stack, ctx, run["id"]) == ["", "draft\n"]
    ws = workspace(stack, ctx)
    assert ws["path"] == path and len(worktree_paths(repos / "app")) == 2
    assert ws["work_product"]["dirty"] is True and ws["work_product"]["untracked"] == 1


def test_two_issues_of_one_project_work_in_two_worktrees_side_by_side(stack):
    repos = stack.tmp / "repos"
    make_repo(repos / "app")
    runner_with_roots(stack, repos)
    gate = stack.tmp / "gate"
    # Each turn names its file after its worktree's folder (its issue's identifier).
    ctx = stack.setup_issue(
        {
            "turns": [
                [
                    escalated(
                        'n=$(basename "$PWD") && printf "$n\\n" > "$n.txt" && git add -A'
                        f' && git commit -qm "$n" && touch "{stack.tmp}/$n-committed"'
                    ),
                    {"wait_for_file": str(gate)},
                    shell("ls *.txt"),
                    FINISH,
                ]
            ]
        },
        title="Issue one",
        extra_config=COMMITTER,
    )
    project = in_project(stack, ctx, repos / "app")
    company = ctx["company"]["id"]
    with stack.api() as api:
        second = api.post(
            f"/companies/{company}/issues",
            json={"title": "Issue two", "project_id": project["id"]},
        ).json()
    contexts = [ctx, {**ctx, "issue": second}]
    for each in contexts:
        stack.assign(each)
    identifiers = [each["issue"]["identifier"] for each in contexts]
    # Both turns are in their own worktrees at once before either goes on.
    wait_until(
        lambda: all((stack.tmp / f"{n}-committed").exists() for n in identifiers),
        60,
        message="both turns committed",
    )
    gate.touch()
    for identifier, each in zip(identifiers, contexts, strict=True):
        run = stack.wait_for_terminal_run(each)
        assert run["status"] == "succeeded", (run, stack.runner.tail())
        assert shell_outputs(stack, each, run["id"])[-1] == f"{identifier}.txt\n"
        branch = f"paperclip/{identifier}"
        assert git(repos / "app", "log", "--format=%s", "-1", branch) == identifier
    paths = {workspace(stack, each)["path"] for each in contexts}
    assert len(paths) == 2 and paths <= set(worktree_paths(repos / "app"))


def held(stack, ctx: dict) -> dict:
    def active():
        with stack.api() as api:
            items = api.get(
                f"/companies/{ctx['company']['id']}/holds",
                params={"issue_id": ctx["issue"]["id"], "status": "active"},
            ).json()["items"]
        return items[0] if items else None

    return wait_until(active, 60, message="the task held")


@pytest.mark.parametrize(
    ("case", "code", "says"),
    [
        ("symlink", "workspace_not_allowed", "PAPERCLIP_RUNNER_WORKSPACE_ROOTS"),
        ("missing", "workspace_unavailable", "does not exist"),
        ("not_git", "workspace_unavailable", "not a git repository"),
    ],
)
def test_a_repository_the_runner_cannot_use_holds_the_task_and_loses_nothing(
    stack, case, code, says
):
    repos = stack.tmp / "repos"
    repos.mkdir()
    outside = stack.tmp / "outside"
    make_repo(outside)
    source = repos / "app"
    if case == "symlink":
        source.symlink_to(outside)  # inside the root by name, outside it once resolved
    elif case == "not_git":
        source.mkdir()
    runner_with_roots(stack, repos)
    ctx = stack.setup_issue({"turns": [[shell("git log --format=%s"), FINISH]]})
    in_project(stack, ctx, source)
    stack.assign(ctx)

    run = stack.wait_for_terminal_run(ctx)
    assert (run["status"], run["error_code"]) == ("failed", code), run
    hold = held(stack, ctx)
    assert hold["kind"] == code and says in hold["reason"], hold
    assert not (outside / ".git" / "worktrees").exists()  # nothing was made outside the root

    # Mended on the host, the hold resolved: the task runs, in its worktree.
    if case != "symlink":
        if case == "not_git":
            source.rmdir()
        make_repo(source)
    else:
        source.unlink()
        make_repo(source)
    with stack.api() as api:
        resolved = api.post(
            f"/companies/{ctx['company']['id']}/holds/{hold['id']}/resolve", json={}
        )
        assert resolved.status_code == 200, resolved.text
    second = wait_until(
        lambda: next((r for r in stack.runs(ctx) if r["status"] == "succeeded"), None),
        90,
        message="the run after the hold",
    )
    assert shell_outputs(stack, ctx, second["id"]) == ["initial\n"]


def test_a_clone_url_is_mirrored_and_a_failed_clone_holds_the_task(stack):
    remotes = stack.tmp / "remotes"
    origin = remotes / "origin"
    make_repo(origin, {"app.py": "print('hi')\n"})
    bare = make_bare(origin, remotes / "app.git")
    stack.start_server()
    stack.start_runner(env={"PAPERCLIP_RUNNER_WORKSPACE_REMOTES": f"file://{remotes}/*"})
    connected(stack)
    ctx = stack.setup_issue({"turns": [[shell("cat app.py"), FINISH]]})
    company = ctx["company"]["id"]
    with stack.api() as api:
        project = api.post(
            f"/companies/{company}/projects",
            json={"name": "remote", "repo_url": f"file://{bare}"},
        ).json()
        api.patch(
            f"/companies/{company}/issues/{ctx['issue']['id']}", json={"project_id": project["id"]}
        )
    stack.assign(ctx)
    run = stack.wait_for_terminal_run(ctx)
    assert run["status"] == "succeeded", (run, stack.runner.tail())
    assert shell_outputs(stack, ctx, run["id"]) == ["print('hi')\n"]
    assert workspace(stack, ctx)["repo_url"] == f"file://{bare}"

    broken = stack.setup_issue({"turns": [[FINISH]]}, title="Broken remote")
    with stack.api() as api:
        gone = api.post(
            f"/companies/{broken['company']['id']}/projects",
            json={"name": "gone", "repo_url": f"file://{remotes}/missing.git"},
        ).json()
        api.patch(
            f"/companies/{broken['company']['id']}/issues/{broken['issue']['id']}",
            json={"project_id": gone["id"]},
        )
    stack.assign(broken)
    failed = stack.wait_for_terminal_run(broken)
    assert (failed["status"], failed["error_code"]) == ("failed", "workspace_unavailable")
    assert held(stack, broken)["kind"] == "workspace_unavailable"


def test_a_done_issue_loses_its_worktree_after_the_retention_but_keeps_its_branch(stack):
    stack.extra_env.update(
        {"PAPERCLIP_WORKSPACE_RETENTION_HOURS": "0", "PAPERCLIP_WORKSPACE_SWEEP_SECONDS": "0.5"}
    )
    repos = stack.tmp / "repos"
    make_repo(repos / "app")
    runner_with_roots(stack, repos)
    ctx = stack.setup_issue(
        {
            "turns": [
                [
                    escalated(
                        "printf 'kept\\n' > kept.txt && git add kept.txt && git commit -qm Kept"
                    ),
                    shell("printf 'unsaved\\n' > unsaved.txt && printf 'more\\n' >> kept.txt"),
                    FINISH,
                ]
            ]
        },
        extra_config=COMMITTER,
    )
    in_project(stack, ctx, repos / "app")
    stack.assign(ctx)
    run = stack.wait_for_terminal_run(ctx)
    assert run["status"] == "succeeded", (run, stack.runner.tail())
    path = workspace(stack, ctx)["path"]

    released = wait_until(
        lambda: (ws := workspace(stack, ctx))["status"] == "released" and ws,
        60,
        message="the worktree released",
    )
    assert not Path(path).exists() and path not in worktree_paths(repos / "app")
    branch = f"paperclip/{ctx['issue']['identifier']}"
    assert git(repos / "app", "log", "--format=%s", "-1", branch) == "Kept"  # the branch stays
    saved = released["saved_ref"]
    assert saved.startswith(f"refs/paperclip/saved/{branch}/"), released
    assert git(repos / "app", "show", f"{saved}:unsaved.txt") == "unsaved"
    assert git(repos / "app", "show", f"{saved}:kept.txt") == "kept\nmore"
