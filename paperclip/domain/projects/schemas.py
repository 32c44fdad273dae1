"""Request and response bodies of the project routes."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated

import msgspec
from msgspec import UNSET, Meta, UnsetType

from paperclip.http.fields import LongText, Name
from paperclip.models import DEFAULT_BRANCH_PREFIX, DEFAULT_MERGE_STRATEGY, Project
from paperclip.wire.workspace_rules import MAX_PATH, MAX_URL

RepoPath = Annotated[
    str,
    Meta(
        min_length=1,
        max_length=MAX_PATH,
        description="An absolute folder on the runner host, inside one of the folders its "
        "PAPERCLIP_RUNNER_WORKSPACE_ROOTS names.",
    ),
]
RepoUrl = Annotated[
    str,
    Meta(
        min_length=1,
        max_length=MAX_URL,
        description="A clone URL (https, http, ssh, git, file, or user@host:path) matching a "
        "pattern of the runner host's PAPERCLIP_RUNNER_WORKSPACE_REMOTES.",
    ),
]
BranchName = Annotated[
    str,
    Meta(
        min_length=1,
        max_length=255,
        description="Letters, digits, '.', '_', '-' and '/'; no '..', '//', '.lock' or leading "
        "'.' in a part.",
    ),
]
MergeStrategyName = Annotated[
    str,
    Meta(
        max_length=20,
        description="How an issue's branch is merged into the base branch: fast_forward (the "
        "base branch moves to the branch's head; only when it has nothing the branch lacks) or "
        "merge_commit (a merge commit of the two).",
        examples=["fast_forward", "merge_commit"],
    ),
]
BranchPrefix = Annotated[
    str,
    Meta(
        max_length=100,
        description="Starts each issue's branch: <prefix><ISSUE-IDENTIFIER>; may be empty.",
    ),
]


class ProjectCreate(msgspec.Struct, forbid_unknown_fields=True):
    """Exactly one of ``repo_path`` and ``repo_url`` is given."""

    name: Name
    description: LongText = ""
    repo_path: RepoPath | None = None
    repo_url: RepoUrl | None = None
    default_branch: BranchName | None = None
    """The branch each issue's branch starts from; null: the repository's HEAD branch."""
    branch_prefix: BranchPrefix = DEFAULT_BRANCH_PREFIX
    hooks_enabled: bool = False
    """Whether the repository's git hooks run in its worktrees."""
    merge_strategy: MergeStrategyName = DEFAULT_MERGE_STRATEGY


class ProjectUpdate(msgspec.Struct, forbid_unknown_fields=True):
    """Setting one of ``repo_path`` and ``repo_url`` replaces the other."""

    name: Name | UnsetType = UNSET
    description: LongText | UnsetType = UNSET
    repo_path: RepoPath | UnsetType | None = UNSET
    repo_url: RepoUrl | UnsetType | None = UNSET
    default_branch: BranchName | UnsetType | None = UNSET
    branch_prefix: BranchPrefix | UnsetType = UNSET
    hooks_enabled: bool | UnsetType = UNSET
    merge_strategy: MergeStrategyName | UnsetType = UNSET


class ProjectOut(msgspec.Struct):
    id: uuid.UUID
    company_id: uuid.UUID
    name: str
    description: str
    repo_path: str | None
    repo_url: str | None
    default_branch: str | None
    branch_prefix: str
    hooks_enabled: bool
    merge_strategy: str
    """``fast_forward`` or ``merge_commit``."""
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, row: Project) -> ProjectOut:
        return msgspec.convert(row, cls, from_attributes=True)
