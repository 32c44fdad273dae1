"""Which repository folders and clone URLs this runner host lets a workspace come from.

The host decides, as it does for launch profiles: ``PAPERCLIP_RUNNER_WORKSPACE_ROOTS``
names the folders repositories may live in, ``PAPERCLIP_RUNNER_WORKSPACE_REMOTES``
the clone URL patterns. The control plane checks the same static rules at the
door; the runner checks them again, then what only its host can see: where a
path leads once its symlinks are resolved.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from paperclip.runner.workspaces.errors import WorkspaceError, scrub
from paperclip.wire.workspace_rules import (
    REMOTES_SETTING,
    ROOTS_SETTING,
    WORKSPACE_NOT_ALLOWED,
    allowed_remote,
    path_problem,
    under_roots,
    url_problem,
)


def _refused(message: str) -> WorkspaceError:
    return WorkspaceError(WORKSPACE_NOT_ALLOWED, message)


@dataclass(frozen=True, slots=True)
class WorkspacePolicy:
    """The host's roots (absolute folders) and remote patterns (shell-style, ``*`` and ``?``)."""

    roots: tuple[Path, ...] = ()
    remotes: tuple[str, ...] = ()

    @classmethod
    def build(cls, roots: Iterable[str | Path], remotes: Iterable[str]) -> WorkspacePolicy:
        """From the settings' lists (``runner_workspace_roots``, ``runner_workspace_remotes``)."""
        return cls(
            roots=tuple(Path(str(root)) for root in roots if str(root).strip()),
            remotes=tuple(pattern for pattern in remotes if pattern.strip()),
        )

    def _roots_text(self) -> str:
        return f"{ROOTS_SETTING} on the runner host: {', '.join(map(str, self.roots))}"

    def check_repo_path(self, path: str) -> Path:
        """The repository folder ``path`` resolves to; raises ``workspace_not_allowed``.

        Refused: a path breaking the static rules, one outside every root, and
        one inside a root whose symlinks lead out of every root.
        """
        problem = path_problem(path)
        if problem:
            raise _refused(problem)
        if not self.roots:
            raise _refused(
                f"this runner allows no repository folders: set {ROOTS_SETTING} on the runner "
                "host to the folders repositories may live in (comma-separated)"
            )
        if not under_roots(path, map(str, self.roots)):
            raise _refused(
                f"{path} is not under any folder this runner allows ({self._roots_text()})"
            )
        real = os.path.realpath(path)
        if not under_roots(real, (os.path.realpath(root) for root in self.roots)):
            raise _refused(
                f"{path} leads through a symlink to {real}, which is not under any folder "
                f"this runner allows ({self._roots_text()})"
            )
        return Path(real)

    def check_remote(self, url: str) -> str:
        """``url`` itself when this host may clone it; raises ``workspace_not_allowed``."""
        problem = url_problem(url)
        if problem:
            raise _refused(scrub(problem))
        if not self.remotes:
            raise _refused(
                f"this runner clones no repositories: set {REMOTES_SETTING} on the runner host "
                "to the clone URL patterns it may fetch from (comma-separated, shell-style: "
                "https://github.com/acme/*)"
            )
        if not allowed_remote(url, self.remotes):
            raise _refused(
                f"{scrub(url)} matches none of the clone URL patterns this runner allows "
                f"({REMOTES_SETTING} on the runner host: {', '.join(self.remotes)})"
            )
        return url
