"""Real git repositories for tests: made, committed to and read with the git command line.

Git runs with no system or user configuration and a fixed identity, so what a
test builds does not depend on the machine it runs on.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

from paperclip.wire.messages import WorkspaceSpec

IDENTITY = {
    "GIT_AUTHOR_NAME": "Dev",
    "GIT_AUTHOR_EMAIL": "dev@example.invalid",
    "GIT_COMMITTER_NAME": "Dev",
    "GIT_COMMITTER_EMAIL": "dev@example.invalid",
}


def git_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """A clean environment for git in tests (the identity above, no configuration files)."""
    env = {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": os.environ.get("HOME", "/nonexistent"),
        "LANG": "C",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        **IDENTITY,
    }
    env.update(extra or {})
    return env


def git(cwd: Path, *args: str, env: Mapping[str, str] | None = None, check: bool = True) -> str:
    """``git <args>`` in ``cwd``; its stdout, stripped. Raises on failure when ``check``."""
    done = subprocess.run(
        ["git", *args], cwd=cwd, env=git_env(env), capture_output=True, text=True, check=False
    )
    if check and done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {done.stderr}")
    return done.stdout.strip()


def write(folder: Path, files: Mapping[str, str | bytes]) -> None:
    for name, content in files.items():
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content)


def commit(repo: Path, files: Mapping[str, str | bytes], message: str = "change") -> str:
    """Write ``files`` into the work tree, commit them all; the new commit."""
    write(repo, files)
    git(repo, "add", "--all")
    git(repo, "commit", "--quiet", "--no-verify", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def make_repo(
    path: Path, files: Mapping[str, str | bytes] | None = None, *, branch: str = "main"
) -> Path:
    """A repository at ``path`` on ``branch`` with one commit of ``files``."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "--quiet", "--initial-branch", branch)
    commit(path, files or {"README.md": "hello\n"}, "initial")
    return path


def make_bare(source: Path, path: Path) -> Path:
    """A bare clone of ``source`` at ``path`` (a remote to clone from)."""
    git(source.parent, "clone", "--quiet", "--bare", str(source), str(path))
    return path


def worktrees(repo: Path) -> list[dict[str, str]]:
    """``git worktree list --porcelain``: one dict per worktree (``worktree``, ``branch``, ...)."""
    found: list[dict[str, str]] = []
    for block in git(repo, "worktree", "list", "--porcelain").split("\n\n"):
        entry = {}
        for line in block.splitlines():
            key, _, value = line.partition(" ")
            entry[key] = value
        if entry:
            found.append(entry)
    return found


def repo_state(repo: Path) -> dict:
    """What a refused merge must leave as it was: every ref, the checkout's HEAD, its index,
    status and top-level files, and the repository's worktrees."""
    index = Path(git(repo, "rev-parse", "--path-format=absolute", "--git-path", "index"))
    head = git(repo, "symbolic-ref", "-q", "HEAD", check=False) or git(repo, "rev-parse", "HEAD")
    return {
        "refs": git(repo, "for-each-ref", "--format=%(refname) %(objectname)"),
        "head": head,
        "index": hashlib.sha256(index.read_bytes()).hexdigest() if index.exists() else None,
        # Without optional locks: a status that refreshed the index would change its bytes.
        "status": git(
            repo, "status", "--porcelain", "--untracked-files=all", env={"GIT_OPTIONAL_LOCKS": "0"}
        ),
        "files": {p.name: p.read_bytes() for p in sorted(repo.iterdir()) if p.is_file()},
        "worktrees": worktrees(repo),
    }


def add_hook(repo: Path, name: str, script: str) -> None:
    """An executable hook ``name`` in the repository's hooks folder."""
    hooks = Path(git(repo, "rev-parse", "--path-format=absolute", "--git-common-dir")) / "hooks"
    hooks.mkdir(exist_ok=True)
    hook = hooks / name
    hook.write_text("#!/bin/sh\n" + script + "\n")
    hook.chmod(0o755)


def spec_for(repo: Path | str, issue: str = "ACM-1", **fields: object) -> WorkspaceSpec:
    """The workspace of issue ``issue`` of company ``c1`` in ``repo`` (a folder, or a URL)."""
    source = {"repo_url": repo} if str(repo).startswith("file://") else {"repo_path": str(repo)}
    return WorkspaceSpec(key=f"c1/{issue}", branch=f"paperclip/{issue}", **source, **fields)  # type: ignore[arg-type]
