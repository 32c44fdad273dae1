"""The execution workspace: the git worktree an issue's runs work in (hook API 1.8).

An issue of a project works in a worktree of the project's repository, on its
own branch, kept across its runs and restarts. The prompt names it
(:attr:`paperclip_hookspecs.prompts.TaskSource.workspace`) and a provider
driver finds it in :attr:`paperclip_hookspecs.providers.TurnInput.workspace`
(it is also the turn's ``cwd``).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ExecutionWorkspace:
    """Where an issue's work happens: a git worktree on the runner host, on its own branch."""

    path: str
    """The worktree's folder on the runner host (the provider's working directory)."""
    branch: str
    """The issue's branch (``paperclip/ACM-1``): the agent commits its work here."""
    base_ref: str = ""
    """The branch it started from (``main``); empty: the repository's own HEAD branch."""
    base_commit: str = ""
    """The commit it started from, once known (empty before the first worktree exists)."""
    project: str = ""
    """The project's name."""
    repository: str = ""
    """The repository it was made from: a folder on the runner host or a clone URL."""
