"""The processes of a chaos cluster: embedded PostgreSQL, control-plane replicas, runners.

Each is a real OS process started the way an operator starts it
(``paperclip serve --no-runner``, ``paperclip runner``), with its own log
file. The harness signals them from outside and starts them again; it learns
why one died from its exit status and its log (a fired failpoint says so).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil

from paperclip.db.embedded import EmbeddedPostgres

PAPERCLIP = [sys.executable, "-m", "paperclip"]
FAKE_CODEX = [sys.executable, "-m", "paperclip_codex_testing.fake_app_server"]
FAKE_PROFILE = "fake"
"""The runners' launch profile for the fake app-server; the chaos agents select it by name."""
_FIRED = re.compile(r"failpoint (\S+) fired")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class Child:
    """One long-lived child process, started again under the same name after it dies."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str], log_path: Path) -> None:
        self.name, self.argv, self.env, self.log_path = name, argv, env, log_path
        self.proc: subprocess.Popen[bytes] | None = None
        self.armed = ""
        """The failpoints armed in the current process (``PAPERCLIP_FAILPOINTS``)."""
        self.ready_at: float | None = None
        """When the current process was first seen serving (a replica healthy, a runner
        connected); None until then."""
        self.resting = False
        """The current process is the unarmed life after a failpoint death."""
        self.expected_exit = False
        """True while the harness itself is stopping it (a signal it sent)."""
        self.signalled_at = 0.0
        self.retry_at = 0.0
        """After a death nobody caused (e.g. no database to start on), not before this."""
        self._log_offset = 0

    def start(self, armed: str = "") -> None:
        self.armed, self.expected_exit, self.resting = armed, False, False
        self.ready_at = None
        self._log_offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        env = {**os.environ, **self.env, "PAPERCLIP_FAILPOINTS": armed}
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                self.argv, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def exited(self) -> int | None:
        """Its exit status once it is gone (negative: the signal), else None."""
        return None if self.proc is None else self.proc.poll()

    def signal(self, sig: int) -> None:
        if self.alive():
            assert self.proc is not None
            self.expected_exit, self.signalled_at = True, time.monotonic()
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(sig)

    def fired_point(self) -> str | None:
        """The failpoint the last process reported firing, if any."""
        try:
            with self.log_path.open("rb") as log:
                log.seek(self._log_offset)
                found = _FIRED.findall(log.read().decode(errors="replace"))
        except FileNotFoundError:
            return None
        return found[-1] if found else None

    def stop(self, timeout: float = 15) -> None:
        """SIGTERM, then SIGKILL; its whole process group (providers included) goes with it."""
        if self.proc is None:
            return
        if self.alive():
            self.signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)

    def tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except FileNotFoundError:
            return ""


def control_plane(index: int, port: int, database_url: str, folder: Path, env: dict) -> Child:
    """``paperclip serve --no-runner`` on a fixed port (a restart listens where it did)."""
    return Child(
        f"cp{index}",
        [*PAPERCLIP, "serve", "--no-runner"],
        {
            **env,
            "PAPERCLIP_DATABASE_URL": database_url,
            "PAPERCLIP_DATA_DIR": str(folder / f"cp{index}"),
            "PAPERCLIP_PORT": str(port),
            "PAPERCLIP_INSTANCE_ID": f"replica-{index}",
            "PAPERCLIP_LOG_FORMAT": "json",
        },
        folder / f"cp{index}.log",
    )


def fake_launch(script_dir: Path, fake_log: Path) -> str:
    """``PAPERCLIP_RUNNER_LAUNCH`` offering the fake app-server; each agent's model names its script."""
    argv = [*FAKE_CODEX, "--script-dir", str(script_dir), "--log", str(fake_log)]
    return json.dumps({"codex": {FAKE_PROFILE: argv}})


def runner(index: int, servers: list[str], credential: str, folder: Path, launch: str) -> Child:
    """``paperclip runner`` with its own credential and work folder, dialling ``servers``."""
    return Child(
        f"runner{index}",
        [*PAPERCLIP, "runner"],
        {
            "PAPERCLIP_RUNNER_CREDENTIAL": credential,
            "PAPERCLIP_RUNNER_SERVER": " ".join(servers),
            "PAPERCLIP_RUNNER_WORK_DIR": str(folder / f"runner{index}"),
            "PAPERCLIP_RUNNER_LAUNCH": launch,
        },
        folder / f"runner{index}.log",
    )


def runner_credential(name: str, database_url: str) -> str:
    out = subprocess.run(
        [*PAPERCLIP, "runners", "create", name, "--json"],
        env={**os.environ, "PAPERCLIP_DATABASE_URL": database_url},
        capture_output=True,
        text=True,
        check=True,
    )
    credential: str = json.loads(out.stdout)["credential"]
    return credential


def provider_processes(script_dir: Path) -> list[psutil.Process]:
    """The fake app-servers of this cluster running now."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        cmdline = proc.info["cmdline"] or []
        if "paperclip_codex_testing.fake_app_server" in cmdline and str(script_dir) in cmdline:
            found.append(proc)
    return found


class Postgres:
    """The cluster's embedded PostgreSQL, in a folder of its own: killed, stopped, started."""

    def __init__(self, folder: Path) -> None:
        self.server = EmbeddedPostgres(folder / "pgdata")
        self.url = ""
        self.down = False

    def start(self, timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.url = self.server.start()
                self.down = False
                return self.url
            except Exception:
                # After a kill its last backends may still hold the shared memory a moment.
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)

    def kill(self) -> None:
        """SIGKILL of the postmaster: no shutdown checkpoint; the next start recovers from WAL."""
        pid = self.postmaster_pid()
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.server.stop()  # lets go of its handle; the server is already gone
        self.down = True

    def stop(self) -> None:
        self.server.stop()
        self.down = True

    def postmaster_pid(self) -> int | None:
        try:
            first = (self.server.pgdata / "postmaster.pid").read_text().splitlines()[0]
        except (FileNotFoundError, IndexError, PermissionError):
            return None
        return int(first) if first.strip().isdigit() else None
