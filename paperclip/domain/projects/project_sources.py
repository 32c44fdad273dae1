"""A project's repository source and branches, checked before they are stored.

The shape of each value is checked by the rules both sides share
(``paperclip.wire.workspace_rules``); then the door check: where runner hosts
have said which folders (``PAPERCLIP_RUNNER_WORKSPACE_ROOTS``) or clone URLs
(``PAPERCLIP_RUNNER_WORKSPACE_REMOTES``) they allow, a source none of them
allows is refused now rather than at the issue's first run. Where no runner
has said anything, the source is accepted: the runner checks again when it
makes the worktree, as it always does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from paperclip.errors import InvalidInputError, field_details
from paperclip.models import Runner
from paperclip.wire.messages import MERGE_STRATEGIES
from paperclip.wire.workspace_rules import (
    REMOTES_SETTING,
    ROOTS_SETTING,
    WORKSPACE_NOT_ALLOWED,
    allowed_remote,
    branch_problem,
    path_problem,
    prefix_problem,
    under_roots,
    url_problem,
)


@dataclass(frozen=True, slots=True)
class Source:
    """Where a project's repository comes from: exactly one of the two is set."""

    repo_path: str | None
    repo_url: str | None


def source_after(current: Source | None, changes: dict[str, Any]) -> Source:
    """The source a create (``current`` None) or a change asks for.

    Setting one kind of source replaces the other: ``{"repo_url": ...}`` on a
    project with a folder moves it to the URL, without a ``"repo_path": null``.
    """
    path = changes.get("repo_path", current.repo_path if current else None)
    url = changes.get("repo_url", current.repo_url if current else None)
    if changes.get("repo_path") is not None and "repo_url" not in changes:
        url = None
    if changes.get("repo_url") is not None and "repo_path" not in changes:
        path = None
    return Source(path, url)


def check_source(source: Source) -> None:
    """Raise 422 unless the source is exactly one well-formed folder or clone URL."""
    if (source.repo_path is None) == (source.repo_url is None):
        message = (
            "a project has exactly one source: repo_path (a folder on the runner host) "
            "or repo_url (a clone URL)"
        )
        raise InvalidInputError(
            message,
            code="invalid_project_source",
            details=field_details("repo_path", message) + field_details("repo_url", message),
        )
    if source.repo_path is not None and (problem := path_problem(source.repo_path)):
        raise InvalidInputError(problem, code="invalid_repo_path", field="repo_path")
    if source.repo_url is not None and (problem := url_problem(source.repo_url)):
        raise InvalidInputError(problem, code="invalid_repo_url", field="repo_url")


def check_branches(changes: dict[str, Any]) -> None:
    """Raise 422 if ``branch_prefix`` or ``default_branch`` (when given) is not a branch name."""
    prefix = changes.get("branch_prefix")
    if prefix is not None and (problem := prefix_problem(prefix)):
        raise InvalidInputError(
            f"branch_prefix: {problem}", code="invalid_branch_prefix", field="branch_prefix"
        )
    branch = changes.get("default_branch")
    if branch is not None and (problem := branch_problem(branch)):
        raise InvalidInputError(
            f"default_branch: {problem}", code="invalid_default_branch", field="default_branch"
        )


def check_merge_strategy(changes: dict[str, Any]) -> None:
    """Raise 422 if ``merge_strategy`` (when given) is not one the runners know."""
    strategy = changes.get("merge_strategy")
    if strategy is not None and strategy not in MERGE_STRATEGIES:
        raise InvalidInputError(
            f"merge_strategy: {strategy!r} is not one of {', '.join(MERGE_STRATEGIES)}",
            code="invalid_merge_strategy",
            field="merge_strategy",
        )


async def check_door(session: AsyncSession, source: Source) -> None:
    """Raise ``422 workspace_not_allowed`` when runners said what they allow and none allows this.

    Only the runners connected now count: what a runner that is away said may
    be stale (its host may be changing its settings, as a restart does), and a
    revoked one will run nothing. With none connected the control plane cannot
    know, and the runner checks when it makes the worktree. The message names
    the runner setting, never the folders or patterns of any host.
    """
    rows = (
        await session.execute(
            select(Runner.workspace_roots, Runner.workspace_remotes).where(
                Runner.revoked_at.is_(None), Runner.replica.is_not(None)
            )
        )
    ).all()
    if source.repo_path is not None:
        said = [_strings(roots) for roots, _ in rows if isinstance(roots, list)]
        if said and not any(under_roots(source.repo_path, roots) for roots in said):
            raise InvalidInputError(
                f"no runner host allows repositories in {source.repo_path!r}: a runner takes "
                f"repositories only from the folders its {ROOTS_SETTING} names; add this folder "
                "(or one above it) there on the host that should work in it",
                code=WORKSPACE_NOT_ALLOWED,
                field="repo_path",
            )
    if source.repo_url is not None:
        said = [_strings(remotes) for _, remotes in rows if isinstance(remotes, list)]
        if said and not any(allowed_remote(source.repo_url, patterns) for patterns in said):
            raise InvalidInputError(
                f"no runner host allows cloning {source.repo_url!r}: a runner clones only URLs "
                f"that match a pattern of its {REMOTES_SETTING}; add one there on the host "
                "that should work in it",
                code=WORKSPACE_NOT_ALLOWED,
                field="repo_url",
            )


def _strings(values: list[Any]) -> list[str]:
    return [value for value in values if isinstance(value, str)]
