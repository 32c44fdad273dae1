"""The runner's side of execution workspaces: a turn's worktree, its reports, its release, its merge.

The git work is :mod:`paperclip.runner.workspaces`; this part ties it to the
runner protocol. A turn with a ``workspace`` works in ``<workspace dir>/<key>``:
before its provider runs, the worktree is made (or found: it is kept across
runs and restarts) under a lock held for as long as the run is hosted here, so
no two runs write one worktree at once; a ``workspace_report`` says it is
ready, and another after the turn says what the turn left (the work product).
A ``merge_workspace`` merges the issue's branch into its base branch under the
worktree's lock, as this runner's user, and is answered once per request id
(:mod:`merge_records`).
Which repositories may be used is this host's decision
(``PAPERCLIP_RUNNER_WORKSPACE_ROOTS``, ``PAPERCLIP_RUNNER_WORKSPACE_REMOTES``),
never the control plane's.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import msgspec
from paperclip_hookspecs.providers import ProcessUser, TurnInput
from paperclip_hookspecs.workspaces import ExecutionWorkspace

from paperclip.runner.workspaces.disk import sweep_run_folders, usage
from paperclip.runner.workspaces.errors import WORKSPACE_BUSY, WorkspaceError
from paperclip.runner.workspaces.git import provider_git_env
from paperclip.runner.workspaces.merge_records import MergeRecords
from paperclip.runner.workspaces.merging import Merged, MergeRefused
from paperclip.runner.workspaces.policy import WorkspacePolicy
from paperclip.runner.workspaces.worktrees import Ready, Workspaces
from paperclip.wire import messages as wire
from paperclip.wire.workspace_rules import (
    WORKSPACE_NOT_ALLOWED,
    WORKSPACE_UNAVAILABLE,
    key_problem,
)

log = logging.getLogger(__name__)

Send = Callable[[wire.Message], Awaitable[None]]
"""Send a control message now (dropped while not connected)."""
SendData = Callable[[wire.DataMessage], Awaitable[None]]
"""Number a data message, keep it until acknowledged, send it when connected."""

STATUS_SECONDS = 600.0
"""How often the disk the worktrees use is measured and reported."""
SWEEP_SECONDS = 3600.0
"""How often old run folders are looked for."""
BUSY_WAIT_SECONDS = 30.0
"""How long a turn waits for its worktree's lock (an earlier run of the issue closing)."""


def hold_workspace(host: WorkspaceHost | None, message: wire.StartTurn) -> HeldWorkspace | None:
    """The worktree ``message``'s turn works in (None: its run's folder); raises WorkspaceError."""
    if message.workspace is None:
        return None
    if host is None:
        raise WorkspaceError(WORKSPACE_UNAVAILABLE, "this runner does not make workspaces")
    return host.hold(message)


async def wait_for_lock(trees: Workspaces, key: str, stack: contextlib.ExitStack) -> None:
    """Hold the worktree's lock in ``stack``, waiting up to ``BUSY_WAIT_SECONDS`` for a run of
    the issue that is closing here; raises ``workspace_busy`` after that."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + BUSY_WAIT_SECONDS
    while True:
        try:
            stack.enter_context(trees.lock(key))
            return
        except WorkspaceError as exc:
            if exc.code != WORKSPACE_BUSY or loop.time() > deadline:
                raise
            await asyncio.sleep(0.5)  # an earlier run of the issue is closing here


@dataclass
class HeldWorkspace:
    """A hosted run's worktree: checked when its turn arrives, made before its provider runs,
    locked while the run is hosted here."""

    host: WorkspaceHost
    run_id: uuid.UUID
    spec: wire.WorkspaceSpec
    path: Path
    env: dict[str, str]
    """The provider's git environment: hooks off unless enabled, commits by the agent."""
    lock: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)
    ready: Ready | None = None
    """What ``Workspaces.ensure`` answered, once it did."""
    user: ProcessUser | None = None
    """The agent's user the provider runs as (None: the runner's): the worktree is shared."""

    @property
    def reached(self) -> list[Path]:
        """The host's folders the agent's user must reach to work here (its repository's)."""
        return [Path(self.spec.repo_path)] if self.spec.repo_path else []

    @property
    def view(self) -> ExecutionWorkspace:
        """The worktree as the provider's turn input names it."""
        return ExecutionWorkspace(
            path=str(self.path),
            branch=self.spec.branch,
            base_ref=self.spec.base_ref or "",
            base_commit=self.spec.base_commit or "",
            repository=self.spec.repo_path or self.spec.repo_url or "",
        )

    async def prepare(self, turn: TurnInput, number: int, send: SendData) -> TurnInput:
        """Lock the worktree for this run, make (or find) it, and say it is ready; the turn
        as it works there. Raises WorkspaceError."""
        await wait_for_lock(self.host.trees, self.spec.key, self.lock)
        async with self.host.key_lock(self.spec.key):
            self.ready = await self.host.trees.ensure(self.spec, self.user)
        self.path = self.ready.path
        await self.report(number, "ready", send)
        return replace(turn, cwd=str(self.path), workspace=self.view)

    async def report(self, turn: int, moment: str, send: SendData) -> None:
        """Send the worktree's state now as a ``workspace_report`` (nothing if unreadable)."""
        if self.ready is None:
            return
        try:
            state, diff, truncated = await self.host.trees.report(
                self.ready, diff_limit=self.host.diff_limit
            )
        except Exception:
            log.exception("reading the worktree of run %s failed", self.run_id)
            return
        await send(
            wire.WorkspaceReport(
                seq=0,
                run_id=self.run_id,
                turn=turn,
                moment=moment,  # type: ignore[arg-type]
                state=state,
                diff=diff,
                diff_truncated=truncated,
            )
        )

    def close(self) -> None:
        """The run is no longer hosted (its provider is gone): another run may use it."""
        self.lock.close()


