"""The fake's shell runs in Codex's sandbox as far as git goes: real processes, real git.

Codex 0.171.0 keeps a working directory's ``.git`` (a worktree's pointer file
and the git folder it names) read-only in ``workspace-write``; a commit there
leaves the sandbox as an escalated command, which Codex runs unsandboxed once
the client accepts. The conformance test in the core tests compares the fake
with a recording of the real CLI doing this.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from codex_testing import Events, FakeCodex, bounded, driver_context
from paperclip_codex.driver import CodexDriver
from paperclip_codex_testing.fake_sandbox import looks_denied, protected_paths, sandbox_argv
from paperclip_hookspecs.providers import DriverContext, TurnInput

pytestmark = pytest.mark.process

IDENTITY = "-c user.name=Dev -c user.email=dev@example.invalid"
COMMIT = f"printf 'fixed\\n' > fix.txt && git add fix.txt && git {IDENTITY} commit -qm 'Fix it'"
READ_ONLY = "Read-only file system"


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=Dev", "-c", "user.email=dev@example.invalid", *args],
        cwd=cwd,
        env={**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null"},
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    (path / "README.md").write_text("hello\n")
    git(path, "add", "README.md")
    git(path, "commit", "-qm", "initial")
    return path


@pytest.fixture
def worktree(repo: Path, tmp_path: Path) -> Path:
    path = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "-b", "feature", str(path))
    return path


def turn(fake: FakeCodex, cwd: Path, **config: object) -> TurnInput:
    return TurnInput(
        run_id="run-1", prompt="Commit it.", cwd=str(cwd), config=fake.config(**config)
    )


def commits(repo: Path, branch: str) -> list[str]:
    return git(repo, "log", "--format=%s", branch).splitlines()


@pytest.mark.parametrize("sandbox", ["workspace-write", "read-only"])
@pytest.mark.parametrize("where", ["worktree", "repository"])
async def test_a_sandboxed_commit_is_refused_and_an_accepted_escalation_commits(
    driver: CodexDriver,
    fake: FakeCodex,
    events: Events,
    repo: Path,
    worktree: Path,
    sandbox: str,
    where: str,
) -> None:
    cwd, branch = (worktree, "feature") if where == "worktree" else (repo, "main")
    fake.script(
        [
            {"shell": {"command": COMMIT}},
            {"shell": {"command": "id -u && cat fix.txt"}},
            {"shell": {"command": f"{COMMIT} && git log --format=%s -1", "escalate": True}},
            {"message": "Committed."},
        ]
    )
    config = {"sandbox": sandbox, "approval_policy": "on-request", "approvals": "approve"}
    result = await bounded(driver.run_turn(turn(fake, cwd, **config), events))
    assert result.status == "completed", result.error

    refused, inside, escalated = fake.entries("shell")
    # The git folder is read-only in the sandbox; the file beside it was written.
    assert (refused["exit_code"], refused["denied"], refused["sandboxed"]) == (128, True, True)
    assert READ_ONLY in refused["output"]
    if where == "worktree":  # the folder the pointer file names, not the pointer itself
        assert f"{repo}/.git/worktrees/wt/index.lock" in refused["output"]
    # As the same user, and the edit made in the sandbox is there.
    assert inside["output"] == f"{os.geteuid()}\nfixed\n"
    assert escalated["sandboxed"] is False and escalated["exit_code"] == 0
    assert commits(repo, branch) == ["Fix it", "initial"]

    completed = events.items_of("commandExecution")
    assert len(completed) in (2, 3)
    # A denial that ended at once reaches the model with no item (one that ran past
    # Codex's early-exit window, on a slow machine, gets a failed one).
    assert all(READ_ONLY in (c["aggregatedOutput"] or "") for c in completed[:-2])
    assert [c["status"] for c in completed[-2:]] == ["completed", "completed"]
    assert completed[-1]["exitCode"] == 0 and completed[-1]["aggregatedOutput"] == "Fix it\n"
    assert completed[-1]["source"] == "unifiedExecStartup"
    started = events.items_of("commandExecution", "item/started")
    assert started[-1]["source"] == "agent" and started[-1]["id"] == completed[-1]["id"]
    kinds = events.types()
    asked = kinds.index("item/commandExecution/requestApproval")
    assert kinds[asked + 1] == "serverRequest/resolved"


async def test_danger_full_access_protects_nothing(
    driver: CodexDriver, fake: FakeCodex, events: Events, repo: Path, worktree: Path
) -> None:
    fake.script([{"shell": {"command": f"{COMMIT} && git log --format=%s -1"}}])
    result = await bounded(
        driver.run_turn(turn(fake, worktree, sandbox="danger-full-access"), events)
    )
    assert result.status == "completed", result.error
    [item] = events.items_of("commandExecution")
    assert (item["status"], item["exitCode"], item["aggregatedOutput"]) == (
        "completed",
        0,
        "Fix it\n",
    )
    assert commits(repo, "feature") == ["Fix it", "initial"]


async def test_a_declined_escalation_does_not_run(
    driver: CodexDriver, fake: FakeCodex, events: Events, repo: Path, worktree: Path
) -> None:
    fake.script([{"shell": {"command": "touch escalated.txt", "escalate": True}}])
    config = {"sandbox": "workspace-write", "approval_policy": "on-request"}
    result = await bounded(driver.run_turn(turn(fake, worktree, **config), events))
    assert result.status == "completed", result.error
    [item] = events.items_of("commandExecution")
    assert (item["status"], item["exitCode"], item["aggregatedOutput"]) == ("declined", None, None)
    assert not (worktree / "escalated.txt").exists()
    assert fake.entries("shell") == []


def host_bin(tmp_path: Path, unshare: str | None) -> Path:
    """A PATH folder with git and, if given, an ``unshare`` script (a host whose kernel or
    container refuses user namespaces says "Operation not permitted")."""
    folder = tmp_path / "bin"
    folder.mkdir()
    for tool in ("git", "cat", "id"):
        (folder / tool).symlink_to(shutil.which(tool) or tool)
    if unshare is not None:
        (folder / "unshare").write_text(f"#!/bin/sh\necho '{unshare}' >&2\nexit 1\n")
        (folder / "unshare").chmod(0o755)
    return folder


@pytest.mark.parametrize(
    "unshare", [None, "unshare: unshare failed: Operation not permitted"], ids=["none", "refused"]
)
async def test_without_user_namespaces_commands_run_unsandboxed_with_one_warning(
    fake: FakeCodex,
    events: Events,
    state_dir: Path,
    repo: Path,
    worktree: Path,
    tmp_path: Path,
    unshare: str | None,
) -> None:
    context = driver_context(state_dir, fake.command())
    env = {**context.env, "PATH": str(host_bin(tmp_path, unshare))}
    driver = CodexDriver(DriverContext(state_dir=str(state_dir), env=env, command=fake.command()))
    fake.script([{"shell": {"command": COMMIT}}, {"shell": {"command": "cat fix.txt"}}])
    try:
        result = await bounded(
            driver.run_turn(turn(fake, worktree, sandbox="workspace-write"), events)
        )
    finally:
        await driver.close()
    assert result.status == "completed", result.error
    assert [e["exit_code"] for e in fake.entries("shell")] == [0, 0]
    assert commits(repo, "feature") == ["Fix it", "initial"]
    [warning] = fake.entries("warning")
    assert "shell commands run without the git sandbox" in warning["message"]
    assert ("no unshare program" if unshare is None else "Operation not permitted") in warning[
        "message"
    ]


NOBODY = 65534


@pytest.mark.skipif(
    sys.platform != "linux" or os.geteuid() != 0 or not shutil.which("setpriv"),
    reason="runs the sandbox as an unprivileged user: needs Linux, root and setpriv",
)
def test_the_sandbox_needs_no_privilege() -> None:
    """The same command line, run by an unprivileged user (Debian 12 allows them user
    namespaces; where a host does not, the fake runs commands unsandboxed, above)."""
    unshare = shutil.which("unshare")
    assert unshare is not None
    with tempfile.TemporaryDirectory(dir="/tmp") as name:  # /tmp: any user may enter it
        top = Path(name)
        repo, wt = top / "repo", top / "wt"
        repo.mkdir()
        git(repo, "init", "-q", "-b", "main")
        git(repo, "commit", "-q", "--allow-empty", "-m", "initial")
        git(repo, "worktree", "add", "-q", "-b", "feature", str(wt))
        for path in (top, *top.rglob("*")):
            os.lchown(path, NOBODY, NOBODY)
        marker = top / "made"
        argv = sandbox_argv(
            unshare, f"id -u; {COMMIT}", protected_paths(str(wt)), marker, (NOBODY, NOBODY)
        )
        as_nobody = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
        done = subprocess.run(
            [*as_nobody, *argv],
            cwd=wt,
            env={"PATH": os.environ["PATH"], "HOME": str(top)},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert marker.exists(), done.stderr
        assert done.returncode == 128, done
        assert done.stdout == f"{NOBODY}\n" and READ_ONLY in done.stderr
        assert (wt / "fix.txt").read_text() == "fixed\n"


def test_what_codex_reads_as_a_sandbox_denial() -> None:
    assert looks_denied(128, f"fatal: Unable to create 'x/index.lock': {READ_ONLY}\n")
    assert looks_denied(2, "touch: cannot touch 'x': Permission denied")  # words beat the code
    assert not looks_denied(0, READ_ONLY)
    assert not looks_denied(1, "error: pathspec did not match")


def test_a_pointer_file_protects_the_git_folder_it_names(tmp_path: Path) -> None:
    gitdir = tmp_path / "repo" / ".git" / "worktrees" / "wt"
    gitdir.mkdir(parents=True)
    cwd = tmp_path / "wt"
    cwd.mkdir()
    (cwd / ".git").write_text("gitdir: ../repo/.git/worktrees/wt\n")
    assert protected_paths(str(cwd)) == [str(cwd / ".git"), str(gitdir)]
    (cwd / ".git").write_text("gitdir: ../gone\n")
    assert protected_paths(str(cwd)) == [str(cwd / ".git")]
    assert protected_paths(str(tmp_path)) == []
