"""The provider process: spawn, stderr capture, termination."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from paperclip_provider_kit.process import SpawnError, Tail, exit_status, read_lines, spawn

from paperclip_codex.jsonrpc import CloseHandler, JsonRpcConnection, MessageSink, RequestHandler

__all__ = ["AppServerProcess", "SpawnError", "reap_leftover", "remember"]


class AppServerProcess:
    """One ``codex app-server`` (or compatible) process and its JSON-RPC connection.

    The process leads its own process group, so termination reaches what it
    started too (the npm ``codex`` launcher runs the native binary as a child).
    """

    def __init__(self, process: asyncio.subprocess.Process, connection: JsonRpcConnection) -> None:
        self._process = process
        self.connection = connection
        self._stderr = Tail()
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
        process = await spawn(argv, env=env, cwd=cwd, user=user)
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
        return self._stderr.text()

    async def exit_description(self, wait: float = 2.0) -> str:
        """How the process ended, for error messages: exit status and the tail of stderr."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._process.wait()), wait)
        if self._stderr_task is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._stderr_task), 0.5)
        tail = self.stderr_tail()
        status = exit_status(self._process.returncode)
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
        assert self._process.stderr is not None
        await read_lines(self._process.stderr, self._stderr.add)


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
