"""Every configuration mistake answers in one line: the variable, what it expects, what to do.

Real ``paperclip`` processes, as a user runs them: a malformed
``PAPERCLIP_DATABASE_URL``, a database that cannot be reached or refuses us,
malformed ``PAPERCLIP_RUNNER_LAUNCH`` JSON, any other setting that fails
validation. Each exits non-zero with one ``error:`` line on stderr and no
traceback.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from sqlalchemy.engine import make_url

pytestmark = pytest.mark.process

UNREACHABLE = "postgresql://nobody:hunter2@127.0.0.1:1/none"


def paperclip(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    # No PAPERCLIP_* from the test's own environment: each test says what it sets.
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PAPERCLIP_")}
    return subprocess.run(
        [sys.executable, "-m", "paperclip", *args],
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def one_error_line(result: subprocess.CompletedProcess[str], *, only_line: bool = True) -> str:
    """The command failed with exactly one ``error:`` line (the only line, unless the command
    also logs), and no traceback anywhere."""
    assert result.returncode != 0, result.stdout
    assert "Traceback" not in result.stderr + result.stdout, result.stderr
    lines = result.stderr.strip().splitlines()
    errors = [line for line in lines if line.startswith("error: ")]
    assert len(errors) == 1, result.stderr
    if only_line:
        assert lines == errors, result.stderr
    return errors[0]


@pytest.fixture
def env(tmp_path):
    return {"PAPERCLIP_DATA_DIR": str(tmp_path / "data")}


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("not a url", "not a URL"),
        ("postgresql://me:hunter2@db.example:fivefour/x", "its port is not a number"),
        ("mysql://me:hunter2@db.example/x", "needs PostgreSQL, not 'mysql'"),
    ],
)
@pytest.mark.parametrize("command", [("db", "current"), ("db", "upgrade"), ("doctor",), ("serve",)])
def test_a_malformed_database_url(env, command, url, says):
    line = one_error_line(paperclip(*command, env={**env, "PAPERCLIP_DATABASE_URL": url}))
    assert line.startswith("error: PAPERCLIP_DATABASE_URL: ")
    assert says in line and "postgresql://USER:PASSWORD@HOST:PORT/DATABASE" in line
    assert "hunter2" not in line  # a URL may hold a password: never repeated
    assert "docs/configuration.md" in line


@pytest.mark.parametrize("command", [("db", "current"), ("db", "upgrade"), ("keys", "list")])
def test_an_unreachable_database(env, command):
    result = paperclip(*command, env={**env, "PAPERCLIP_DATABASE_URL": UNREACHABLE})
    line = one_error_line(result)
    assert result.returncode == 2
    assert "cannot use the database at postgresql://nobody:***@127.0.0.1:1/none" in line
    assert "ConnectionRefusedError" in line and "PAPERCLIP_DATABASE_URL" in line
    assert "hunter2" not in result.stderr


def test_doctor_with_an_unreachable_database_reports_and_says_so(env):
    result = paperclip("doctor", env={**env, "PAPERCLIP_DATABASE_URL": UNREACHABLE})
    line = one_error_line(result)
    assert result.returncode == 1
    assert "database at postgresql://nobody:***@127.0.0.1:1/none is unavailable" in line
    assert "PAPERCLIP_DATABASE_URL" in line
    assert "unavailable" in result.stdout  # the report itself, on stdout as ever


def test_serve_with_an_unreachable_database(env):
    result = paperclip(
        "serve",
        "--no-runner",
        "--port",
        "0",
        env={**env, "PAPERCLIP_DATABASE_URL": UNREACHABLE, "PAPERCLIP_DATABASE_WAIT_SECONDS": "0"},
    )
    line = one_error_line(result, only_line=False)  # serve also logs its start and stop
    assert result.returncode == 2
    assert "the database is unavailable: ConnectionRefusedError" in line
    assert "PAPERCLIP_DATABASE_URL" in line


def test_a_database_that_refuses_us_is_said_at_once(env, paperclip_database_url):
    missing = make_url(paperclip_database_url).set(database="no_such_database")
    url = missing.render_as_string(hide_password=False)
    for command in (("db", "current"), ("db", "upgrade")):
        line = one_error_line(paperclip(*command, env={**env, "PAPERCLIP_DATABASE_URL": url}))
        assert 'database "no_such_database" does not exist' in line, line

    # serve waits for a database that is away, not for one that answers "no".
    started = time.monotonic()
    result = paperclip(
        "serve", "--no-runner", "--port", "0", env={**env, "PAPERCLIP_DATABASE_URL": url}
    )
    assert time.monotonic() - started < 30  # the wait is 60 s by default
    line = one_error_line(result, only_line=False)
    assert result.returncode == 2 and 'database "no_such_database" does not exist' in line


@pytest.mark.parametrize(
    ("launch", "says"),
    [
        ('{"codex": {"fake": ["python"]}', "PAPERCLIP_RUNNER_LAUNCH is not valid JSON: Expecting"),
        ("codex app-server", "PAPERCLIP_RUNNER_LAUNCH is not valid JSON"),
        ('{"codex": ["codex", "app-server"]}', "PAPERCLIP_RUNNER_LAUNCH at codex: "),
        (
            '{"codex": {"default": "codex app-server"}}',
            "PAPERCLIP_RUNNER_LAUNCH at codex.default: ",
        ),
    ],
)
@pytest.mark.parametrize("command", [("serve",), ("doctor",), ("runner", "--server", "http://x")])
def test_malformed_runner_launch(env, command, launch, says):
    line = one_error_line(
        paperclip(
            *command,
            env={**env, "PAPERCLIP_RUNNER_LAUNCH": launch, "PAPERCLIP_RUNNER_CREDENTIAL": "x"},
        )
    )
    assert says in line
    assert '{"codex": {"default": ["codex", "app-server"]}}' in line  # what it expects


@pytest.mark.parametrize(
    ("variable", "value", "says"),
    [
        ("PAPERCLIP_PORT", "abc", "PAPERCLIP_PORT: Input should be a valid integer"),
        ("PAPERCLIP_PORT", "99999", "PAPERCLIP_PORT: Input should be less than or equal to 65535"),
        ("PAPERCLIP_LOG_LEVEL", "loud", "PAPERCLIP_LOG_LEVEL: unknown log level 'loud'"),
        ("PAPERCLIP_DEPLOYMENT_MODE", "open", "'local_trusted' or 'authenticated'"),
        (
            "PAPERCLIP_LOCAL_RUNNER",
            "maybe",
            "PAPERCLIP_LOCAL_RUNNER: Input should be a valid boolean",
        ),
        (
            "PAPERCLIP_RUNNER_WORKSPACE_ROOTS",
            "repos",
            "PAPERCLIP_RUNNER_WORKSPACE_ROOTS: a workspace root is an absolute path",
        ),
        (
            "PAPERCLIP_LEASE_SECONDS",
            "0",
            "PAPERCLIP_LEASE_SECONDS: Input should be greater than or equal to 0.5",
        ),
    ],
)
def test_any_other_invalid_setting(env, variable, value, says):
    line = one_error_line(paperclip("serve", env={**env, variable: value}))
    assert says in line and "Fix or unset it" in line


def test_several_invalid_settings_on_the_same_line(env):
    line = one_error_line(
        paperclip("doctor", env={**env, "PAPERCLIP_PORT": "-1", "PAPERCLIP_LOG_LEVEL": "loud"})
    )
    assert "PAPERCLIP_PORT: " in line and "; PAPERCLIP_LOG_LEVEL: " in line


def test_a_postgres_scheme_url_is_taken_as_postgresql(env, paperclip_database_url):
    url = make_url(paperclip_database_url).render_as_string(hide_password=False)
    short = "postgres://" + url.split("://", 1)[1]
    result = paperclip("db", "current", "--json", env={**env, "PAPERCLIP_DATABASE_URL": short})
    assert result.returncode == 0, result.stderr
    assert '"up_to_date": true' in result.stdout
