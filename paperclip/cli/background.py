"""A server in the background: ``paperclip serve --detach``, its pid file, ``paperclip stop``.

``serve --detach`` starts ``paperclip serve`` as a process of its own session
(a closed terminal or a Ctrl-C does not reach it), its output going to a log
file, and returns once it answers, saying where, or with its error line when
it cannot start (a port in use, a server already running, a setting): never
silently. The pid file names the server while it runs; ``paperclip stop``
reads it, stops the server as SIGTERM does, and returns once it is gone. No
shell job, no sleep.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import click
import httpx
import psutil

from paperclip.cli_kit.output import console, emit_json, errors, fail

PAPERCLIP_SERVE = [sys.executable, "-m", "paperclip", "serve"]
STOP_SECONDS = 90
"""How long `paperclip stop` waits: the server's graceful stop (30 s), then its database's."""


def running_pid(pid_file: Path) -> int | None:
    """The pid the file names, if that process is a ``paperclip serve`` still running."""
    try:
        pid = int(pid_file.read_text().strip())
    except (FileNotFoundError, ValueError):
        return None
    with contextlib.suppress(psutil.Error):
        process = psutil.Process(pid)
        command = process.cmdline()
        if process.status() != psutil.STATUS_ZOMBIE and "serve" in command:
            return pid
    return None


def claim(pid_file: Path, default: Path) -> None:
    """Refuse to start while the pid file names a running server; else say this process is it."""
    if (pid := running_pid(pid_file)) is not None and pid != os.getpid():
        fail(
            f"a server is already running (pid {pid}, {pid_file})",
            hint=f"Stop it with `paperclip stop{_pid_option(pid_file, default)}` first.",
            code=2,
        )
    pid_file.parent.mkdir(parents=True, exist_ok=True)
    pid_file.write_text(f"{os.getpid()}\n")


def release(pid_file: Path) -> None:
    """Remove the pid file, if it still names this process."""
    with contextlib.suppress(FileNotFoundError, ValueError):
        if int(pid_file.read_text().strip()) == os.getpid():
            pid_file.unlink()


def default_files(data_dir: Path) -> tuple[Path, Path]:
    """The pid file and the log of a server in the background: in its data dir."""
    return data_dir / "serve.pid", data_dir / "serve.log"


def detach(
    options: list[str],
    pid_file: Path,
    log_file: Path,
    *,
    default: Path,
    wait_seconds: float,
    as_json: bool,
) -> None:
    """Start ``paperclip serve OPTIONS`` in the background; return once it answers."""
    log_file.parent.mkdir(parents=True, exist_ok=True)
    start = log_file.stat().st_size if log_file.exists() else 0
    # Only its user reads the log: the start line carries the board's sign-in URL.
    with os.fdopen(os.open(log_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600), "ab") as log:
        os.fchmod(log.fileno(), 0o600)
        child = subprocess.Popen(
            [*PAPERCLIP_SERVE, "--json", "--pid-file", str(pid_file), *options],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
        )
    deadline = time.monotonic() + wait_seconds
    try:
        # Its address is said once the port is bound; it answers once its startup is done.
        while (listening := _listening(log_file, start)) is None or not _answers(listening):
            if (code := child.poll()) is not None:
                said = [line for line in _lines(log_file, start) if line.startswith("error:")]
                for line in said or [f"error: paperclip serve exited ({code}); see {log_file}"]:
                    errors.print(line, soft_wrap=True, highlight=False, markup=False)
                raise SystemExit(code or 1)
            if time.monotonic() > deadline:
                child.terminate()
                fail(f"paperclip serve did not listen within {wait_seconds:g} s; see {log_file}")
            time.sleep(0.1)
    except KeyboardInterrupt:
        child.terminate()
        raise
    stop = f"paperclip stop{_pid_option(pid_file, default)}"
    if as_json:
        emit_json(listening | {"pid": child.pid, "pid_file": str(pid_file), "log": str(log_file)})
        return
    console.print(
        f"Paperclip is serving on [bold]{listening['url']}[/] in the background "
        f"(pid {child.pid}); log: {log_file}; stop it with `{stop}`",
        soft_wrap=True,
        highlight=False,
    )
    if board := listening.get("board_url"):
        console.print(f"Board: {board}", soft_wrap=True, highlight=False, markup=False)


@click.command("stop")
@click.option(
    "--pid-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The server's pid file (default <data dir>/serve.pid, as `serve --detach` writes).",
)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON line for scripts.")
def stop(pid_file: Path | None, as_json: bool) -> None:
    """Stop a server started with --detach (or --pid-file), as SIGTERM does, and wait until
    it is gone: its requests finished, its runner and embedded database stopped."""
    from paperclip.cli_kit.settings import load_settings

    stop_server(pid_file or default_files(load_settings().data_dir)[0], as_json=as_json)


def stop_server(pid_file: Path, *, as_json: bool) -> None:
    """Stop the server the pid file names, as SIGTERM does, and wait until it is gone."""
    if not pid_file.exists():
        fail(
            f"no server to stop: {pid_file} does not exist",
            hint="A server started without --detach or --pid-file stops with its Ctrl-C or "
            "SIGTERM.",
        )
    pid = running_pid(pid_file)
    if pid is None:
        pid_file.unlink(missing_ok=True)
        _said(as_json, "not running", None, f"no server was running; removed {pid_file}")
        return
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_SECONDS
    while _alive(pid):
        if time.monotonic() > deadline:
            fail(
                f"pid {pid} is still running {STOP_SECONDS} s after SIGTERM",
                hint=f"See its log; `kill -9 {pid}` ends it without its shutdown.",
            )
        time.sleep(0.1)
    pid_file.unlink(missing_ok=True)
    _said(as_json, "stopped", pid, f"stopped the server (pid {pid})")


def _said(as_json: bool, event: str, pid: int | None, text: str) -> None:
    if as_json:
        emit_json({"event": event, "pid": pid})
    else:
        console.print(text, highlight=False)


def _alive(pid: int) -> bool:
    with contextlib.suppress(psutil.Error):
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    return False


def _lines(log_file: Path, start: int) -> list[str]:
    with log_file.open("rb") as log:
        log.seek(start)
        return log.read().decode(errors="replace").splitlines()


def _listening(log_file: Path, start: int) -> dict | None:
    for line in _lines(log_file, start):
        if line.startswith('{"event": "listening"'):
            with contextlib.suppress(ValueError):
                return dict(json.loads(line))
    return None


def _answers(listening: dict) -> bool:
    url = str(listening.get("url", "")).replace("://0.0.0.0:", "://127.0.0.1:")
    url = url.replace("://[::]:", "://[::1]:")
    try:
        return httpx.get(f"{url}/api/health", timeout=2).status_code < 500
    except httpx.HTTPError:
        return False


def _pid_option(pid_file: Path, default: Path) -> str:
    """What `paperclip stop` needs to find this pid file."""
    return "" if pid_file.resolve() == default.resolve() else f" --pid-file {pid_file}"
