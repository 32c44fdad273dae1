"""How the fake app-server runs a model's shell command: in Codex's sandbox, as far as git goes.

Seen with codex-cli 0.171.0 on Linux: in ``workspace-write`` Codex lets a
command write its writable roots except their ``.git``. A ``.git`` folder, or
a worktree's ``.git`` pointer file *and the git folder it points to*, stay
read-only, so ``git add`` or ``git commit`` in an issue's worktree fails
(``fatal: Unable to create '<repo>/.git/worktrees/<name>/index.lock':
Read-only file system``, exit 128). A commit leaves the sandbox: the model
asks to escalate, and Codex runs the command unsandboxed once the client
accepts (:mod:`paperclip_codex_testing.fake_turn`).

The fake emulates that much and no more. Under ``workspace-write`` and
``read-only`` it bind-mounts the working directory's ``.git`` (and the git
folder a pointer file names) read-only in a private mount namespace
(``unshare --user --map-root-user --mount``), then runs the command there as
the same user (a nested user namespace maps it back). Every other write stays
allowed: the fake does not refuse writes outside the writable roots, nor every
write under ``read-only``, nor the network. ``danger-full-access`` and an
accepted escalation run the command as it is. Where user namespaces are not
available (no ``unshare``; a kernel, sysctl or container profile that refuses
them), commands run unsandboxed and the log says so once.

Codex reads a sandboxed command that failed with a telltale word in its output
as a sandbox denial (:func:`looks_denied`), and a denial that ended within
:data:`EARLY_EXIT_SECONDS` of the command's start reaches the model with no
``commandExecution`` item at all (a command still running then has its item
begun). The fake follows both rules.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import shutil
import signal
import sys
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SANDBOXED_MODES = frozenset({"read-only", "workspace-write"})
"""Sandbox modes in which Codex keeps a writable root's ``.git`` read-only."""
EARLY_EXIT_SECONDS = 0.15
"""Codex checks a command for a sandbox denial when it exits this soon after it started."""
DENIAL_WORDS = (
    "operation not permitted",
    "permission denied",
    "read-only file system",
    "seccomp",
    "sandbox",
    "landlock",
    "failed to write file",
)
"""Codex's words for a sandbox denial (``is_likely_sandbox_denied``), matched lowercased."""
TIMEOUT_SECONDS = 60.0
UNSANDBOXED_WARNING = (
    "fake app-server: user namespaces are not available here ({reason}); "
    "shell commands run without the git sandbox"
)

# Run by `unshare --user --map-root-user --mount`: $1 the marker file, $2 uid,
# $3 gid, $4 the command; the mounts come first (spliced in, quoted). The
# marker says the sandbox was made, so a failure to make it is never taken for
# the command's own failure.
_INNER = ': > "$1" && exec /bin/sh -c "$2"'
_OUTER = (
    "set -e\n{mounts}\n"
    'exec unshare --user --map-user="$2" --map-group="$3" -- /bin/sh -c {inner} sh "$1" "$4"'
)


@dataclass(frozen=True, slots=True)
class Finished:
    """How a shell command ended, and what the model reads of it."""

    exit_code: int
    output: str
    """stdout and stderr as the command wrote them, interleaved."""
    pid: int

    def completion(self) -> dict[str, Any]:
        """What Codex completes the command's ``commandExecution`` item with."""
        return {
            "source": "unifiedExecStartup",
            "processId": str(self.pid),
            "status": "completed" if self.exit_code == 0 else "failed",
            "aggregatedOutput": self.output or None,
            "exitCode": self.exit_code,
            "durationMs": 0,
        }

    def log_entry(self, command: str, *, sandboxed: bool, denied: bool) -> dict[str, Any]:
        """The fake's log line: what a model would read of the command."""
        return {
            "type": "shell",
            "command": command,
            "sandboxed": sandboxed,
            "exit_code": self.exit_code,
            "output": self.output,
            "denied": denied,
        }


def sandbox_mode(*choices: Any) -> str:
    """The first mode given (a thread's, then the configured one), else Codex's default:
    ``read-only``, in a folder it was not told to trust."""
    return str(next((c for c in choices if c), "read-only"))


def sandbox_policy(mode: str) -> dict[str, Any]:
    """The sandbox as a thread response reports it: a policy object, not the mode's name."""
    if mode == "danger-full-access":
        return {"type": "dangerFullAccess"}
    if mode == "workspace-write":
        return {
            "type": "workspaceWrite",
            "writableRoots": [],
            "networkAccess": False,
            "excludeTmpdirEnvVar": False,
            "excludeSlashTmp": False,
        }
    return {"type": "readOnly", "networkAccess": False}


def looks_denied(exit_code: int, output: str) -> bool:
    """Whether Codex reads a sandboxed command's failure as a sandbox denial (codex-rs
    ``is_likely_sandbox_denied``, without its check for a seccomp kill)."""
    if exit_code == 0:
        return False
    lowered = output.lower()
    return any(word in lowered for word in DENIAL_WORDS)


