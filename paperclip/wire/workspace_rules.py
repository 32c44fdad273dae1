"""What a workspace source, key and branch may look like: the checks both sides make.

The control plane refuses a project whose source breaks these at the door
(``422``); the runner makes the same checks again, then the ones only its host
can make (symlinks resolved, the folder exists and is a repository), because a
runner never trusts what it is sent. Everything here is pure: strings in, a
problem (a sentence for people) or None out.
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
from collections.abc import Iterable

WORKSPACE_NOT_ALLOWED = "workspace_not_allowed"
"""The runner host does not let this repository folder or clone URL be used."""
WORKSPACE_UNAVAILABLE = "workspace_unavailable"
"""The repository could not be used (missing, not git, a clone that failed, ...)."""


# Why a merge of an issue's branch into its base branch was refused (nothing changed).
MERGE_CONFLICT = "merge_conflict"
"""The branch and its base changed the same lines: the conflicting files are named."""
NOTHING_TO_MERGE = "nothing_to_merge"
"""The branch has no commit its base branch does not have."""
NOT_FAST_FORWARD = "not_fast_forward"
"""Fast-forward only, and the base branch has commits the branch does not have."""
BASE_CHECKOUT_DIRTY = "base_checkout_dirty"
"""The base branch is checked out with uncommitted changes to files the merge touches."""
MERGE_NOT_SUPPORTED = "merge_not_supported"
"""The repository is a clone URL's mirror (or the runner predates merging)."""

ROOTS_SETTING = "PAPERCLIP_RUNNER_WORKSPACE_ROOTS"
REMOTES_SETTING = "PAPERCLIP_RUNNER_WORKSPACE_REMOTES"

MAX_PATH = 4096
MAX_URL = 2048
URL_SCHEMES = ("https://", "http://", "ssh://", "git://", "file://")
_SCP_LIKE = re.compile(r"^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:[^\s]+$")
"""``git@host:owner/repo.git``: ssh in scp syntax."""
_KEY_PART = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_BRANCH = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,254}$")


def path_problem(path: str) -> str | None:
    """Why ``path`` cannot name a repository folder on a runner host, or None."""
    if not path or len(path) > MAX_PATH:
        return f"a repository folder is an absolute path of at most {MAX_PATH} characters"
    if "\x00" in path or "\n" in path:
        return "a repository folder may not contain NUL or newline characters"
    if not path.startswith("/"):
        return f"a repository folder is an absolute path (starting with /), not {path!r}"
    parts = path.split("/")
    if any(part in (".", "..") for part in parts):
        return f"a repository folder may not contain '.' or '..' components: {path!r}"
    return None


def under_roots(path: str, roots: Iterable[str]) -> bool:
    """Whether ``path`` is one of ``roots`` or inside one, compared by path components.

    Lexical only (the control plane cannot see the runner's disk); the runner
    checks again with symlinks resolved.
    """
    target = posixpath.normpath(path)
    for root in roots:
        base = posixpath.normpath(root)
        if target == base or target.startswith(base.rstrip("/") + "/"):
            return True
    return False


def url_problem(url: str) -> str | None:
    """Why ``url`` cannot be a clone URL, or None."""
    if not url or len(url) > MAX_URL:
        return f"a clone URL has at most {MAX_URL} characters"
    if any(ch.isspace() or ord(ch) < 32 for ch in url):
        return "a clone URL may not contain spaces or control characters"
    if url.startswith("-"):
        return "a clone URL may not start with '-'"
    if "::" in url.split("/", 1)[0]:
        return "remote helpers (<transport>::<address>) are not clone URLs here"
    if url.startswith(URL_SCHEMES) or _SCP_LIKE.match(url):
        return None
    schemes = ", ".join(s.removesuffix("://") for s in URL_SCHEMES)
    return f"a clone URL is {schemes} or user@host:path, not {url!r}"


def allowed_remote(url: str, patterns: Iterable[str]) -> bool:
    """Whether ``url`` matches one of the host's patterns (shell-style: ``*``, ``?``)."""
    return any(fnmatch.fnmatchcase(url, pattern) for pattern in patterns)


def key_problem(key: str) -> str | None:
    """Why ``key`` cannot name a worktree folder under a runner's workspaces folder, or None."""
    parts = key.split("/")
    if not 1 <= len(parts) <= 4 or not all(_KEY_PART.match(part) for part in parts):
        return (
            "a workspace key is 1 to 4 folder names of letters, digits, '.', '_' and '-' "
            f"(not starting with '.'), joined by '/': not {key!r}"
        )
    return None


def branch_problem(branch: str) -> str | None:
    """Why ``branch`` is not a branch name Paperclip makes, or None (a subset of git's rules)."""
    if (
        not _BRANCH.match(branch)
        or ".." in branch
        or "//" in branch
        or "@{" in branch
        or branch.endswith(("/", ".", ".lock"))
        or any(part.startswith(".") or part.endswith(".lock") for part in branch.split("/"))
    ):
        return (
            "a branch name is letters, digits, '.', '_', '-' and '/', with no '..', '//', "
            f"'.lock' or leading '.' in a part: not {branch!r}"
        )
    return None


def prefix_problem(prefix: str) -> str | None:
    """Why ``prefix`` cannot start the branch names of a project's issues, or None."""
    if prefix == "":
        return None
    return branch_problem(prefix + "X1")
