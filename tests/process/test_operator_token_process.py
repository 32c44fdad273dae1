"""Another user of the host is not the operator of a server without login.

Without login the server listens on loopback, which every account of the
machine reaches. It used to take any request without a token for the
operator's. Now the operator shows the token that only the server's user can
read (``<data dir>/operator-token``, 0600): a real second Unix user, whose
shell can list the data dir, reads no token and gets ``401`` for every call.
"""

from __future__ import annotations

import json
import pwd
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from paperclip.db.access import running_as_root
from tests.support.processes import ServerProcess

pytestmark = pytest.mark.process

INTRUDER = "pc-operator-intruder"

# What the other user's process asks, with the system's Python alone (urllib): the
# operator's API without a token, with a guessed one, and a write.
PROBE = r"""
import json, sys, urllib.request, urllib.error
url = sys.argv[1]
def ask(method, path, headers=None, body=None):
    request = urllib.request.Request(url + path, method=method, headers=headers or {}, data=body)
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return [answer.status, None]
    except urllib.error.HTTPError as refused:
        return [refused.code, json.loads(refused.read() or b"{}").get("code")]
print(json.dumps([
    ask("GET", "/api/health"),
    ask("GET", "/api/companies"),
    ask("GET", "/api/companies", {"Authorization": "Bearer pco_guessed"}),
    ask("GET", "/api/companies", {"Cookie": "paperclip_operator_" + url.rsplit(":", 1)[1] + "=x"}),
    ask("POST", "/api/companies", {"Content-Type": "application/json"}, b'{"name": "Mine now"}'),
]))
"""


@pytest.fixture
def intruder() -> Iterator[pwd.struct_passwd]:
    """A second, unprivileged Unix user of this machine (made for the test)."""
    made = False
    try:
        pwd.getpwnam(INTRUDER)
    except KeyError:
        subprocess.run(
            ["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", INTRUDER],
            check=True,
            capture_output=True,
        )
        made = True
    try:
        yield pwd.getpwnam(INTRUDER)
    finally:
        if made:
            subprocess.run(["userdel", INTRUDER], check=False, capture_output=True)


@pytest.fixture
def open_folder() -> Iterator[Path]:
    """A folder every user may enter (as a data dir's parent often is)."""
    root = Path(tempfile.mkdtemp(prefix="pc-operator-", dir="/var/tmp"))
    root.chmod(0o755)
    yield root
    shutil.rmtree(root, ignore_errors=True)


def as_user(user: pwd.struct_passwd, *command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(command),
        user=user.pw_uid,
        group=user.pw_gid,
        extra_groups=[],
        env={"PATH": "/usr/bin:/bin", "HOME": "/"},
        cwd="/",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.skipif(not running_as_root(), reason="making a second Unix user needs root")
def test_another_user_reads_no_token_and_cannot_act_as_the_operator(
    paperclip_database_url, intruder, open_folder
):
    data = open_folder / "data"
    env = {
        "PAPERCLIP_DATABASE_URL": paperclip_database_url,
        "PAPERCLIP_DATA_DIR": str(data),
        "PAPERCLIP_PORT": "0",
    }
    server = ServerProcess(env, open_folder / "serve.log", "--no-runner").start()
    try:
        token_file = data / "operator-token"
        assert server.token is not None and server.token == token_file.read_text().strip()
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600

        # The data dir is open to them: the file's own mode keeps the token theirs alone.
        listed = as_user(intruder, "ls", str(data))
        assert listed.returncode == 0 and "operator-token" in listed.stdout.split()
        read = as_user(intruder, "cat", str(token_file))
        assert read.returncode != 0 and "Permission denied" in read.stderr
        assert server.token not in read.stdout

        probe = as_user(intruder, "/usr/bin/python3", "-c", PROBE, server.url)
        assert probe.returncode == 0, probe.stderr
        health, *refused = json.loads(probe.stdout)
        assert health == [200, None]
        assert refused == [[401, "operator_token_required"]] * 4

        # The operator, with the token, finds nothing the other user tried to write.
        with server.api() as api:
            assert api.get("/companies").json()["items"] == []
    finally:
        server.stop()


def test_turned_off_it_is_said_at_start_and_no_token_is_made(paperclip_database_url, tmp_path):
    env = {
        "PAPERCLIP_DATABASE_URL": paperclip_database_url,
        "PAPERCLIP_DATA_DIR": str(tmp_path / "data"),
        "PAPERCLIP_PORT": "0",
        "PAPERCLIP_OPERATOR_TOKEN_REQUIRED": "false",
        "PAPERCLIP_LOG_FORMAT": "json",
    }
    server = ServerProcess(env, tmp_path / "serve.log", "--no-runner").start()
    try:
        assert server.token is None and not (tmp_path / "data" / "operator-token").exists()
        with server.api() as api:
            assert api.get("/companies").status_code == 200  # no token: the operator
        warnings = [
            json.loads(line)["message"]
            for line in server.tail(200).splitlines()
            if line.startswith("{") and '"warning"' in line
        ]
        assert any("PAPERCLIP_OPERATOR_TOKEN_REQUIRED=false" in w for w in warnings), warnings
    finally:
        server.stop()
