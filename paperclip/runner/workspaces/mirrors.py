"""Bare mirrors of clone URLs, kept by the runner: worktrees of a remote project come from them.

A mirror is cloned into a temporary folder and renamed into place, so a crash
never leaves half a mirror where the next call would trust it. Once in place
it stops being a ``--mirror`` for pushes and fetches: an agent's ``git push``
in a worktree must not mirror-push every ref, and an agent's ``git fetch`` must
not overwrite the issue branches made in it. The runner fetches only the base
branch a new worktree starts from, from the URL it is given each time (which may
carry credentials that are never written to the mirror's configuration).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import shutil
import uuid
from pathlib import Path

from paperclip.failpoints import failpoint
from paperclip.runner.workspaces.git import FETCH_TIMEOUT, run_git

_HTTP_USERINFO = re.compile(r"(?i)^(https?://)[^/@]+@")


def without_credentials(url: str) -> str:
    """``url`` without the user information of an http(s) URL (a token, a password)."""
    return _HTTP_USERINFO.sub(r"\1", url)


def mirror_name(url: str) -> str:
    """The mirror's folder name: the same for a URL whatever credentials it carries."""
    return hashlib.sha256(without_credentials(url).encode()).hexdigest()[:16] + ".git"


async def clone_mirror(mirrors: Path, url: str, home: Path) -> Path:
    """The mirror of ``url`` under ``mirrors``, cloned now; the caller holds its lock.

    Raises ``GitFailed`` when the clone fails (nothing is left behind).
    """
    target = mirrors / mirror_name(url)
    prefix = f".tmp-{target.name}-"
    await asyncio.to_thread(_discard_matching, mirrors, prefix + "*")
    staging = mirrors / f"{prefix}{uuid.uuid4().hex[:8]}"
    try:
        await run_git(
            ["clone", "--mirror", "--quiet", "--", url, str(staging)],
            home=home,
            time_limit=FETCH_TIMEOUT,
        )
        failpoint("runner.workspace.mirror.after_clone")
        for args in (
            ["config", "--unset", "remote.origin.mirror"],
            ["config", "remote.origin.fetch", "+refs/heads/*:refs/remotes/origin/*"],
            ["config", "remote.origin.url", without_credentials(url)],
        ):
            await run_git(args, cwd=staging, home=home)
        os.chmod(staging, 0o700)
        os.rename(staging, target)
    finally:
        await asyncio.to_thread(_discard, staging)
    return target


async def fetch_branch(mirror: Path, url: str, branch: str, home: Path) -> None:
    """Bring ``branch`` of the mirror up to date with ``url``'s; raises ``GitFailed``."""
    refspec = f"+refs/heads/{branch}:refs/heads/{branch}"
    await run_git(
        ["fetch", "--quiet", "--no-tags", "--", url, refspec],
        cwd=mirror,
        home=home,
        time_limit=FETCH_TIMEOUT,
    )


def _discard(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)


def _discard_matching(folder: Path, pattern: str) -> None:
    for found in folder.glob(pattern):
        _discard(found)
