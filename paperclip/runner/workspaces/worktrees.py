"""An issue's git worktree on the runner host: made once, kept across runs and restarts.

Layout under the runner's work dir (every folder 0700; passable by others where an agent's
user works in a worktree, which is then shared with it: :mod:`sharing`)::

    workspaces/<key>/          the worktrees (``<company id>/<ISSUE-IDENTIFIER>``)
    workspaces/.staging/       worktrees being made, moved into place when whole
    workspaces/.orphaned/      folders found where a worktree belongs, moved aside (never deleted)
    workspaces/.locks/         lock files: one per worktree, one per repository
    mirrors/<sha256>.git       bare mirrors of clone URLs
    git-home/                  the empty HOME git runs with

Making a worktree is idempotent and survives a SIGKILL at any step: a branch
made is kept, a half-made worktree in ``.staging`` is removed and made again,
a worktree renamed into place is repaired, and one already in place is reused
without touching its files (an interrupted turn's uncommitted edits survive).
The steps that change a repository's worktrees run under that repository's
lock; a caller holds :meth:`Workspaces.lock` of the key while it works in it.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from paperclip_hookspecs.providers import ProcessUser

from paperclip.failpoints import failpoint
from paperclip.runner.workspaces import merging, sharing
from paperclip.runner.workspaces import release as releasing
from paperclip.runner.workspaces import report as reporting
from paperclip.runner.workspaces.errors import WORKSPACE_BUSY, WorkspaceError, scrub
from paperclip.runner.workspaces.folders import (
    admin_dir,
    is_dir,
    occupied,
    private_dir,
    remove,
    same,
)
from paperclip.runner.workspaces.git import FETCH_TIMEOUT, GitFailed, GitResult, run_git
from paperclip.runner.workspaces.locks import held, try_lock, waiting_lock
from paperclip.runner.workspaces.mirrors import clone_mirror, fetch_branch, mirror_name
from paperclip.runner.workspaces.policy import WorkspacePolicy
from paperclip.wire.messages import MergeStrategy, WorkspaceSpec, WorkspaceState
from paperclip.wire.workspace_rules import (
    MERGE_NOT_SUPPORTED,
    WORKSPACE_NOT_ALLOWED,
    WORKSPACE_UNAVAILABLE,
    branch_problem,
    key_problem,
)

SOURCE_LOCK_TIMEOUT = FETCH_TIMEOUT + 60
"""How long making a worktree waits while another one of the same repository is made."""
_HEX = frozenset("0123456789abcdef")


def _unavailable(message: str) -> WorkspaceError:
    return WorkspaceError(WORKSPACE_UNAVAILABLE, message)


def _not_allowed(message: str) -> WorkspaceError:
    return WorkspaceError(WORKSPACE_NOT_ALLOWED, message)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:32]


@dataclass(frozen=True, slots=True)
class Source:
    """The repository worktrees are made from: a folder on the host, or the mirror of a URL."""

    path: Path
    url: str | None = None
    """The clone URL of a mirror (it may carry credentials: never shown unscrubbed)."""

    @property
    def name(self) -> str:
        return scrub(self.url) if self.url else str(self.path)


@dataclass(frozen=True, slots=True)
class Ready:
    """A worktree ready for a turn."""

    path: Path
    branch: str
    base_ref: str
    base_commit: str
    head: str
    created: bool
    """Made by this call (False: an existing worktree reused as it was)."""


@dataclass(frozen=True, slots=True)
class Released:
    saved_ref: str | None
    """The ref uncommitted changes were saved to first, if there were any."""
    removed: bool


class Workspaces:
    """The worktrees of one runner host, under ``work_dir``, from repositories ``policy`` allows."""

    def __init__(self, work_dir: Path, policy: WorkspacePolicy) -> None:
        self.work_dir = Path(os.path.realpath(work_dir))
        self.policy = policy
        self.root = self.work_dir / "workspaces"
        self.staging = self.root / ".staging"
        self.orphaned = self.root / ".orphaned"
        self.locks = self.root / ".locks"
        self.mirrors = self.work_dir / "mirrors"
        self.home = self.work_dir / "git-home"

    # folders and locks

    def _folders(self) -> None:
        self.work_dir.mkdir(parents=True, exist_ok=True)
        for folder in (self.root, self.staging, self.orphaned, self.locks, self.mirrors, self.home):
            private_dir(folder)

    def path_of(self, key: str) -> Path:
        """The worktree folder of ``key`` (its parents made, 0700); ``workspace_not_allowed``
        for a key breaking the rules or a parent leading out of the workspaces folder."""
        if problem := key_problem(key):
            raise _not_allowed(problem)
        self._folders()
        parts = key.split("/")
        folder = self.root
        for part in parts[:-1]:
            folder = folder / part
            if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
                raise _not_allowed(f"the workspace {key} leads out of the workspaces folder")
            private_dir(folder)
            if (folder / ".git").exists():
                raise _not_allowed(f"the workspace {key} would lie inside another worktree")
        path = folder / parts[-1]
        inside = os.path.realpath(path.parent)
        if inside != str(self.root) and not inside.startswith(f"{self.root}/"):
            raise _not_allowed(f"the workspace {key} leads out of the workspaces folder")
        return path

    @contextlib.contextmanager
    def lock(self, key: str) -> Iterator[None]:
        """Hold ``key``'s worktree for one writer (a run's turn); ``workspace_busy`` if held.

        Non-blocking, and exclusive across runner processes on this host.
        """
        if problem := key_problem(key):
            raise _not_allowed(problem)
        self._folders()
        fd = try_lock(self.locks / f"{_digest(key)}.lock")
        if fd is None:
            raise WorkspaceError(
                WORKSPACE_BUSY,
                f"the worktree {key} is in use by another run on this runner host; "
                "it is free again when that run's turn ends",
            )
        with held(fd):
            yield

    @contextlib.asynccontextmanager
    async def _source_lock(self, source: Source) -> AsyncIterator[None]:
        name = f"source-{_digest(str(source.path))}.lock"
        async with waiting_lock(self.locks / name, SOURCE_LOCK_TIMEOUT) as taken:
            if not taken:
                raise _unavailable(
                    f"another worktree of {source.name} took more than "
                    f"{SOURCE_LOCK_TIMEOUT:.0f} s to make; try again"
                )
            yield

    async def _git(self, args: list[str], cwd: Path, **options: Any) -> GitResult:
        return await run_git(args, cwd=cwd, home=self.home, **options)

    # the repository

    async def _source(self, spec: WorkspaceSpec, *, clone: bool) -> Source | None:
        """The spec's repository, checked; a URL's mirror cloned when missing and ``clone``
        (None: not cloned)."""
        if (spec.repo_path is None) == (spec.repo_url is None):
            raise _not_allowed("a workspace names a repository folder or a clone URL: one of them")
        if spec.repo_path is not None:
            path = self.policy.check_repo_path(spec.repo_path)
            if not is_dir(path):
                raise _unavailable(
                    f"the repository folder {path} does not exist on this runner host"
                )
            try:
                # The ceiling: a folder inside some other repository is not that repository.
                await self._git(
                    ["rev-parse", "--git-dir"],
                    path,
                    env={"GIT_CEILING_DIRECTORIES": str(path.parent)},
                )
            except GitFailed as failed:
                raise failed.unavailable(f"{path} is not a git repository") from None
            return Source(path)
        url = self.policy.check_remote(spec.repo_url or "")
        self._folders()
        source = Source(self.mirrors / mirror_name(url), url)
        if is_dir(source.path):
            return source
        if not clone:
            return None
        async with self._source_lock(source):
            if not is_dir(source.path):
                try:
                    await clone_mirror(self.mirrors, url, self.home)
                except GitFailed as failed:
                    raise failed.unavailable(f"could not clone {source.name}") from None
        return source

    async def _base_ref(self, source: Source, spec: WorkspaceSpec) -> str:
        if spec.base_ref is not None:
            return spec.base_ref
        head = await self._git(
            ["symbolic-ref", "--quiet", "--short", "HEAD"], source.path, check=False
        )
        if head.returncode != 0 or not head.text:
            raise _unavailable(
                f"the HEAD of {source.name} is not on a branch: name the project's base branch"
            )
        return head.text

    async def _commit(self, cwd: Path, rev: str) -> str | None:
        found = await self._git(
            ["rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}"],
            cwd,
            check=False,
        )
        return found.text if found.returncode == 0 and found.text else None

    async def _recorded_base(self, cwd: Path, spec: WorkspaceSpec) -> str | None:
        """The spec's base commit, when it names one this repository has."""
        given = (spec.base_commit or "").lower()
        if not 7 <= len(given) <= 64 or not set(given) <= _HEX:
            return None
        return await self._commit(cwd, given)

    async def _kept_base(self, cwd: Path, spec: WorkspaceSpec, base_ref: str, tip: str) -> str:
        """The base of a branch made earlier: recorded, or where it left its base branch."""
        if recorded := await self._recorded_base(cwd, spec):
            return recorded
        base = await self._commit(cwd, f"refs/heads/{base_ref}")
        if base is None:
            raise _unavailable(f"the base branch {base_ref} does not exist in {cwd}")
        fork = await self._git(["merge-base", base, tip], cwd, check=False)
        return fork.text if fork.returncode == 0 and fork.text else base

    # the worktree

    async def _adopt(self, path: Path, source: Source) -> bool:
        """Whether ``path`` is a worktree of ``source`` (repaired if its links were stale)."""
        admin = admin_dir(path)
        if admin is None:
            return False
        common = await self._git(
            ["rev-parse", "--path-format=absolute", "--git-common-dir"], source.path
        )
        if not same(admin.parent, Path(common.text) / "worktrees") or not is_dir(admin):
            return False
        await self._git(["worktree", "repair", "--", str(path)], source.path, check=False)
        # Left locked by a crash while it was made (a worktree not locked says so: ignored).
        await self._git(["worktree", "unlock", "--", str(path)], source.path, check=False)
        mine = await self._git(
            ["rev-parse", "--path-format=absolute", "--git-common-dir", "--show-toplevel"],
            path,
            check=False,
        )
        lines = mine.text.splitlines()
        return (
            mine.returncode == 0
            and len(lines) == 2
            and same(Path(lines[0]), Path(common.text))
            and same(Path(lines[1]), path)
        )

    def _orphan(self, path: Path, key: str) -> Path:
        """Move whatever is at ``path`` aside under ``.orphaned`` (never deleted)."""
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        target = self.orphaned / f"{stamp}-{uuid.uuid4().hex[:6]}" / key
        parent = self.orphaned
        for part in target.relative_to(self.orphaned).parts[:-1]:
            parent = parent / part
            private_dir(parent)
        os.rename(path, target)
        return target

    async def _clean_staging(self, key: str, source: Source) -> None:
        """Remove this key's half-made worktrees (a fresh checkout, never anyone's work)."""
        leftovers = await asyncio.to_thread(sorted, self.staging.glob(f"{_digest(key)}.*"))
        for leftover in leftovers:
            # Made locked (see _ensure): unlocked first, or prune would keep its entry.
            await self._git(["worktree", "unlock", "--", str(leftover)], source.path, check=False)
            await asyncio.to_thread(remove, leftover)
        if leftovers:
            await self._git(["worktree", "prune"], source.path)

    async def ensure(self, spec: WorkspaceSpec, user: ProcessUser | None = None) -> Ready:
        """The worktree of ``spec``, made on first use, repaired or reused as it is after that;
        shared with ``user`` (the agent's user: see :mod:`sharing`) when given.

        Raises :class:`WorkspaceError`: ``workspace_not_allowed`` for what the host
        refuses, ``workspace_unavailable`` for a repository it cannot use.
        """
        for name in (spec.branch, spec.base_ref):
            if name is not None and (problem := branch_problem(name)):
                raise _not_allowed(problem)
        if spec.base_ref == spec.branch:
            raise _not_allowed(f"the issue's branch {spec.branch} cannot be its own base branch")
        path = self.path_of(spec.key)
        source = await self._source(spec, clone=True)
        assert source is not None
        async with self._source_lock(source):
            try:
                ready = await self._ensure(spec, source, path)
                if user is not None:
                    admin = admin_dir(ready.path)
                    if admin is None:
                        raise _unavailable(f"the worktree {ready.path} has no git folder")
                    passing = [self.work_dir, self.root]
                    passing += [p for p in path.parents if self.root in p.parents]
                    if source.url is not None:
                        passing.append(self.mirrors)
                    await sharing.share(self._git, source.path, admin, ready.path, user, passing)
                return ready
            except GitFailed as failed:
                raise failed.unavailable(f"could not make the worktree {spec.key}") from None

    async def _ensure(self, spec: WorkspaceSpec, source: Source, path: Path) -> Ready:
        await self._clean_staging(spec.key, source)
        if await self._adopt(path, source):
            head = await self._git(["rev-parse", "HEAD"], path)
            base_ref = await self._base_ref(source, spec)
            base = await self._kept_base(path, spec, base_ref, head.text)
            return Ready(path, spec.branch, base_ref, base, head.text, created=False)
        if occupied(path):
            self._orphan(path, spec.key)
        await self._git(["worktree", "prune"], source.path)  # frees a branch a lost folder held
        base_ref = await self._base_ref(source, spec)
        if source.url is not None:
            try:
                await fetch_branch(source.path, source.url, base_ref, self.home)
            except GitFailed as failed:
                raise failed.unavailable(
                    f"could not fetch the branch {base_ref} of {source.name}"
                ) from None
        tip = await self._commit(source.path, f"refs/heads/{spec.branch}")
        if tip is None:
            base_tip = await self._commit(source.path, f"refs/heads/{base_ref}")
            if base_tip is None:
                raise _unavailable(f"the base branch {base_ref} does not exist in {source.name}")
            base = await self._recorded_base(source.path, spec) or base_tip
            await self._git(["branch", "--no-track", "--", spec.branch, base], source.path)
            failpoint("runner.workspace.after_branch")
        else:
            base = await self._kept_base(source.path, spec, base_ref, tip)
        staging = self.staging / f"{_digest(spec.key)}.{uuid.uuid4().hex[:8]}"
        # Locked until it is in place and repaired: a `git worktree prune` meanwhile (another
        # issue's, or a person's) would otherwise drop a worktree whose folder just moved.
        await self._git(
            ["worktree", "add", "--quiet", "--lock", "--", str(staging), spec.branch],
            source.path,
            hooks=spec.hooks,
        )
        failpoint("runner.workspace.after_add")
        os.chmod(staging, 0o700)
        os.rename(staging, path)
        failpoint("runner.workspace.after_move")  # in place; git still knows it as staged
        await self._git(["worktree", "repair", "--", str(path)], source.path)
        await self._git(["worktree", "unlock", "--", str(path)], source.path)
        head = await self._git(["rev-parse", "HEAD"], path)
        return Ready(path, spec.branch, base_ref, base, head.text, created=True)

    # what it holds, and its end

    async def report(
        self,
        ready_or_spec: Ready | WorkspaceSpec,
        *,
        diff_limit: int = 262_144,
        files_limit: int = 500,
    ) -> tuple[WorkspaceState, str, bool]:
        """The worktree's work product against its base: its state, its diff and whether the
        diff was cut at ``diff_limit`` bytes. Changes nothing in the worktree."""
        where = ready_or_spec.path if isinstance(ready_or_spec, Ready) else ready_or_spec.key
        self._folders()
        try:
            if isinstance(ready_or_spec, Ready):
                ready = ready_or_spec
            else:
                ready = await self._existing(ready_or_spec)
            return await reporting.work_product(
                self._git,
                ready.path,
                base_ref=ready.base_ref,
                base_commit=ready.base_commit,
                diff_limit=diff_limit,
                files_limit=files_limit,
                scratch=self.staging,
            )
        except GitFailed as failed:
            raise failed.unavailable(f"could not read the worktree {where}") from None

    async def _existing(self, spec: WorkspaceSpec) -> Ready:
        path = self.path_of(spec.key)
        source = await self._source(spec, clone=False)
        if source is None:
            raise _unavailable(f"there is no worktree {spec.key} on this runner host")
        async with self._source_lock(source):
            if not await self._adopt(path, source):
                raise _unavailable(f"there is no worktree {spec.key} on this runner host")
        head = await self._git(["rev-parse", "HEAD"], path)
        base_ref = await self._base_ref(source, spec)
        base = await self._kept_base(path, spec, base_ref, head.text)
        return Ready(path, spec.branch, base_ref, base, head.text, created=False)

    async def release(self, spec: WorkspaceSpec) -> Released:
        """Remove the worktree, its uncommitted changes saved to a ref first; the branch stays.

        Idempotent: a worktree already gone is ``removed`` with nothing saved, and a
        save a crash left behind is found again instead of made twice.
        """
        if problem := branch_problem(spec.branch):
            raise _not_allowed(problem)
        path = self.path_of(spec.key)
        source = await self._source(spec, clone=False)
        if source is None:  # its mirror is gone, so is any worktree of it
            if occupied(path):
                self._orphan(path, spec.key)
            return Released(saved_ref=None, removed=True)
        async with self._source_lock(source):
            if not await self._adopt(path, source):
                if occupied(path):
                    self._orphan(path, spec.key)
                return Released(saved_ref=None, removed=True)
            try:
                saved = await releasing.save_uncommitted(
                    self._git, path, spec.branch, scratch=self.staging
                )
                failpoint("runner.workspace.release.after_save")
                await releasing.remove_worktree(self._git, source.path, path)
            except GitFailed as failed:
                raise failed.unavailable(f"could not release the worktree {spec.key}") from None
        return Released(saved_ref=saved, removed=True)

    async def merge(
        self,
        spec: WorkspaceSpec,
        strategy: MergeStrategy,
        message: str,
        before_update: merging.BeforeUpdate | None = None,
        earlier: merging.Merged | None = None,
    ) -> merging.Merged:
        """Merge the spec's branch into its base branch in the host repository (see
        :mod:`merging`); the caller holds the worktree's lock. A clone URL's mirror is refused:
        pushing to the remote is not the runner's business."""
        if spec.repo_path is None:
            raise merging.MergeRefused(
                MERGE_NOT_SUPPORTED,
                "this project's repository is a clone URL: the runner holds only a mirror of "
                "it, and pushing to the remote is not Paperclip's to do. Fetch the branch "
                f"{spec.branch} from the mirror and merge it where the repository lives",
            )
        for name in (spec.branch, spec.base_ref):
            if name is not None and (problem := branch_problem(name)):
                raise _not_allowed(problem)
        source = await self._source(spec, clone=False)
        assert source is not None  # a folder's source is never cloned
        async with self._source_lock(source):
            base_ref = await self._base_ref(source, spec)
            try:
                return await merging.merge_branch(
                    self._git,
                    source.path,
                    branch=spec.branch,
                    base_ref=base_ref,
                    strategy=strategy,
                    message=message,
                    workspaces=self.root,
                    before_update=before_update,
                    earlier=earlier,
                )
            except GitFailed as failed:
                raise failed.unavailable(f"could not merge {spec.branch} into {base_ref}") from None