class WorkspaceHost:
    """This runner's worktrees: made for turns, reported, released."""

    def __init__(
        self,
        work_dir: Path,
        policy: WorkspacePolicy,
        *,
        diff_limit: int = 262_144,
        run_retention: timedelta = timedelta(days=7),
    ) -> None:
        self.work_dir = work_dir
        self.policy = policy
        self.trees = Workspaces(work_dir, policy)
        self.diff_limit = diff_limit
        self.run_retention = run_retention
        self._keys: dict[str, asyncio.Lock] = {}
        self.merges = MergeRecords(work_dir / "merges")
        self._merging: set[uuid.UUID] = set()
        """Merge requests being worked on here: a repeat meanwhile is left to the first."""
        self._send_status: Send | None = None
        self._background: set[asyncio.Task[None]] = set()

    @property
    def directory(self) -> Path:
        return self.trees.root

    def hello(self) -> dict[str, Any]:
        """What ``hello`` says of this host's workspaces."""
        return {
            "workspace_dir": str(self.directory),
            "workspace_roots": [str(root) for root in self.policy.roots],
            "workspace_remotes": list(self.policy.remotes),
        }

    def hold(self, message: wire.StartTurn) -> HeldWorkspace:
        """The worktree a run will work in (checked, not made yet: ``prepare`` makes it)."""
        spec = message.workspace
        assert spec is not None
        if problem := key_problem(spec.key):
            raise WorkspaceError(WORKSPACE_NOT_ALLOWED, problem)
        path = self.directory / spec.key
        env = provider_git_env(spec.hooks, message.agent_name or "Paperclip agent", str(path))
        return HeldWorkspace(self, message.run_id, spec, path, env)

    def release_soon(self, message: wire.ReleaseWorkspace, send: SendData) -> None:
        """Remove an ended issue's worktree in the background; answer when done."""

        async def release() -> None:
            await send(await self.release(message))

        self._in_background(release(), "release-workspace")

    async def release(self, message: wire.ReleaseWorkspace) -> wire.WorkspaceReleased:
        """Remove an ended issue's worktree, saving what is uncommitted first; never raises."""
        try:
            if problem := key_problem(message.workspace.key):
                raise WorkspaceError(WORKSPACE_NOT_ALLOWED, problem)
            with self.trees.lock(message.workspace.key):
                async with self.key_lock(message.workspace.key):
                    released = await self.trees.release(message.workspace)
        except WorkspaceError as exc:
            log.warning("the worktree of issue %s stays: %s", message.issue_id, exc)
            return wire.WorkspaceReleased(
                seq=0, issue_id=message.issue_id, error_code=exc.code, error=str(exc)
            )
        except Exception as exc:
            log.exception("removing the worktree of issue %s failed", message.issue_id)
            return wire.WorkspaceReleased(
                seq=0,
                issue_id=message.issue_id,
                error_code="workspace_unavailable",
                error=f"{type(exc).__name__}: {exc}",
            )
        return wire.WorkspaceReleased(
            seq=0, issue_id=message.issue_id, saved_ref=released.saved_ref
        )

    def merge_soon(self, message: wire.MergeWorkspace, send: SendData) -> None:
        """Merge an issue's branch into its base branch in the background; answer when done."""
        if message.request_id in self._merging:
            return  # sent again while the first is at work: that one answers
        self._merging.add(message.request_id)

        async def merge() -> None:
            try:
                answer = await self.merge(message)
            finally:
                self._merging.discard(message.request_id)
            await send(answer)

        self._in_background(merge(), "merge-workspace")

    async def merge(self, message: wire.MergeWorkspace) -> wire.WorkspaceMerged:
        """Merge once per request (a repeat gets the answer kept); never raises."""
        if (earlier := self.merges.answer(message.request_id)) is not None:
            return earlier
        try:
            answer = await self._merge(message)
        except Exception as exc:
            log.exception("merging the branch of issue %s failed", message.issue_id)
            answer = self._merge_refused(
                message, WORKSPACE_UNAVAILABLE, f"{type(exc).__name__}: {exc}"
            )
        try:
            self.merges.save_answer(answer)
        except OSError:
            log.exception("keeping the answer to merge request %s failed", message.request_id)
        return answer

    async def _merge(self, message: wire.MergeWorkspace) -> wire.WorkspaceMerged:
        spec = message.workspace

        async def keep_intent(merged: Merged) -> None:
            await asyncio.to_thread(self.merges.save_intent, message.request_id, merged)

        try:
            if problem := key_problem(spec.key):
                raise WorkspaceError(WORKSPACE_NOT_ALLOWED, problem)
            with contextlib.ExitStack() as lock:
                await wait_for_lock(self.trees, spec.key, lock)
                async with self.key_lock(spec.key):
                    merged = await self.trees.merge(
                        spec,
                        message.strategy,
                        message.message,
                        before_update=keep_intent,
                        earlier=self.merges.intent(message.request_id),
                    )
                    report = await self._report_after(spec, merged.head)
        except MergeRefused as refused:
            return self._merge_refused(
                message,
                refused.code,
                refused.message,
                conflicts=refused.conflicts,
                files=refused.files,
            )
        except WorkspaceError as exc:
            return self._merge_refused(message, exc.code, exc.message)
        state, diff, truncated = report or (None, "", False)
        log.info(
            "merged %s into %s for issue %s (%s, %d commits)",
            spec.branch,
            spec.base_ref or "its base branch",
            message.issue_id,
            message.strategy,
            merged.merged_commits,
        )
        return wire.WorkspaceMerged(
            seq=0,
            request_id=message.request_id,
            issue_id=message.issue_id,
            status="merged",
            commit=merged.commit,
            head=merged.head,
            merged_commits=merged.merged_commits,
            state=state,
            diff=diff,
            diff_truncated=truncated,
        )

    async def _report_after(
        self, spec: wire.WorkspaceSpec, head: str
    ) -> tuple[wire.WorkspaceState, str, bool] | None:
        """The worktree's work product against the merged head, its new base (None: unread)."""
        try:
            return await self.trees.report(
                msgspec.structs.replace(spec, base_commit=head), diff_limit=self.diff_limit
            )
        except Exception:
            log.warning("reading the worktree %s after its merge failed", spec.key, exc_info=True)
            return None

    @staticmethod
    def _merge_refused(
        message: wire.MergeWorkspace,
        code: str,
        error: str,
        *,
        conflicts: list[str] | None = None,
        files: list[str] | None = None,
    ) -> wire.WorkspaceMerged:
        log.info("the merge for issue %s was refused: %s: %s", message.issue_id, code, error)
        return wire.WorkspaceMerged(
            seq=0,
            request_id=message.request_id,
            issue_id=message.issue_id,
            status="refused",
            error_code=code,
            error=error,
            conflicts=conflicts or [],
            files=files or [],
        )

    def connected(self, features: list[str], send: Send) -> None:
        """Connected to a control plane: report the disk use to one that keeps it."""
        self._send_status = send if wire.FEATURE_WORKSPACES in features else None
        self._in_background(self._report_status(), "workspace-status")

    async def housekeeping(self, hosted: Callable[[], set[str]]) -> None:
        """Until cancelled: the disk use reported now and then, old run folders removed."""
        last_sweep = -SWEEP_SECONDS
        loop = asyncio.get_running_loop()
        while True:
            if loop.time() - last_sweep >= SWEEP_SECONDS:
                last_sweep = loop.time()
                try:
                    removed = await self.sweep_runs(hosted())
                except Exception:
                    log.exception("removing old run folders failed")
                else:
                    if removed:
                        log.info("removed %d run folders past their retention", len(removed))
            await asyncio.sleep(STATUS_SECONDS)
            await self._report_status()

    async def _report_status(self) -> None:
        if self._send_status is None:
            return
        try:
            measured = await asyncio.to_thread(usage, self.work_dir)
            await self._send_status(
                wire.RunnerStatus(
                    workspace_bytes=measured.workspace_bytes,
                    workspace_count=measured.workspace_count,
                    mirror_bytes=measured.mirror_bytes,
                )
            )
        except Exception:
            log.exception("measuring the workspaces' disk use failed")

    async def sweep_runs(self, keep: set[str]) -> list[str]:
        """Remove run folders untouched past the retention (not of runs hosted now), and the
        merge records as old."""
        await asyncio.to_thread(self.merges.sweep, self.run_retention, datetime.now(UTC))
        return await asyncio.to_thread(
            sweep_run_folders,
            self.work_dir / "runs",
            self.run_retention,
            keep,
            datetime.now(UTC),
        )

    def _in_background(self, work: Coroutine[Any, Any, None], name: str) -> None:
        task = asyncio.create_task(work, name=name)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def key_lock(self, key: str) -> asyncio.Lock:
        """Making and removing one worktree never overlap in this process."""
        return self._keys.setdefault(key, asyncio.Lock())
