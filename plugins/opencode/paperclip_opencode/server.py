"""The ``opencode serve`` process: start it on a free loopback port, wait until it listens, stop it."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
import re
import signal
import socket
from collections.abc import Mapping, Sequence
from typing import Any

OUTPUT_LINES = 40
_LISTENING = re.compile(r"listening on (http://[^\s]+)")


class SpawnError(Exception):
    """The server could not be started, or did not listen in time."""

    def __init__(self, message: str, *, missing: bool = False) -> None:
        super().__init__(message)
        self.missing = missing
        """The executable was not found."""


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
        self._output: collections.deque[str] = collections.deque(maxlen=OUTPUT_LINES)
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
        as_user = user.subprocess_kwargs() if user is not None else {}
        port = free_port()
        command = [*argv, "--port", str(port), "--hostname", "127.0.0.1"]
        try:
            process = await asyncio.create_subprocess_exec(
                *command,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=dict(env),
                cwd=_existing_dir(cwd),
                start_new_session=True,
                **as_user,
            )
        except FileNotFoundError as exc:
            raise SpawnError(f"cannot start {argv[0]!r}: not found", missing=True) from exc
        except OSError as exc:
            raise SpawnError(f"cannot start {argv[0]!r}: {exc}") from exc
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
        return "\n".join(self._output)

    async def exit_description(self) -> str:
        """How the process ended, for error messages."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._process.wait()), 1.0)
        code = self._process.returncode
        if code is None:
            status = "stopped answering (still running)"
        elif code < 0:
            status = f"was killed by signal {-code}"
        else:
            status = f"exited with status {code}"
        tail = self.output_tail()
        return f"opencode {status}" + (f"; output: {tail}" if tail else "")

    async def terminate(self, grace_seconds: float) -> None:
        """SIGTERM the process group, SIGKILL it after ``grace_seconds``. Idempotent."""
        if not self._terminated:
            self._terminated = True
            if self._process.returncode is None:
                self._signal(signal.SIGTERM)
                try:
                    await asyncio.wait_for(self._process.wait(), grace_seconds)
                except TimeoutError:
                    self._signal(signal.SIGKILL)
            # Children that outlived their leader (a shell the model started) go too.
            self._signal(signal.SIGKILL)
        await self._process.wait()
        for reader in self._readers:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader

    def _signal(self, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._process.pid, signum)

    async def _drain(self, stream: asyncio.StreamReader, listening: asyncio.Future[str]) -> None:
        while True:
            try:
                line = await stream.readline()
            except ValueError:
                continue
            if not line:
                return
            text = line.decode(errors="replace").rstrip()
            self._output.append(text)
            match = _LISTENING.search(text)
            if match and not listening.done():
                listening.set_result(match.group(1).rstrip("/"))


def _existing_dir(path: str | None) -> str | None:
    return path if path and os.path.isdir(path) else None
