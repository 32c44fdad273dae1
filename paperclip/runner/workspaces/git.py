"""The one way the runner runs git: a fixed environment, safe options, a timeout, bounded output.

Nothing of the runner's own environment reaches git but ``PATH``: no system or
user configuration (an operator's ``~/.gitconfig`` could name hooks, filters or
credential helpers), no prompt (a clone that needs a password fails instead of
hanging), ssh in batch mode. Hooks are off unless the project enables them.

A repository owned by another user than the runner's is refused by git itself
(``safe.directory``, also when the runner is root); Paperclip does not override
that, since that repository's own configuration could then run commands as the
runner's user. :func:`run_git` turns git's refusal into ``workspace_unavailable``
saying what to do.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import pwd
import re
import signal
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from paperclip.runner.workspaces.errors import WorkspaceError, quote
from paperclip.wire.workspace_rules import WORKSPACE_UNAVAILABLE

GIT_TIMEOUT = 120.0
"""Seconds a local git command may take."""
FETCH_TIMEOUT = 1800.0
"""Seconds a clone or fetch may take (a large repository over a slow link)."""
NO_HOOKS = "/dev/null"
"""``core.hooksPath`` that holds no hook."""
AGENT_EMAIL_DOMAIN = "agents.paperclip.invalid"

PROVIDER_OPTIONS = ("protocol.ext.allow=never", "core.fsmonitor=false")
"""What the agent's own git gets too (its own credential helpers stay)."""
SAFE_OPTIONS = (
    *PROVIDER_OPTIONS,
    # An empty value resets the list: no credential helper from the repository's config.
    "credential.helper=",
    "core.askPass=",
    # No gc running on detached after our command returns.
    "gc.auto=0",
    "maintenance.auto=false",
)
_DUBIOUS = re.compile(r"detected dubious ownership in repository at '([^']*)'")
_STDERR_LIMIT = 65_536


class GitFailed(Exception):
    """Git exited with an error; ``stderr`` is what it said (not yet scrubbed)."""

    def __init__(self, args: Sequence[str], returncode: int, stderr: str) -> None:
        super().__init__(f"git {' '.join(args[:2])} exited with {returncode}")
        self.args_ = tuple(args)
        self.returncode = returncode
        self.stderr = stderr

    def unavailable(self, what: str) -> WorkspaceError:
        """``workspace_unavailable``: ``what`` failed, quoting git (scrubbed, a few lines)."""
        return WorkspaceError(WORKSPACE_UNAVAILABLE, f"{what}: git said: {quote(self.stderr)}")


@dataclass(frozen=True, slots=True)
class GitResult:
    returncode: int
    stdout: bytes
    stderr: str
    truncated: bool = False
    """The output went past ``stdout_limit``: git was stopped there."""

    @property
    def text(self) -> str:
        """stdout as text, without its last newline."""
        return self.stdout.decode("utf-8", "replace").removesuffix("\n")


