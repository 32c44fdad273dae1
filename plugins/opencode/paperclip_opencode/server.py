"""The ``opencode serve`` process: start it on a free loopback port, wait until it listens, stop it."""

from __future__ import annotations

import asyncio
import re
import socket
from collections.abc import Mapping, Sequence
from typing import Any

from paperclip_provider_kit.process import (
    SpawnError,
    Tail,
    cancel_all,
    exit_description,
    read_lines,
    spawn,
    stop_group,
)

_LISTENING = re.compile(r"listening on (http://[^\s]+)")

__all__ = ["ServerProcess", "SpawnError", "free_port"]


def free_port() -> int:
    """A port of 127.0.0.1 nobody listens on now (``opencode serve --port 0`` means 4096)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ServerProcess:
    """One ``opencode serve`` (or compatible) process, leading its own process group."""

    def __init__(self, process: asyncio.subprocess.Process, url: str) -> None:
        self._process = process
        self.url = url
        self._output = Tail()
        self._readers: list[asyncio.Task[None]] = []
        self._terminated = False

    @classmethod
    async def start(
        cls,
        argv: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: str | None,
        startup_timeout: float,
        user: Any = None,
    ) -> ServerProcess:
        """Start ``argv --port P --hostname 127.0.0.1`` (as ``user``, a ``ProcessUser``, when
        given) and return once it says it listens."""
        port = free_port()
        command = [*argv, "--port", str(port), "--hostname", "127.0.0.1"]
        process = await spawn(
            command, env=env, cwd=cwd, user=user, stdin=asyncio.subprocess.DEVNULL
        )
        self = cls(process, f"http://127.0.0.1:{port}")
        listening: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        assert process.stdout is not None and process.stderr is not None
        self._readers = [
            asyncio.create_task(self._drain(process.stdout, listening)),
            asyncio.create_task(self._drain(process.stderr, listening)),
        ]
        exited = asyncio.ensure_future(process.wait())
        try:
            done, _ = await asyncio.wait(
                {listening, exited}, timeout=startup_timeout, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            exited.cancel()
        if listening in done:
            self.url = listening.result()
            return self
        await self.terminate(2.0)
        how = "exited" if process.returncode is not None else "did not listen"
        raise SpawnError(
            f"{argv[0]!r} {how} within {startup_timeout:g}s; output: {self.output_tail()}"
        )

    @property
    def pid(self) -> int:
        return self._process.pid

    @property
    def alive(self) -> bool:
        return self._process.returncode is None

    def output_tail(self) -> str:
        """The last lines the process wrote (stdout and stderr)."""
        return self._output.text()

    async def exit_description(self) -> str:
        """How the process ended, for error messages."""
        return await exit_description(self._process, "opencode", self.output_tail(), "output")

    async def terminate(self, grace_seconds: float) -> None:
        """SIGTERM the process group, SIGKILL it after ``grace_seconds``. Idempotent."""
        if not self._terminated:
            self._terminated = True
            await stop_group(self._process, grace_seconds)
        await self._process.wait()
        await cancel_all(self._readers)

    async def _drain(self, stream: asyncio.StreamReader, listening: asyncio.Future[str]) -> None:
        def line(raw: bytes) -> None:
            match = _LISTENING.search(self._output.add(raw))
            if match and not listening.done():
                listening.set_result(match.group(1).rstrip("/"))

        await read_lines(stream, line)
