"""An issue's execution workspace: where its worktree lives, its work product, its diff, its merge."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal

import msgspec
from litestar import Controller, delete, get, post
from litestar.status_codes import HTTP_200_OK

from paperclip.common.actor import Actor
from paperclip.domain.issues.issue_refs import ISSUE_IN_PATH
from paperclip.domain.workspaces.merges import Merges
from paperclip.domain.workspaces.workspaces import WorkspaceService, WorkspaceView
from paperclip.http.access import Access, access
from paperclip.http.errors import error_responses

WorkspaceStatusName = Literal["requested", "ready", "releasing", "released"]


class FileChangeOut(msgspec.Struct):
    path: str
    status: str
    """git's letter against the base commit (``A``, ``M``, ``D``, ``R``...); ``?``: untracked."""
    added: int | None = None
    deleted: int | None = None


class WorkProductOut(msgspec.Struct):
    """What the worktree held after the issue's latest turn (or when it was made)."""

    head: str
    ahead: int
    """Commits on the branch since the base commit."""
    files: list[FileChangeOut]
    files_truncated: bool
    untracked: int
    dirty: bool
    """Uncommitted changes in the worktree."""


class WorkspaceOut(msgspec.Struct):
    issue_id: uuid.UUID
    company_id: uuid.UUID
    project_id: uuid.UUID | None
    project_name: str | None
    status: WorkspaceStatusName
    runner_id: uuid.UUID | None
    runner_name: str | None
    """The runner host holding the worktree: the issue's runs go there."""
    path: str | None
    branch: str
    base_ref: str | None
    base_commit: str | None
    head_commit: str | None
    repo_path: str | None
    repo_url: str | None
    work_product: WorkProductOut | None
    diff_truncated: bool
    state_at: datetime | None
    state_run_id: uuid.UUID | None
    disk_bytes: int | None
    release_after: datetime | None
    """When its runner will remove it (the issue ended and its retention runs)."""
    released_at: datetime | None
    saved_ref: str | None
    """Where its uncommitted changes were saved when it was removed."""
    error_code: str | None
    error_message: str | None
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, view: WorkspaceView) -> WorkspaceOut:
        row = view.row
        fields: dict[str, Any] = {
            name: getattr(row, name)
            for name in cls.__struct_fields__
            if name not in ("project_name", "runner_name", "work_product")
        }
        product = msgspec.convert(row.state, WorkProductOut) if row.state else None
        return cls(
            **fields,
            project_name=view.project_name,
            runner_name=view.runner_name,
            work_product=product,
        )


class DiffOut(msgspec.Struct):
    """The worktree's changes against its base commit, committed or not, as ``git diff`` shows them."""

    diff: str
    truncated: bool
    """Cut at the runner's limit (``PAPERCLIP_RUNNER_DIFF_LIMIT_BYTES``)."""
    base_commit: str | None
    head_commit: str | None
    state_at: datetime | None


class MergeIn(msgspec.Struct, forbid_unknown_fields=True):
    close_issue: bool = False
    """Set the issue ``done`` in the same transaction as the merge's activity entry."""


class MergeOut(msgspec.Struct):
    """The branch merged into its base branch by the runner holding the worktree."""

    status: Literal["merged"]
    strategy: Literal["fast_forward", "merge_commit"]
    branch: str
    base_ref: str
    commit: str
    """The base branch's commit after the merge."""
    merged_commits: int
    """Commits of the branch the base branch did not have."""
    issue_status: str
    """The issue's status now (``done`` when ``close_issue`` was asked)."""


class WorkspaceController(Controller):
    path = "/companies/{company_id:uuid}/issues/{issue_id:str}/workspace"
    tags = ["workspaces"]
    dependencies = ISSUE_IN_PATH

    @get("/", opt=access(Access.READ), responses=error_responses(404))
    async def get_workspace(
        self, company_id: uuid.UUID, issue_uuid: uuid.UUID, workspaces: WorkspaceService
    ) -> WorkspaceOut:
        """The issue's worktree: its runner host, folder, branch, base, and latest work product.
        ``404 workspace_not_found`` for an issue whose runs never had one."""
        return WorkspaceOut.of(await workspaces.get(company_id, issue_uuid))

    @get("/diff", opt=access(Access.READ), responses=error_responses(404))
    async def get_diff(
        self, company_id: uuid.UUID, issue_uuid: uuid.UUID, workspaces: WorkspaceService
    ) -> DiffOut:
        """The latest work product's diff against the base commit (empty before the first turn)."""
        row = (await workspaces.get(company_id, issue_uuid)).row
        return DiffOut(
            diff=row.diff or "",
            truncated=row.diff_truncated,
            base_commit=row.base_commit,
            head_commit=row.head_commit,
            state_at=row.state_at,
        )

    @delete(
        "/",
        status_code=HTTP_200_OK,
        opt=access(Access.MANAGE),
        responses=error_responses(404, 409),
    )
    async def forget_workspace(
        self,
        company_id: uuid.UUID,
        issue_uuid: uuid.UUID,
        workspaces: WorkspaceService,
        actor: Actor,
    ) -> WorkspaceOut:
        """Forget the issue's worktree (its runner host is gone for good, say): the next run
        makes a new one on any runner; the old one and its branch stay on their host.
        ``409 run_active`` while a run of the issue is active."""
        return WorkspaceOut.of(await workspaces.forget(actor, company_id, issue_uuid))

    @post(
        "/merge",
        status_code=HTTP_200_OK,
        opt=access(Access.WRITE),
        responses=error_responses(404, 409, 503, 504),
        description="Merge the issue's branch into the branch it started from (its project's "
        "default branch, or its parent issue's branch: docs/company.md), by the runner holding "
        "the worktree, with the project's merge_strategy; waits for the runner's "
        "answer (PAPERCLIP_MERGE_WAIT_SECONDS, 60). The same request again, for the same "
        "branch head, answers the first merge. 409 (nothing changed): ``merge_conflict`` "
        "(with ``conflicts``), ``nothing_to_merge``, ``not_fast_forward``, "
        "``base_checkout_dirty`` (with ``files``), ``run_active``, ``workspace_not_ready``, "
        "``merge_not_supported`` (a clone URL's project, or an older runner), or a "
        "workspace error of the runner's (``workspace_not_allowed``, "
        "``workspace_unavailable``, ``workspace_busy``); 404 ``workspace_not_found``; 503 "
        "``runner_unavailable``; 504 ``merge_timeout`` (ask again for the result).",
    )
    async def merge_workspace(
        self,
        company_id: uuid.UUID,
        issue_uuid: uuid.UUID,
        merges: Merges,
        actor: Actor,
        data: MergeIn | None = None,
    ) -> MergeOut:
        """Merge the issue's branch into its base branch (see docs/workspaces.md)."""
        close = data.close_issue if data is not None else False
        merged = await merges.merge(actor, company_id, issue_uuid, close_issue=close)
        return MergeOut(
            status="merged",
            strategy=merged.strategy,  # type: ignore[arg-type]
            branch=merged.branch,
            base_ref=merged.base_ref,
            commit=merged.commit,
            merged_commits=merged.merged_commits,
            issue_status=merged.issue_status,
        )
