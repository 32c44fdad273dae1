"""``pi --mode rpc``: one process, JSON lines both ways on stdio.

Commands go to stdin (``{"id", "type": "prompt" | "steer" | "abort" | ...}``);
stdout carries ``{"type": "response", "id", "command", "success", ...}`` for
commands, and every other line is an event of the agent. Records are split on
``\\n`` only (Pi's framing: JSON strings may hold U+2028). An extension's
dialog (``extension_ui_request`` with ``select``/``confirm``/``input``/``editor``)
blocks Pi until answered: a headless run answers ``cancelled`` at once.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import itertools
import json
import os
import signal
from collections.abc import Mapping, Sequence
from typing import Any

STREAM_LIMIT = 16 * 1024 * 1024
OUTPUT_LINES = 40
DIALOGS = frozenset({"select", "confirm", "input", "editor"})


class SpawnError(Exception):
    """Pi could not be started."""

    def __init__(self, message: str, *, missing: bool = False) -> None:
        super().__init__(message)
        self.missing = missing


class CommandFailed(Exception):
    """Pi answered a command with ``success: false``, or not at all."""


class RpcProcess:
    """A running ``pi --mode rpc``: commands, their responses, and the stream of events.

    ``events`` ends with None when the process's stdout closes.
    """

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self._process = process
        self.events: asyncio.Queue[Mapping[str, Any] | None] = asyncio.Queue()
        self._waiting: dict[str, asyncio.Future[Mapping[str, Any]]] = {}
        self._ids = itertools.count(1)
        self._stderr: collections.deque[str] = collections.deque(maxlen=OUTPUT_LINES)
        self._tasks: list[asyncio.Task[None]] = []
        self._write_lock = asyncio.Lock()
        self._terminated = False

    @classmethod
    async def spawn(
        cls, argv: Sequence[str], *, env: Mapping[str, str], cwd: str | None, user: Any = None
    ) -> RpcProcess:
        """Start ``argv`` (as ``user``, a ``ProcessUser``, when given)."""
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
                start_new_session=True,  # its children (the model's shells) go with it
                **as_user,
            )
        except FileNotFoundError as exc:
            raise SpawnError(f"cannot start {argv[0]!r}: not found", missing=True) from exc
        except OSError as exc:
            raise SpawnError(f"cannot start {argv[0]!r}: {exc}") from exc
        self = cls(process)
        self._tasks = [
            asyncio.create_task(self._read_stdout(), name="pi-stdout"),
            asyncio.create_task(self._read_stderr(), name="pi-stderr"),
        ]
        return self

    @property
    def alive(self) -> bool:
        return self._process.returncode is None

    async def command(self, kind: str, wait_seconds: float, **fields: Any) -> Mapping[str, Any]:
        """Send a command and wait for its response; CommandFailed unless it succeeded."""
        command_id = f"paperclip-{next(self._ids)}"
        future: asyncio.Future[Mapping[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[command_id] = future
        try:
            await self.send({"id": command_id, "type": kind, **fields})
            response = await asyncio.wait_for(future, wait_seconds)
        except TimeoutError:
            raise CommandFailed(f"{kind}: no response within {wait_seconds:g}s") from None
        finally:
            self._waiting.pop(command_id, None)
        if not response.get("success"):
            raise CommandFailed(f"{kind}: {response.get('error') or 'refused'}")
        return response

    async def send(self, message: Mapping[str, Any]) -> None:
        stdin = self._process.stdin
        if stdin is None or stdin.is_closing():
            raise CommandFailed("pi's stdin is closed")
        async with self._write_lock:
            try:
                stdin.write(json.dumps(message).encode() + b"\n")
                await stdin.drain()
            except (ConnectionError, RuntimeError) as exc:
                raise CommandFailed(f"pi's stdin is closed: {exc}") from None

    def stderr_tail(self) -> str:
        return "\n".join(self._stderr)

    async def exit_description(self) -> str:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._process.wait()), 1.0)
        code = self._process.returncode
        if code is None:
            status = "stopped answering (still running)"
        elif code < 0:
            status = f"was killed by signal {-code}"
        else:
            status = f"exited with status {code}"
        tail = self.stderr_tail()
        return f"pi {status}" + (f"; stderr: {tail}" if tail else "")

    async def terminate(self, grace_seconds: float) -> None:
        """SIGTERM the process group, SIGKILL it after ``grace_seconds``. Idempotent."""
        if not self._terminated:
            self._terminated = True
            if self._process.stdin is not None:
                with contextlib.suppress(Exception):
                    self._process.stdin.close()
            if self._process.returncode is None:
                self._signal(signal.SIGTERM)
                try:
                    await asyncio.wait_for(self._process.wait(), grace_seconds)
                except TimeoutError:
                    pass
            self._signal(signal.SIGKILL)  # and whatever it started
        await self._process.wait()
        for task in self._tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def _signal(self, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._process.pid, signum)

    async def _read_stdout(self) -> None:
        stream = self._process.stdout
        assert stream is not None
        try:
            while True:
                try:
                    line = await stream.readline()
                except ValueError:
                    continue  # an over-long line
                if not line:
                    return
                try:
                    message = json.loads(line)
                except ValueError:
                    continue  # not a record (a stray print)
                if isinstance(message, dict):
                    await self._route(message)
        finally:
            for future in self._waiting.values():
                if not future.done():
                    future.set_exception(CommandFailed("pi exited"))
            await self.events.put(None)

    async def _route(self, message: dict[str, Any]) -> None:
        if message.get("type") == "response":
            future = self._waiting.get(str(message.get("id")))
            if future is not None and not future.done():
                future.set_result(message)
            return
        if message.get("type") == "extension_ui_request" and message.get("method") in DIALOGS:
            with contextlib.suppress(CommandFailed):
                await self.send(
                    {"type": "extension_ui_response", "id": message.get("id"), "cancelled": True}
                )
        await self.events.put(message)

    async def _read_stderr(self) -> None:
        stream = self._process.stderr
        assert stream is not None
        while True:
            try:
                line = await stream.readline()
            except ValueError:
                continue
            if not line:
                return
            self._stderr.append(line.decode(errors="replace").rstrip())


def _existing_dir(path: str | None) -> str | None:
    return path if path and os.path.isdir(path) else None
