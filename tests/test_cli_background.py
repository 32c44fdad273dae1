"""``paperclip serve --detach``, ``--pid-file`` and ``paperclip stop``, as a user runs them.

A server in the background is started by one command that returns once it
listens, or with its error line (a server already running, a port in use):
never silently. ``paperclip stop`` returns once it is gone.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys

import httpx
import psutil
import pytest

from tests.support.processes import ServerProcess, free_port, wait_until

pytestmark = pytest.mark.process


@pytest.fixture
def env(paperclip_database_url, tmp_path):
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PAPERCLIP_")}
    return {
        **clean,
        "PAPERCLIP_DATABASE_URL": paperclip_database_url,
        "PAPERCLIP_DATA_DIR": str(tmp_path / "data"),
        "PAPERCLIP_LOCAL_RUNNER": "false",
    }


def paperclip(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "paperclip", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )


def test_detach_then_stop(env, tmp_path):
    port = str(free_port())
    started = paperclip("serve", "--port", port, "--detach", env=env)
    assert started.returncode == 0, started.stderr
    data = tmp_path / "data"
    pid = int((data / "serve.pid").read_text())
    token = (data / "operator-token").read_text().strip()
    assert started.stdout.strip().splitlines() == [
        f"Paperclip is serving on http://127.0.0.1:{port} in the background (pid {pid}); "
        f"log: {data / 'serve.log'}; stop it with `paperclip stop`",
        f"Board: http://127.0.0.1:{port}/?token={token}",
    ]
    # Its log holds that URL too: only its user may read it.
    assert stat.S_IMODE((data / "serve.log").stat().st_mode) == 0o600
    try:
        # It listens as soon as the command returns, and outlives it.
        assert httpx.get(f"http://127.0.0.1:{port}/api/health").status_code == 200
        auth = {"Authorization": f"Bearer {token}"}
        assert httpx.get(f"http://127.0.0.1:{port}/api/companies", headers=auth).status_code == 200
        assert psutil.Process(pid).status() != psutil.STATUS_ZOMBIE

        # Started again: the first is said, by its pid file, and nothing else starts.
        again = paperclip("serve", "--port", port, "--detach", env=env)
        assert again.returncode == 2
        assert again.stderr.splitlines() == [
            f"error: a server is already running (pid {pid}, {data / 'serve.pid'}). "
            "Stop it with `paperclip stop` first."
        ]
        # Another pid file, the same port: the port in use is said.
        other = paperclip(
            "serve", "--port", port, "--detach", "--pid-file", str(tmp_path / "b.pid"), env=env
        )
        assert other.returncode == 2
        (line,) = other.stderr.splitlines()
        assert line.startswith(f"error: cannot listen on 127.0.0.1:{port}: Address already in use")
        assert "`paperclip stop`" in line
        assert not (tmp_path / "b.pid").exists()
        assert int((data / "serve.pid").read_text()) == pid

        stopped = paperclip("stop", env=env)
        assert stopped.returncode == 0, stopped.stderr
        assert stopped.stdout.strip() == f"stopped the server (pid {pid})"
        # Gone when `stop` returns: the port is free, the pid file removed.
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
        assert not (data / "serve.pid").exists()
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"http://127.0.0.1:{port}/api/health")
    finally:
        if psutil.pid_exists(pid):
            os.kill(pid, signal.SIGKILL)

    nothing = paperclip("stop", env=env)
    assert nothing.returncode == 1
    assert nothing.stderr.startswith(
        f"error: no server to stop: {data / 'serve.pid'} does not exist"
    )


def test_detach_says_why_it_did_not_start(env, tmp_path):
    result = paperclip(
        "serve",
        "--port",
        "0",
        "--detach",
        "--log-file",
        str(tmp_path / "x.log"),
        env={
            **env,
            "PAPERCLIP_DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none",
            "PAPERCLIP_DATABASE_WAIT_SECONDS": "0",
        },
    )
    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith("error: the database is unavailable: ConnectionRefusedError")
    assert "the database is unavailable" in (tmp_path / "x.log").read_text()  # all of it, there
    assert not (tmp_path / "data" / "serve.pid").exists()


def test_detach_json_and_a_pid_file_of_ones_own(env, tmp_path):
    pid_file = tmp_path / "run" / "paperclip.pid"
    started = paperclip(
        "serve", "--port", "0", "--detach", "--json", "--pid-file", str(pid_file), env=env
    )
    assert started.returncode == 0, started.stderr
    said = json.loads(started.stdout)
    assert said["event"] == "listening" and said["pid_file"] == str(pid_file)
    token_file = tmp_path / "data" / "operator-token"
    assert said["token_file"] == str(token_file)
    assert said["board_url"] == f"{said['url']}/?token={token_file.read_text().strip()}"
    assert int(pid_file.read_text()) == said["pid"]
    try:
        assert httpx.get(f"{said['url']}/api/health").status_code == 200
        wrong = paperclip("stop", env=env)  # the default pid file names nothing
        assert wrong.returncode == 1 and "does not exist" in wrong.stderr
        stopped = paperclip("stop", "--pid-file", str(pid_file), "--json", env=env)
        assert json.loads(stopped.stdout) == {"event": "stopped", "pid": said["pid"]}
    finally:
        if psutil.pid_exists(said["pid"]):
            os.kill(said["pid"], signal.SIGKILL)


def test_a_foreground_server_names_itself_in_its_pid_file(env, tmp_path):
    pid_file = tmp_path / "fg.pid"
    server = ServerProcess(env, tmp_path / "fg.log", "--pid-file", str(pid_file)).start()
    try:
        assert int(pid_file.read_text()) == server.proc.pid
        assert server.terminate() == 0
        assert not pid_file.exists()  # removed as it stopped
    finally:
        server.stop()


def test_a_stale_pid_file_is_no_obstacle(env, tmp_path):
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    pid_file = tmp_path / "stale.pid"
    pid_file.write_text(f"{gone.pid}\n")
    stopped = paperclip("stop", "--pid-file", str(pid_file), env=env)
    assert stopped.returncode == 0 and "no server was running" in stopped.stdout
    assert not pid_file.exists()

    pid_file.write_text(f"{gone.pid}\n")
    server = ServerProcess(env, tmp_path / "s.log", "--pid-file", str(pid_file)).start()
    try:
        wait_until(lambda: pid_file.read_text().strip() == str(server.proc.pid), 10)
    finally:
        server.stop()
