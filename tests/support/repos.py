"""Real git repositories for tests: made in a folder, read with git itself."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.invalid",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.invalid",
}


def git(repo: Path, *args: str, check: bool = True) -> str:
    """Run git in ``repo`` with no user or system configuration; its output, stripped."""
    done = subprocess.run(
        ["git", "-C", str(repo), *args],
        env={**os.environ, **ENV},
        capture_output=True,
        text=True,
        check=False,
    )
    if check and done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {done.stderr}")
    return done.stdout.strip()


def make_repo(path: Path, files: dict[str, str] | None = None, *, branch: str = "main") -> str:
    """A repository at ``path`` with one commit of ``files`` on ``branch``; that commit."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", branch)
    for name, text in (files or {"README.md": "# App\n"}).items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "Initial commit")
    return git(path, "rev-parse", "HEAD")


def worktrees(repo: Path) -> list[str]:
    """The worktrees git knows of ``repo`` (its own folder first)."""
    listing = git(repo, "worktree", "list", "--porcelain")
    return [line.split(" ", 1)[1] for line in listing.splitlines() if line.startswith("worktree ")]
