"""An issue's execution workspace: where its worktree lives, its work product, its diff."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal

import msgspec
from litestar import Controller, delete, get
from litestar.status_codes import HTTP_200_OK

from paperclip.api.access import Access, access
from paperclip.api.errors import error_responses
from paperclip.api.issue_refs import ISSUE_IN_PATH
from paperclip.services.actor import Actor
from paperclip.services.workspaces import WorkspaceService, WorkspaceView

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
