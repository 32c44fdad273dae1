"""Agents are not the operator: who a provider process runs as, and what it sees.

An agent's model has a shell, so its provider process is treated as untrusted code:

- **Its environment** is built from an allowlist (:data:`ALLOWED_ENV`, ``LC_*``), the
  key variables its model profile grants and the agent's config uses, and what the runner
  adds for the run (the worktree's git settings); never the runner's other variables,
  never ``PAPERCLIP_*``.
- **Its folders** (its home and working folder inside the run's folder) are its own, mode
  0700; the run's folder stays the runner's (its records, the drivers' files), passable.
  An issue's worktree is shared with it (:mod:`paperclip.runner.workspaces.sharing`).
- **Its user**: run by root, the runner starts providers as an unprivileged system user
  (``paperclip-agent``, made on first use as the embedded database makes ``pgserver``;
  ``PAPERCLIP_RUNNER_AGENT_USER`` names another). It cannot read the runner's credential,
  the data dir's database, nor reach the database's socket, all closed to other users.
  Run by anyone else, providers run as the runner's user, with the rest still applied.
"""

from __future__ import annotations

import logging
import os
import pwd
import shlex
import shutil
import subprocess
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from paperclip_hookspecs.providers import ProcessUser

from paperclip.db.access import SYSTEM_USER as DATABASE_USER
from paperclip.db.access import first_untraversable, running_as_root

log = logging.getLogger(__name__)

AGENT_USER = "paperclip-agent"
USER_SETTING = "PAPERCLIP_RUNNER_AGENT_USER"
PROXY_ENV = tuple(
    name for base in ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY") for name in (base, base.lower())
)
ALLOWED_ENV = frozenset(
    {
        "PATH",
        "LANG",
        "LANGUAGE",
        "TZ",
        "TERM",
        "PYTHONPATH",
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
        "NODE_EXTRA_CA_CERTS",
        *PROXY_ENV,
    }
)
"""What a provider process inherits from the runner's environment, besides ``LC_*``: what
programs need to run, nothing that is anyone's secret (a proxy's URL is the host's way
out: a provider behind it must still reach its model endpoint)."""
RESERVED_PREFIX = "PAPERCLIP_"


AGENT_USER_UNAVAILABLE = "agent_user_unavailable"
"""A run refused: the user the host named for agents cannot run it (see ``prepare``)."""


class IsolationError(Exception):
    """The configured agent user cannot be used; the message says why and what to do."""

    code = AGENT_USER_UNAVAILABLE


@dataclass(frozen=True, slots=True)
class AgentUser:
    """Who this runner's provider processes run as (None: the runner's own user)."""

    user: ProcessUser | None
    strict: bool = False
    """Named by the host: a program it cannot run fails the run, no fallback."""
    said: set[str] = field(default_factory=set)
    """Why the agent user was not used, each said once in the log."""

    def prepare(
        self,
        command: Sequence[str],
        run_dir: Path,
        keys: Iterable[str],
        extra: Mapping[str, str],
        *,
        worktree: Sequence[Path] | None = None,
    ) -> tuple[ProcessUser | None, dict[str, str], Path | None]:
        """A run's user, its environment, and its working folder without a worktree (None: the
        run's folder). Its home and that folder are its own (0700); the run's folder stays the
        runner's (its records, the drivers' own files), passable by another user only.

        ``worktree``: the run works in an issue's worktree (shared with the agent's user when it
        is made), whose repository lies in these host folders, which that user must reach.
        Raises IsolationError when the user the host named cannot run it (no fallback)."""
        user, problem = self.for_run(command, run_dir, worktree or ())
        if user is not None and problem:
            # The host named this user: a run it cannot do is refused, before anything starts.
            raise IsolationError(f"this run cannot start as {user.name}: {problem}")
        if self.user is not None and user is None and problem not in self.said:
            self.said.add(problem)
            log.warning(
                "provider processes run as this runner's user, not %s: %s",
                self.user.name,
                problem,
            )
        own_folder(run_dir, None)
        home = run_dir / "home"
        own_folder(home, user)
        work = None
        if user is not None:
            open_for_traversal([run_dir])
            work = run_dir / "work"
            own_folder(work, user)
        return user, process_env(keys, extra, str(home), user), work

    @classmethod
    def choose(cls, configured: str | None) -> AgentUser:
        """``PAPERCLIP_RUNNER_AGENT_USER``, else ``paperclip-agent`` as root; raises
        IsolationError for a user that would be no isolation (root, the database's)."""
        if not running_as_root():
            return cls(None)
        name = (configured or "").strip()
        if name in ("root", "0"):
            return cls(None, strict=True)  # the host's explicit choice: no switch
        if name == DATABASE_USER:
            raise IsolationError(
                f"{USER_SETTING}={name}: the embedded database's user reaches its data; name "
                f"another user, or leave it unset for {AGENT_USER}"
            )
        if not name:
            return cls(_process_user(ensure_user(AGENT_USER)))
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            raise IsolationError(f"{USER_SETTING}={name}: no such user on this host") from None
        if entry.pw_uid == 0:
            return cls(None, strict=True)
        return cls(_process_user(entry), strict=True)

    def for_run(
        self, command: Sequence[str], folder: Path, reached: Iterable[Path] = ()
    ) -> tuple[ProcessUser | None, str]:
        """The user to start ``command`` in ``folder`` as, and why not the agent user when
        it cannot (its program, the folder or a folder it must ``reach``, closed to it:
        ``""`` when it can). Only the default user falls back to the runner's own; a user
        the host named does not."""
        if self.user is None:
            return None, ""
        problem = unreachable_program(command, self.user)
        for place in (folder.parent, *reached):
            blocked = first_untraversable(place, uid=self.user.uid, gids=[self.user.gid])
            if problem is None and blocked is not None:
                problem = f"the folder {blocked} is closed to {self.user.name}"
        if problem is None or self.strict:
            return self.user, problem or ""
        return None, problem


