"""The ``opencode serve`` process: start it on a free loopback port, wait until it listens, stop it."""

from __future__ import annotations

import asyncio
import re
import socket
from collections.abc import Mapping, Sequence
from typing import Any

from paperclip_provider_kit.process import CliProcess, SpawnError

_LISTENING = re.compile(r"listening on (http://[^\s]+)")

__all__ = ["ServerProcess", "SpawnError", "free_port"]


def free_port() -> int:
    """A port of 127.0.0.1 nobody listens on now (``opencode serve --port 0`` means 4096)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ServerProcess:
    """One ``opencode serve`` (or compatible) process, leading its own process group."""

    def __init__(self, cli: CliProcess, url: str) -> None:
        self._cli = cli
        self.url = url

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
        cli = await CliProcess.start(
            command,
            name="opencode",
            what="output",
            env=env,
            cwd=cwd,
            user=user,
            stdin=asyncio.subprocess.DEVNULL,
        )
        self = cls(cli, f"http://127.0.0.1:{port}")
        listening: asyncio.Future[str] = asyncio.get_running_loop().create_future()

        def line(text: str) -> None:
            match = _LISTENING.search(text)
            if match and not listening.done():
                listening.set_result(match.group(1).rstrip("/"))

        assert cli.process.stdout is not None and cli.process.stderr is not None
        cli.tail_lines(cli.process.stdout, line)
        cli.tail_lines(cli.process.stderr, line)
        exited = asyncio.ensure_future(cli.process.wait())
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
        how = "exited" if not cli.alive else "did not listen"
        raise SpawnError(
            f"{argv[0]!r} {how} within {startup_timeout:g}s; output: {self.output_tail()}"
        )

    @property
    def pid(self) -> int:
        return self._cli.process.pid

    @property
    def alive(self) -> bool:
        return self._cli.alive

    def output_tail(self) -> str:
        """The last lines the process wrote (stdout and stderr)."""
        return self._cli.tail.text()

    async def exit_description(self) -> str:
        """How the process ended, for error messages."""
        return await self._cli.describe_exit()

    async def terminate(self, grace_seconds: float) -> None:
        """SIGTERM the process group, SIGKILL it after ``grace_seconds``. Idempotent."""
        await self._cli.stop(grace_seconds)
