"""PostgreSQL goes away and comes back: the API says 503 meanwhile, and everything recovers by itself.

The control plane and a runner are separate processes on a PostgreSQL of this
test's own (an embedded server in a folder of its own), which the test stops
and starts again. Afterwards the runner is connected again and a run goes
through; neither log holds a traceback.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import httpx
import pytest

from paperclip.db import migrate
from paperclip.db.embedded import EmbeddedPostgres
from tests.engine.conftest import Stack
from tests.support.processes import lines_with, wait_until

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins]


@pytest.fixture
def own_postgres():
    folder = Path(tempfile.mkdtemp(prefix="paperclip-outage-", dir="/var/tmp"))
    folder.chmod(0o755)
    server = EmbeddedPostgres(folder / "pgdata")
    url = server.start()
    migrate.upgrade(url)
    yield server, url
    server.stop()
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def outage_stack(own_postgres, tmp_path):
    server, url = own_postgres
    stack = Stack(database_url=url, tmp=tmp_path)
    yield stack, server
    stack.stop()


FINISH = {
    "turns": [
        [
            {"message": "All green again."},
            {"call_tool": {"name": "finish", "arguments": {"outcome": "done", "summary": "ok"}}},
        ]
    ]
}


def connected_runners(api: httpx.Client) -> int:
    try:
        r = api.get("/health")
    except httpx.HTTPError:
        return -1
    return r.json().get("runners", {}).get("connected_here", 0) if r.status_code == 200 else -1


LOOP_FAILURES = (
    "a recovery pass failed",
    "a presentation recovery pass failed",
    "was not renewed",  # the replica's boot record
)
"""What the control plane's background loops log when a pass meets the outage."""


def test_while_the_database_is_away_the_api_answers_503_and_everything_recovers(outage_stack):
    stack, postgres = outage_stack
    stack.start_server()
    stack.start_runner()
    api = stack.api()
    wait_until(lambda: connected_runners(api) == 1, 30, message="the runner connected")

    log = stack.servers[0].log_path
    seen = {text: lines_with(log, text) for text in LOOP_FAILURES}
    postgres.stop()
    wait_until(lambda: api.get("/health").status_code == 503, 30, message="health 503")
    r = api.get("/companies")
    assert r.status_code == 503, r.text
    assert r.json()["code"] == "database_unavailable"
    assert int(r.headers["Retry-After"]) > 0
    r = api.post("/companies", json={"name": "During the outage"})
    assert r.status_code == 503 and r.json()["code"] == "database_unavailable"
    # The background loops meet the outage: each one's pass fails, is logged, goes on.
    wait_until(
        lambda: all(lines_with(log, text) > n for text, n in seen.items()),
        60,
        message="each background loop meeting the outage",
    )

    postgres.start()
    wait_until(lambda: api.get("/companies").status_code == 200, 60, message="the API is back")
    wait_until(lambda: connected_runners(api) == 1, 60, message="the runner is connected again")

    ctx = stack.setup_issue(FINISH)
    stack.assign(ctx)
    run = stack.wait_for_terminal_run(ctx, timeout=60)
    assert run["status"] == "succeeded", (run, stack.runner.tail())
    api.close()

    stack.stop()
    for log in (stack.tmp / "cp0.log", stack.tmp / "runner.log"):
        text = log.read_text()
        assert "Traceback" not in text, (log.name, text[-4000:])
        assert "internal_error" not in text