def ensure_user(name: str, attempts: int = 20) -> pwd.struct_passwd:
    """As root, make sure the system user ``name`` exists (processes may race to make it)."""
    for _ in range(attempts):
        try:
            return pwd.getpwnam(name)
        except KeyError:
            pass
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
            capture_output=True,
            check=False,
        )
        time.sleep(0.05)
    return pwd.getpwnam(name)


def _process_user(entry: pwd.struct_passwd) -> ProcessUser:
    return ProcessUser(uid=entry.pw_uid, gid=entry.pw_gid, name=entry.pw_name)


def unreachable_program(command: Sequence[str], user: ProcessUser) -> str | None:
    """Why ``user`` cannot run a program ``command`` would run, or None.

    Followed as far as it can be known: ``env``'s command (after its options and
    assignments) and a ``#!`` interpreter, so a launch through ``/usr/bin/env`` of a
    program under a closed folder is found before the run starts, not when it fails.
    """
    words = list(command)
    search = os.environ.get("PATH") or os.defpath
    for _ in range(MAX_PROGRAMS):
        if not words:
            return None
        program = words[0]
        found = shutil.which(program, path=search) if "/" not in program else program
        if found is None or not os.path.isfile(found):
            # Missing for everyone (the provider says so when it starts), or not a program
            # at all (a gateway's profile names a URL).
            return None
        real = Path(os.path.realpath(found))
        blocked = first_untraversable(real.parent, uid=user.uid, gids=[user.gid])
        if blocked is not None:
            return f"{real}: the folder {blocked} is closed to {user.name}"
        if not os.stat(real).st_mode & 0o001 and os.stat(real).st_uid != user.uid:
            return f"{real} is not executable by {user.name}"
        if "env" in (Path(found).name, real.name):
            words, search = env_command(words[1:], search)
        else:
            words = _interpreter(real)
    return None


MAX_PROGRAMS = 6
"""How many programs of one launch are followed (``env`` to a script to its interpreter)."""
_ENV_VALUED = frozenset({"-u", "--unset", "-C", "--chdir"})
"""``env`` options whose value is the next word."""


def env_command(args: Sequence[str], search: str) -> tuple[list[str], str]:
    """The command ``env args`` runs (its options and ``NAME=value`` skipped), and the
    ``PATH`` it searches (an assigned one)."""
    words = list(args)
    while words:
        word = words.pop(0)
        if word == "--":
            break
        if word in ("-S", "--split-string") and words:
            words = shlex.split(words.pop(0)) + words
        elif word.startswith(("-S", "--split-string=")):
            words = shlex.split(word.split("=", 1)[1] if "=" in word else word[2:]) + words
        elif word in _ENV_VALUED:
            words = words[1:]
        elif word.startswith("-") and word != "-":
            continue  # -i, -0, -v, --unset=NAME, -uNAME, --ignore-signal...: no next word
        elif word == "-":
            continue  # as -i
        elif "=" in word:
            name, _, value = word.partition("=")
            if name == "PATH":
                search = value
        else:
            words.insert(0, word)
            break
    return words, search


def _interpreter(path: Path) -> list[str]:
    """The ``#!`` line of ``path`` as words ([] for none)."""
    try:
        with path.open("rb") as file:
            first = file.readline(256)
    except OSError:
        return []
    if not first.startswith(b"#!"):
        return []
    return first[2:].decode(errors="replace").split()


def process_env(
    keys: Iterable[str], extra: Mapping[str, str], home: str, user: ProcessUser | None
) -> dict[str, str]:
    """The provider process's whole environment: the allowlist, the granted key variables
    (never ``PAPERCLIP_*``), the run's own ``extra``, and its home."""
    env = {
        name: value
        for name, value in os.environ.items()
        if name in ALLOWED_ENV or name.startswith("LC_")
    }
    env.setdefault("PATH", os.defpath)
    for key in keys:
        if key in os.environ and not key.startswith(RESERVED_PREFIX):
            env[key] = os.environ[key]
    env.update(extra)
    env["HOME"] = home
    name = user.name if user is not None else pwd.getpwuid(os.geteuid()).pw_name
    env["USER"] = env["LOGNAME"] = name
    return env


def own_folder(path: Path, user: ProcessUser | None) -> None:
    """Make ``path`` exist, 0700, and the agent user's (None: this process's user)."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    if path.is_symlink():
        raise OSError(f"{path} is a symbolic link")
    os.chmod(path, 0o700)  # in a folder of the runner's: no link can be swapped in
    if user is not None:
        os.chown(path, user.uid, user.gid, follow_symlinks=False)


def open_for_traversal(folders: Iterable[Path]) -> None:
    """Let another user pass through the runner's own folders on the way to a run's folder
    (``--x`` for others, no listing): each run's folder is then closed by its own mode."""
    for folder in folders:
        mode = os.stat(folder).st_mode & 0o777
        if mode & 0o001 == 0:
            os.chmod(folder, mode | 0o001)