def protected_paths(cwd: str) -> list[str]:
    """What Codex keeps read-only under ``cwd``: its ``.git`` and, for a worktree's
    pointer file, the git folder it names (when it exists)."""
    dot_git = os.path.join(cwd, ".git")
    if os.path.isdir(dot_git):
        return [dot_git]
    if not os.path.isfile(dot_git):
        return []
    paths = [dot_git]
    with contextlib.suppress(OSError, UnicodeDecodeError):
        first = Path(dot_git).read_text(encoding="utf-8").splitlines()[0]
        if first.startswith("gitdir:"):
            target = os.path.join(cwd, first.removeprefix("gitdir:").strip())
            if os.path.isdir(target):
                paths.append(os.path.realpath(target))
    return paths


def _remount_options(path: str) -> str:
    """``remount,ro,bind`` plus the flags of the mount ``path`` is on: inside a user
    namespace the kernel refuses a remount that would drop them (they are locked)."""
    flags = os.statvfs(path).f_flag
    options = ["remount", "ro", "bind"]
    options += [name for bit, name in _LOCKED_FLAGS if flags & bit]
    if not flags & (os.ST_NOATIME | os.ST_RELATIME):
        options.append("strictatime")
    return ",".join(options)


_LOCKED_FLAGS = (
    (os.ST_NOSUID, "nosuid"),
    (os.ST_NODEV, "nodev"),
    (os.ST_NOEXEC, "noexec"),
    (os.ST_NOATIME, "noatime"),
    (os.ST_NODIRATIME, "nodiratime"),
    (os.ST_RELATIME, "relatime"),
)


def sandbox_argv(
    unshare: str, command: str, paths: list[str], marker: Path, user: tuple[int, int] | None = None
) -> list[str]:
    """The command line that runs ``command`` with ``paths`` read-only, as ``user`` (uid,
    gid; by default this process's, who must be the one to run it); ``marker`` is created
    once the sandbox is made, just before the command starts."""
    mounts = "\n".join(
        f"mount --bind {shlex.quote(p)} {shlex.quote(p)}\n"
        f"mount -o {_remount_options(p)} {shlex.quote(p)} {shlex.quote(p)}"
        for p in paths
    )
    script = _OUTER.format(mounts=mounts, inner=shlex.quote(_INNER))
    uid, gid = user or (os.geteuid(), os.getegid())
    namespaces = [unshare, "--user", "--map-root-user", "--mount", "--"]
    return [*namespaces, "/bin/sh", "-c", script, "sh", str(marker), str(uid), str(gid), command]


class Shell:
    """Runs the fake's shell commands, sandboxed or not; remembers a host without namespaces."""

    def __init__(self, work_dir: Path, log: Callable[[Mapping[str, Any]], None]) -> None:
        self._work_dir = work_dir
        self._log = log
        self._unshare = shutil.which("unshare")
        self._without: str | None = None
        """Why commands run without the sandbox here (said once), or None."""

    async def run(
        self, command: str, cwd: str | None, *, sandboxed: bool, alive: Callable[[int], None]
    ) -> Finished:
        """Run ``command`` in ``cwd``, in the git sandbox when ``sandboxed`` (and possible).
        ``alive(pid)`` is called if it still runs :data:`EARLY_EXIT_SECONDS` after its start;
        TimeoutError after :data:`TIMEOUT_SECONDS` (the command is killed)."""
        plain = ["/bin/sh", "-c", command]
        paths = protected_paths(cwd) if sandboxed and cwd else []
        unshare = self._unshare
        if paths and unshare is None:
            self._unavailable("no unshare program")
        if not paths or unshare is None or self._without is not None:
            return await _spawn(plain, cwd, alive)
        self._work_dir.mkdir(parents=True, exist_ok=True)
        marker = self._work_dir / f"made-{uuid.uuid4().hex}"
        try:
            argv = sandbox_argv(unshare, command, paths, marker)
            done = await _spawn(argv, cwd, alive)
            if marker.exists():
                return done
        finally:
            marker.unlink(missing_ok=True)
        # The sandbox was not made, so the command never ran: run it without one.
        self._unavailable(f"exit {done.exit_code}: {done.output.strip()[:200]}")
        return await _spawn(plain, cwd, alive)

    def _unavailable(self, reason: str) -> None:
        if self._without is None:
            self._without = reason
            warning = UNSANDBOXED_WARNING.format(reason=reason)
            self._log({"type": "warning", "message": warning})
            print(warning, file=sys.stderr, flush=True)


async def _spawn(argv: list[str], cwd: str | None, alive: Callable[[int], None]) -> Finished:
    """Run ``argv`` to its end (its own session, no stdin: the fake's stdin is the wire)."""
    process = await asyncio.create_subprocess_exec(
        *argv,
        cwd=cwd,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        start_new_session=True,
    )
    reading = asyncio.ensure_future(process.communicate())
    try:
        early, _ = await asyncio.wait({reading}, timeout=EARLY_EXIT_SECONDS)
        if not early:
            alive(process.pid)
        async with asyncio.timeout(TIMEOUT_SECONDS):
            out, _ = await reading
    except BaseException:
        # Interrupted, timed out or cancelled: the command's whole group goes with it.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        reading.cancel()
        raise
    assert process.returncode is not None
    code = process.returncode
    return Finished(
        exit_code=code if code >= 0 else 128 - code,  # killed by a signal: as a shell says it
        output=out.decode("utf-8", "replace"),
        pid=process.pid,
    )
