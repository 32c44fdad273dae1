"""Fixtures of the runner's workspace tests: a folder of repositories, a runner's workspaces."""

from __future__ import annotations

from pathlib import Path

import pytest

from paperclip.runner.workspaces.policy import WorkspacePolicy
from paperclip.runner.workspaces.worktrees import Workspaces
from tests.support.git_repos import make_repo


@pytest.fixture
def repos(tmp_path: Path) -> Path:
    """The folder this runner host allows repositories in."""
    folder = tmp_path / "repos"
    folder.mkdir()
    return folder


@pytest.fixture
def remotes(tmp_path: Path) -> Path:
    """A folder of bare repositories the host may clone from (``file://`` URLs)."""
    folder = tmp_path / "remotes"
    folder.mkdir()
    return folder


@pytest.fixture
def policy(repos: Path, remotes: Path) -> WorkspacePolicy:
    return WorkspacePolicy.build([repos], [f"file://{remotes}/*"])


@pytest.fixture
def workspaces(tmp_path: Path, policy: WorkspacePolicy) -> Workspaces:
    return Workspaces(tmp_path / "runner", policy)


@pytest.fixture
def repo(repos: Path) -> Path:
    """A project repository on ``main`` with a few files."""
    return make_repo(repos / "app", {"a.txt": "one\ntwo\nthree\n", "b.txt": "bee\n"})
