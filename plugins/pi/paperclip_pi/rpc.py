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
import contextlib
import itertools
import json
from collections.abc import Mapping, Sequence
from typing import Any

from paperclip_provider_kit.process import CliProcess, SpawnError

DIALOGS = frozenset({"select", "confirm", "input", "editor"})

__all__ = ["CommandFailed", "RpcProcess", "SpawnError"]


class CommandFailed(Exception):
    """Pi answered a command with ``success: false``, or not at all."""


class RpcProcess:
    """A running ``pi --mode rpc``: commands, their responses, and the stream of events.

    ``events`` ends with None when the process's stdout closes.
    """

    def __init__(self, cli: CliProcess) -> None:
        self._cli = cli
        self._process = cli.process
        self.events: asyncio.Queue[Mapping[str, Any] | None] = asyncio.Queue()
        self._waiting: dict[str, asyncio.Future[Mapping[str, Any]]] = {}
        self._ids = itertools.count(1)
        self._write_lock = asyncio.Lock()

    @classmethod
    async def spawn(
        cls, argv: Sequence[str], *, env: Mapping[str, str], cwd: str | None, user: Any = None
    ) -> RpcProcess:
        """Start ``argv`` (as ``user``, a ``ProcessUser``, when given)."""
        self = cls(await CliProcess.start(argv, name="pi", env=env, cwd=cwd, user=user))
        assert self._process.stderr is not None
        self._cli.watch(self._read_stdout())
        self._cli.tail_lines(self._process.stderr)
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
        return self._cli.tail.text()

    async def exit_description(self) -> str:
        return await self._cli.describe_exit()

    async def terminate(self, grace_seconds: float) -> None:
        """SIGTERM the process group, SIGKILL it after ``grace_seconds``. Idempotent."""
        if self._process.stdin is not None:
            with contextlib.suppress(Exception):
                self._process.stdin.close()
        await self._cli.stop(grace_seconds)

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