def git_env(home: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The whole environment git runs with (nothing else is inherited)."""
    env = {
        "PATH": os.environ.get("PATH") or os.defpath,
        "LANG": "C",
        "LC_ALL": "C",
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_ATTR_NOSYSTEM": "1",
        "GIT_TERMINAL_PROMPT": "0",
        # Set but empty: git neither runs an askpass program nor falls back to SSH_ASKPASS.
        "GIT_ASKPASS": "",
        "SSH_ASKPASS": "",
        "GIT_SSH_COMMAND": "ssh -o BatchMode=yes",
        "GIT_SSH_VARIANT": "ssh",
        # Status and diff do not rewrite the index on the side: an agent may be using it.
        "GIT_OPTIONAL_LOCKS": "0",
    }
    env.update(extra or {})
    return env


def git_options(hooks: bool) -> list[str]:
    """The ``-c`` options every git command gets."""
    options = [*SAFE_OPTIONS] + ([] if hooks else [f"core.hooksPath={NO_HOOKS}"])
    return [part for option in options for part in ("-c", option)]


async def run_git(
    args: Sequence[str],
    *,
    home: Path,
    cwd: Path | None = None,
    hooks: bool = False,
    env: Mapping[str, str] | None = None,
    input: bytes | None = None,
    time_limit: float = GIT_TIMEOUT,
    check: bool = True,
    stdout_limit: int | None = None,
) -> GitResult:
    """Run ``git <args>`` (in ``cwd``) and capture what it says.

    ``env`` adds to the fixed environment. With ``stdout_limit``, reading stops
    past that many bytes and git is stopped (``truncated``), so a huge diff never
    sits whole in memory. Raises :class:`GitFailed` on an exit code other than 0
    when ``check``; ``workspace_unavailable`` on a timeout and on a repository
    git refuses as another user's.
    """
    argv = ["git", *git_options(hooks), *args]
    proc = await asyncio.create_subprocess_exec(
        *argv,
        cwd=cwd,
        env=git_env(home, env),
        stdin=asyncio.subprocess.PIPE if input is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,  # one group: a timeout stops ssh and helpers with git
    )
    try:
        stdout, stderr, truncated = await asyncio.wait_for(
            _communicate(proc, input, stdout_limit), time_limit
        )
    except TimeoutError:
        _kill(proc)
        await proc.wait()
        raise WorkspaceError(
            WORKSPACE_UNAVAILABLE,
            f"git {args[0]} took longer than {time_limit:.0f} s and was stopped",
        ) from None
    except BaseException:
        _kill(proc)
        raise
    returncode = await proc.wait()
    text = stderr.decode("utf-8", "replace")
    if returncode != 0 and (dubious := _DUBIOUS.search(text)):
        raise _not_owned(dubious.group(1))
    if check and returncode != 0 and not truncated:
        raise GitFailed(args, returncode, text)
    return GitResult(returncode, stdout, text, truncated)


async def _communicate(
    proc: asyncio.subprocess.Process, input: bytes | None, limit: int | None
) -> tuple[bytes, bytes, bool]:
    assert proc.stdout is not None and proc.stderr is not None
    err_task = asyncio.create_task(_tail(proc.stderr, _STDERR_LIMIT))
    if input is not None:
        assert proc.stdin is not None
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # git exited early
            proc.stdin.write(input)
            await proc.stdin.drain()
        proc.stdin.close()
    chunks: list[bytes] = []
    size, truncated = 0, False
    while chunk := await proc.stdout.read(65_536):
        chunks.append(chunk)
        size += len(chunk)
        if limit is not None and size > limit:
            truncated = True
            _kill(proc)
            break
    stderr = await err_task
    return b"".join(chunks), stderr, truncated


async def _tail(stream: asyncio.StreamReader, limit: int) -> bytes:
    """Everything ``stream`` says (so git never blocks on a full pipe), keeping the end."""
    kept = b""
    while chunk := await stream.read(65_536):
        kept = (kept + chunk)[-limit:]
    return kept


def _kill(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is not None:
        return  # reaped: its group id may be another's by now
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def _user(uid: int) -> str:
    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def _not_owned(path: str) -> WorkspaceError:
    try:
        owner = _user(os.stat(path).st_uid)
    except OSError:
        owner = "another user"
    me = _user(os.geteuid())
    return WorkspaceError(
        WORKSPACE_UNAVAILABLE,
        f"the repository {path} belongs to {owner}, not to {me}, the user this runner runs "
        "as; git refuses another user's repository (safe.directory), and Paperclip does not "
        "override that because the repository's own configuration could run commands as the "
        f"runner's user. Run the runner as {owner.split(' ')[0]}, or give the repository to "
        f"{me.split(' ')[0]} (chown -R)",
    )


def provider_git_env(hooks: bool, author_name: str, worktree: str | None = None) -> dict[str, str]:
    """What a provider process adds to its environment so the agent's own git is ours too.

    Its commits are authored and committed as the agent; hooks are off unless the
    project enables them, no system configuration is read, and ext:: transports
    and fsmonitor commands are off (``GIT_CONFIG_COUNT``: configuration of the command line's rank,
    above the repository's own). ``worktree`` is its ``safe.directory``: run as the agent's
    user, its git works in a worktree whose folder is the runner's (see ``sharing``).
    """
    options = [*PROVIDER_OPTIONS] + ([] if hooks else [f"core.hooksPath={NO_HOOKS}"])
    if worktree is not None:
        options.append(f"safe.directory={worktree}")
    env = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_COUNT": str(len(options))}
    for index, option in enumerate(options):
        key, _, value = option.partition("=")
        env[f"GIT_CONFIG_KEY_{index}"] = key
        env[f"GIT_CONFIG_VALUE_{index}"] = value
    name = " ".join(author_name.split()) or "agent"
    email = f"{agent_slug(name)}@{AGENT_EMAIL_DOMAIN}"
    env.update(
        GIT_AUTHOR_NAME=name,
        GIT_AUTHOR_EMAIL=email,
        GIT_COMMITTER_NAME=name,
        GIT_COMMITTER_EMAIL=email,
    )
    return env


def agent_slug(name: str) -> str:
    """The local part of an agent's commit email: lowercase letters, digits and '-'."""
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_name.lower()).strip("-")[:64].strip("-")
    return slug or "agent"
