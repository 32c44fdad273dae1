"""The runner `paperclip serve` starts next to itself.

Its credential lives in the data dir (mode 0600) so that a runner left running
by a killed server reconnects to the next one; a pid file keeps the next
server from starting a second runner while that one lives.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import signal
import socket
import subprocess
import sys
from pathlib import Path

import psutil

from paperclip.domain.runs.runners import CREDENTIAL_PREFIX, RunnerService

log = logging.getLogger(__name__)


class LocalRunner:
    def __init__(self, data_dir: Path, server_url: str) -> None:
        self.data_dir = data_dir
        self.server_url = server_url
        self.name = f"local-{socket.gethostname()}"
        self.credential_file = data_dir / "runner.credential"
        self.pid_file = data_dir / "runner.pid"
        self.proc: subprocess.Popen[bytes] | None = None

    def credential(self) -> str:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if self.credential_file.exists():
            return self.credential_file.read_text().strip()
        secret = CREDENTIAL_PREFIX + secrets.token_urlsafe(32)
        fd = os.open(self.credential_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(secret)
        return secret

    def register(self, database_url: str) -> None:
        """Make the database know this machine's runner with the credential on disk.

        Runs before the server's event loop exists, on an engine of its own.
        """
        from paperclip.db.engine import create_engine, create_session_factory

        async def ensure() -> None:
            engine = create_engine(database_url, pool_size=1)
            try:
                await RunnerService(create_session_factory(engine)).ensure(
                    self.name, self.credential()
                )
            finally:
                await engine.dispose()

        asyncio.run(ensure())

    def alive_pid(self) -> int | None:
        try:
            pid = int(self.pid_file.read_text())
        except (FileNotFoundError, ValueError):
            return None
        with contextlib.suppress(psutil.Error):
            proc = psutil.Process(pid)
            if "runner" in proc.cmdline():
                return pid
        return None

    def start(self) -> None:
        existing = self.alive_pid()
        if existing is not None:
            log.info("the local runner (pid %s) from an earlier server is still running", existing)
            return
        env = {
            **os.environ,
            "PAPERCLIP_RUNNER_SERVER": self.server_url,
            "PAPERCLIP_RUNNER_CREDENTIAL_FILE": str(self.credential_file),
            "PAPERCLIP_RUNNER_WORK_DIR": str(self.data_dir / "runner"),
        }
        # Its own session: a Ctrl-C in the terminal reaches the server, which stops it in order.
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "paperclip", "runner"], env=env, start_new_session=True
        )
        self.pid_file.write_text(str(self.proc.pid))
        log.info("started the local runner (pid %s)", self.proc.pid)

    def stop(self, timeout: float = 15) -> None:
        pid = self.proc.pid if self.proc is not None else self.alive_pid()
        if pid is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        with contextlib.suppress(psutil.Error):
            psutil.Process(pid).wait(timeout)
        with contextlib.suppress(ProcessLookupError, psutil.Error):
            if psutil.pid_exists(pid):
                os.kill(pid, signal.SIGKILL)
        if self.proc is not None:
            with contextlib.suppress(Exception):
                self.proc.wait(5)
        self.pid_file.unlink(missing_ok=True)
        log.info("stopped the local runner")
