"""The embedded PostgreSQL's socket is reachable by its own user and root, no one else.

The database trusts every connection on its socket, so the folder holding it
is the only lock. When the data folder's path is too long for a socket, the
socket moves to a folder under the temp dir: it used to have a predictable
name (a digest of the data folder's path) and be reused as found, so another
local user who made it first, open to all, connected as the superuser.
"""

from __future__ import annotations

import hashlib
import os
import pwd
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from paperclip.db import pg_install
from paperclip.db.access import EmbeddedDatabaseError, running_as_root, server_user
from paperclip.db.embedded import SOCKET_NAME, SOCKET_PATH_MAX, EmbeddedPostgres

pytestmark = pytest.mark.process

INTRUDER = "pc-socket-intruder"


@pytest.fixture
def long_pgdata() -> Iterator[Path]:
    """A data folder whose socket path is too long, reachable by the server's system user."""
    root = Path(tempfile.mkdtemp(prefix="pc-socket-", dir="/var/tmp"))
    root.chmod(0o755)
    pgdata = root / ("d" * 90) / "pgdata"
    assert len(str(pgdata / SOCKET_NAME)) > SOCKET_PATH_MAX
    yield pgdata
    shutil.rmtree(root, ignore_errors=True)


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
        timeout=30,
        check=False,
    )


def psql_as(user: pwd.struct_passwd, psql: Path, host: Path) -> subprocess.CompletedProcess[str]:
    """The user asks the server at ``host`` for something only a superuser may read."""
    return as_user(
        user,
        str(psql),
        *("-h", str(host), "-U", "postgres", "-d", "paperclip", "-X", "-tA"),
        *("-c", "SELECT rolname FROM pg_authid WHERE rolsuper LIMIT 1"),
    )


@pytest.mark.skipif(not running_as_root(), reason="making a second Unix user needs root")
def test_another_user_who_makes_the_socket_folder_first_cannot_connect(long_pgdata, intruder):
    # The folder the server used to pick, made first by the other user, open to all.
    digest = hashlib.sha256(str(long_pgdata.absolute()).encode()).hexdigest()[:12]
    planted = Path(tempfile.gettempdir()) / f"paperclip-pg-{digest}"
    made = as_user(intruder, "mkdir", "-m", "0777", str(planted))
    assert made.returncode == 0, made.stderr
    assert planted.stat().st_uid == intruder.pw_uid

    server = EmbeddedPostgres(long_pgdata)
    try:
        url = server.start()
        socket_dir = Path(url.split("host=", 1)[1])
        version = int((long_pgdata / "PG_VERSION").read_text())
        psql = pg_install.install_for(version, as_root=True) / "bin" / "psql"

        # The other user reaches the database through neither folder ...
        for host in (planted, socket_dir):
            attempt = psql_as(intruder, psql, host)
            assert attempt.returncode != 0, f"{INTRUDER} connected through {host}"
            assert "postgres" not in attempt.stdout
        # ... while the server is up for its own users, in a folder of its user alone.
        assert (socket_dir / SOCKET_NAME).exists()
        assert socket_dir != planted and not (planted / SOCKET_NAME).exists()
        info = os.lstat(socket_dir)
        assert info.st_uid == server_user().uid and stat.S_IMODE(info.st_mode) == 0o700
    finally:
        server.stop()
        shutil.rmtree(planted, ignore_errors=True)
    assert not socket_dir.exists()  # the folder goes with the server that made it


@pytest.mark.parametrize("opened", ["mode", "owner"])
def test_a_running_server_whose_socket_folder_is_not_private_is_refused(long_pgdata, opened):
    first = EmbeddedPostgres(long_pgdata)
    url = first.start()
    socket_dir = Path(url.split("host=", 1)[1])
    try:
        # As a folder left open by an earlier version, or handed to someone else.
        if opened == "mode":
            socket_dir.chmod(0o777)
        elif running_as_root():
            os.chown(socket_dir, 65534, -1)  # nobody
        else:
            pytest.skip("giving a folder to another user needs root")
        with pytest.raises(EmbeddedDatabaseError) as refused:
            EmbeddedPostgres(long_pgdata).start()
        message = str(refused.value)
        assert str(socket_dir) in message and "trusts every connection" in message
    finally:
        if running_as_root():
            os.chown(socket_dir, server_user().uid, -1)
        socket_dir.chmod(0o700)
        first.stop()
