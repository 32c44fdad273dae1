"""A provider CLI's process: started in its own session, described when it ends, stopped as a group.

Every CLI provider starts its process with ``start_new_session=True`` so the
process and whatever it starts (a shell the model ran) are one process group,
stopped together.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
import signal
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import Any

STREAM_LIMIT = 16 * 1024 * 1024
"""Largest line read from a CLI (a whole command output can be one JSON line)."""
OUTPUT_LINES = 40


class SpawnError(Exception):
    """The provider command could not be started."""

    def __init__(self, message: str, *, missing: bool = False) -> None:
        super().__init__(message)
        self.missing = missing
        """The executable was not found."""


async def spawn(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: str | None,
    user: Any = None,
    stdin: int = asyncio.subprocess.PIPE,
) -> asyncio.subprocess.Process:
    """Start ``argv`` leading a new process group, its output piped, as ``user`` (a
    ``ProcessUser``) when given; :class:`SpawnError` when it cannot start."""
    as_user = user.subprocess_kwargs() if user is not None else {}
    try:
        return await asyncio.create_subprocess_exec(
            *argv,
            stdin=stdin,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=dict(env),
            cwd=existing_dir(cwd),
            limit=STREAM_LIMIT,
            start_new_session=True,  # its children (the model's shells) go with it
            **as_user,
        )
    except FileNotFoundError as exc:
        raise SpawnError(f"cannot start {argv[0]!r}: not found", missing=True) from exc
    except OSError as exc:
        raise SpawnError(f"cannot start {argv[0]!r}: {exc}") from exc


class Tail:
    """The last lines a process wrote, for error messages."""

    def __init__(self, lines: int = OUTPUT_LINES) -> None:
        self._lines: collections.deque[str] = collections.deque(maxlen=lines)

    def add(self, line: bytes) -> str:
        """Keep ``line`` (decoded, right-stripped) and return it."""
        text = line.decode(errors="replace").rstrip()
        self._lines.append(text)
        return text

    def text(self) -> str:
        """The kept lines, oldest first."""
        return "\n".join(self._lines)


def existing_dir(path: str | None) -> str | None:
    """``path`` if it is a folder, else None: a missing cwd must not stop the provider."""
    return path if path and os.path.isdir(path) else None


def exit_status(returncode: int | None) -> str:
    """How a process ended, in words."""
    if returncode is None:
        return "stopped answering (still running)"
    if returncode < 0:
        return f"was killed by signal {-returncode}"
    return f"exited with status {returncode}"


async def exit_description(
    process: asyncio.subprocess.Process, name: str, tail: str, what: str = "stderr"
) -> str:
    """``"<name> <how it ended>; <what>: <tail>"`` after a short wait for it to be reaped."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(asyncio.shield(process.wait()), 1.0)
    return f"{name} {exit_status(process.returncode)}" + (f"; {what}: {tail}" if tail else "")


def signal_group(process: asyncio.subprocess.Process, signum: int) -> None:
    """Send ``signum`` to the process's group; a group already gone is no error."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signum)


async def stop_group(
    process: asyncio.subprocess.Process,
    grace_seconds: float,
    send: Callable[[int], None] | None = None,
) -> None:
    """SIGTERM the group, then SIGKILL it after ``grace_seconds``, and its leftovers either way.

    Children that outlived their leader (a shell the model started) go too.
    ``send`` replaces :func:`signal_group` where a provider signals otherwise.
    """
    kill = send or (lambda signum: signal_group(process, signum))
    if process.returncode is None:
        kill(signal.SIGTERM)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(process.wait(), grace_seconds)
    kill(signal.SIGKILL)
    await process.wait()


async def cancel_all(tasks: list[asyncio.Task[None]]) -> None:
    """Cancel the process's reader tasks and wait for them."""
    for task in tasks:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def read_lines(stream: asyncio.StreamReader, on_line: Callable[[bytes], None]) -> None:
    """Hand each line of ``stream`` to ``on_line`` until it ends.

    An over-long line is skipped (its remainder arrives as the next read).
    """
    while True:
        try:
            line = await stream.readline()
        except ValueError:
            continue
        if not line:
            return
        on_line(line)


class CliProcess:
    """A provider CLI's running process: its group, the tail of its output, its reader tasks.

    ``name`` and ``what`` (``"stderr"``, ``"output"``) word :meth:`describe_exit`.
    """

    def __init__(self, process: asyncio.subprocess.Process, name: str, what: str) -> None:
        self.process = process
        self.tail = Tail()
        self._name, self._what = name, what
        self._tasks: list[asyncio.Task[None]] = []
        self._stopped = False

    @classmethod
    async def start(
        cls,
        argv: Sequence[str],
        *,
        name: str,
        env: Mapping[str, str],
        cwd: str | None,
        user: Any = None,
        stdin: int = asyncio.subprocess.PIPE,
        what: str = "stderr",
    ) -> CliProcess:
        """:func:`spawn` ``argv``; :class:`SpawnError` when it cannot start."""
        return cls(await spawn(argv, env=env, cwd=cwd, user=user, stdin=stdin), name, what)

    @property
    def alive(self) -> bool:
        """Not exited yet."""
        return self.process.returncode is None

    def tail_lines(
        self, stream: asyncio.StreamReader, on_text: Callable[[str], None] | None = None
    ) -> None:
        """Keep ``stream``'s last lines in :attr:`tail`, each also handed to ``on_text``."""

        def line(raw: bytes) -> None:
            text = self.tail.add(raw)
            if on_text is not None:
                on_text(text)

        self.watch(read_lines(stream, line))

    def watch(self, reader: Coroutine[Any, Any, None]) -> None:
        """Run ``reader`` (of the process's output) until the process is stopped."""
        self._tasks.append(asyncio.ensure_future(reader))

    async def describe_exit(self) -> str:
        """How the process ended, and the tail of its output, for an error message."""
        return await exit_description(self.process, self._name, self.tail.text(), self._what)

    async def stop(self, grace_seconds: float) -> None:
        """:func:`stop_group` once, then end the readers. Idempotent."""
        if not self._stopped:
            self._stopped = True
            await stop_group(self.process, grace_seconds)
        await self.process.wait()
        await cancel_all(self._tasks)
