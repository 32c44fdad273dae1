"""Real OS processes for tests: ``paperclip serve`` (and later the runner), killed for real."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

import httpx

PAPERCLIP = [sys.executable, "-m", "paperclip"]


class ServerProcess:
    """``paperclip serve --json`` as a child process; ``url`` once it listens."""

    def __init__(self, env: Mapping[str, str], log_path: Path, *extra_args: str) -> None:
        self.env = {**os.environ, **env}
        self.log_path = log_path
        self.extra_args = extra_args
        self.proc: subprocess.Popen[str] | None = None
        self.url = ""
        self.token: str | None = None
        """The operator token it printed the path of (None with login, or with it off)."""
        self.listening_at = self.healthy_at = 0.0
        """When it said where it listens, and when its health first answered (monotonic)."""

    def start(self, timeout: float = 60, *, healthy: bool = True) -> ServerProcess:
        """Started; with ``healthy`` (the default), once its health answers.

        Without it, once it says where it listens: for a start that a failpoint
        may kill before its health ever answers.
        """
        self.log = self.log_path.open("a")
        self.proc = subprocess.Popen(
            [*PAPERCLIP, "serve", "--json", *self.extra_args],
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
        )
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        line = self.proc.stdout.readline()  # the first line says where it listens
        if not line:
            raise RuntimeError(f"paperclip serve exited early: {self.tail()}")
        said = json.loads(line)
        self.url = said["url"]
        if "token_file" in said:
            self.token = Path(said["token_file"]).read_text().strip()
        self.listening_at = time.monotonic()
        if not healthy:
            return self
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"paperclip serve exited early: {self.tail()}")
            try:
                if httpx.get(f"{self.url}/api/health", timeout=2).status_code == 200:
                    self.healthy_at = time.monotonic()
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise TimeoutError(f"paperclip serve did not become healthy: {self.tail()}")

    @property
    def headers(self) -> dict[str, str]:
        """What a client of this server sends: the operator token, when it asks for one."""
        return operator_headers(self.token)

    def api(self, timeout: float = 30) -> httpx.Client:
        """A client of its API (``/api``), as its operator."""
        return httpx.Client(base_url=f"{self.url}/api", headers=self.headers, timeout=timeout)

    @property
    def client_env(self) -> dict[str, str]:
        """The environment of a ``paperclip`` client command of this server: its URL, and its
        data dir, where the command reads the operator token."""
        return {
            "PAPERCLIP_URL": self.url,
            "PAPERCLIP_DATA_DIR": self.env.get("PAPERCLIP_DATA_DIR", ""),
        }

    def board(self, path: str = "/") -> str:
        """The board's address at ``path`` (``/#/c/…``), through its sign-in URL (``/?token=…``),
        as `paperclip serve` prints it: the browser that opens it is signed in."""
        return board_address(self.url, self.token, path)

    def kill(self) -> None:
        """SIGKILL: no shutdown code runs."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def terminate(self, timeout: float = 40) -> int:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self.stop_local_runner()
        if getattr(self, "log", None):
            self.log.close()

    def stop_local_runner(self) -> None:
        """The runner `serve` started lives on after a SIGKILL of the server, by design; end it."""
        data_dir = self.env.get("PAPERCLIP_DATA_DIR")
        if not data_dir:
            return
        from paperclip.local_runner import LocalRunner

        pid = LocalRunner(Path(data_dir), "").alive_pid()  # checks it is still our runner
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text().splitlines()[-lines:])
        except FileNotFoundError:
            return ""


class RunnerProcess:
    """``paperclip runner`` as a child process, with a credential made for it."""

    def __init__(
        self,
        servers: list[str],
        credential: str,
        work_dir: Path,
        log_path: Path,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.env = {
            **os.environ,
            **(env or {}),
            "PAPERCLIP_RUNNER_CREDENTIAL": credential,
            "PAPERCLIP_RUNNER_SERVER": " ".join(servers),
            "PAPERCLIP_RUNNER_WORK_DIR": str(work_dir),
        }
        self.log_path = log_path
        self.proc: subprocess.Popen[str] | None = None

    def start(self) -> RunnerProcess:
        self.log = self.log_path.open("a")
        self.proc = subprocess.Popen(
            [*PAPERCLIP, "runner"], env=self.env, stdout=self.log, stderr=self.log, text=True
        )
        return self

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        if getattr(self, "log", None):
            self.log.close()

    def tail(self, lines: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text().splitlines()[-lines:])
        except FileNotFoundError:
            return ""


def operator_headers(token: str | None) -> dict[str, str]:
    """``Authorization`` with the operator token (none without one)."""
    return {"Authorization": f"Bearer {token}"} if token else {}


def board_address(url: str, token: str | None, path: str = "/") -> str:
    """``url``'s board at ``path`` (``/#/…``), through the sign-in URL when there is a token."""
    assert path.startswith("/"), path
    page, hash_, fragment = path.partition("#")
    if token is None or page != "/":
        return f"{url}{path}"
    return f"{url}/?token={token}{hash_}{fragment}"


def wait_until(predicate, timeout: float = 60, interval: float = 0.1, message: str = "condition"):
    """Poll ``predicate`` until it returns a truthy value; that value."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {message}")
        time.sleep(interval)


def lines_with(log_path: Path, text: str) -> int:
    """How many lines of a process's log hold ``text`` (0 before the log exists): taken
    before an event, a test waits for more of them after it."""
    try:
        return sum(text in line for line in log_path.read_text().splitlines())
    except FileNotFoundError:
        return 0


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
