"""The provider process: spawn, stderr capture, termination."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
import signal
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from paperclip_codex.jsonrpc import CloseHandler, JsonRpcConnection, MessageSink, RequestHandler

STREAM_LIMIT = 16 * 1024 * 1024
"""Largest JSON line accepted from the provider (a whole command output can be one line)."""
STDERR_LINES = 40


class SpawnError(Exception):
    """The provider command could not be started."""

    def __init__(self, message: str, *, missing: bool = False) -> None:
        super().__init__(message)
        self.missing = missing
        """The executable was not found."""


class AppServerProcess:
    """One ``codex app-server`` (or compatible) process and its JSON-RPC connection.

    The process leads its own process group, so termination reaches what it
    started too (the npm ``codex`` launcher runs the native binary as a child).
    """

    def __init__(self, process: asyncio.subprocess.Process, connection: JsonRpcConnection) -> None:
        self._process = process
        self.connection = connection
        self._stderr: collections.deque[str] = collections.deque(maxlen=STDERR_LINES)
        self._stderr_task: asyncio.Task[None] | None = None
        self._terminated = False

    @classmethod
    async def spawn(
        cls,
        argv: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: str | None,
        on_message: MessageSink,
        on_request: RequestHandler,
        on_close: CloseHandler,
        user: Any = None,
    ) -> AppServerProcess:
        """Start the process and its reader, as ``user`` (a ``ProcessUser``) when given; raise
        :class:`SpawnError` if it cannot start."""
        as_user = user.subprocess_kwargs() if user is not None else {}
        try:
            process = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=dict(env),
                cwd=_existing_dir(cwd),
                limit=STREAM_LIMIT,
                start_new_session=True,
                **as_user,
            )
        except FileNotFoundError as exc:
            raise SpawnError(f"cannot start {argv[0]!r}: not found", missing=True) from exc
        except OSError as exc:
            raise SpawnError(f"cannot start {argv[0]!r}: {exc}") from exc
        assert process.stdin is not None and process.stdout is not None
        connection = JsonRpcConnection(
            process.stdout,
            process.stdin,
            on_message=on_message,
            on_request=on_request,
            on_close=on_close,
        )
        self = cls(process, connection)
        self._stderr_task = asyncio.create_task(self._drain_stderr(), name="codex-stderr")
        connection.start()
        return self

    @property
    def pid(self) -> int:
        """The process id (also its process group id)."""
        return self._process.pid

    @property
    def returncode(self) -> int | None:
        """The exit status once the process has been reaped."""
        return self._process.returncode

    def stderr_tail(self) -> str:
        """The last lines the process wrote to stderr."""
        return "\n".join(self._stderr)

    async def exit_description(self, wait: float = 2.0) -> str:
        """How the process ended, for error messages: exit status and the tail of stderr."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._process.wait()), wait)
        if self._stderr_task is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._stderr_task), 0.5)
        code = self._process.returncode
        if code is None:
            status = "stopped answering (still running)"
        elif code < 0:
            status = f"was killed by signal {-code}"
        else:
            status = f"exited with status {code}"
        tail = self.stderr_tail()
        return f"the provider process {status}" + (f"; stderr: {tail}" if tail else "")

    async def terminate(self, grace_seconds: float) -> None:
        """SIGTERM the process group, SIGKILL it after ``grace_seconds``. Idempotent."""
        if self._terminated:
            await self._process.wait()
            return
        self._terminated = True
        with contextlib.suppress(Exception):
            await self.connection.aclose()
        if self._process.returncode is None:
            self._signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(self._process.wait(), grace_seconds)
            except TimeoutError:
                self._signal(signal.SIGKILL)
                await self._process.wait()
        if self._stderr_task is not None:
            self._stderr_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._stderr_task

    def _signal(self, signum: int) -> None:
        try:
            os.killpg(self._process.pid, signum)
        except ProcessLookupError:
            pass
        except PermissionError:
            # The group may be gone and its id reused; fall back to the process we own.
            with contextlib.suppress(ProcessLookupError):
                self._process.send_signal(signum)

    async def _drain_stderr(self) -> None:
        stream = self._process.stderr
        assert stream is not None
        while True:
            try:
                line = await stream.readline()
            except ValueError:
                continue  # an over-long line: its remainder arrives as the next read
            if not line:
                return
            self._stderr.append(line.decode(errors="replace").rstrip())


def _existing_dir(path: str | None) -> str | None:
    # A missing cwd must not stop the provider: thread/start carries the cwd too.
    return path if path and os.path.isdir(path) else None


LEFTOVER_FILE = "app-server.pgid"
"""In the run's state folder: the process group of the app-server this run last started."""


def reap_leftover(state_dir: str) -> int | None:
    """Stop the app-server an earlier runner process of this run left behind; its group id.

    A runner that dies (SIGKILL) leaves its provider processes running: the npm
    ``codex`` wrapper's native child survives it, and would hold the thread's
    writer lock against the next turn. A run never has two provider processes:
    the next turn's driver stops the earlier group first.
    """
    path = Path(state_dir) / LEFTOVER_FILE
    try:
        pgid = int(path.read_text())
    except (FileNotFoundError, ValueError):
        return None
    path.unlink(missing_ok=True)
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        return None
    return pgid


def remember(state_dir: str, pgid: int) -> None:
    """Note the app-server's process group in the run's state folder (see ``reap_leftover``)."""
    with contextlib.suppress(OSError):
        (Path(state_dir) / LEFTOVER_FILE).write_text(str(pgid))
