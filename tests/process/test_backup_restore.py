"""``paperclip db backup`` under load, and ``restore`` into a new data dir: the same state,
served, and its runs go on. The embedded PostgreSQL, its own programs, real processes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.engine.conftest import FAKE_PROFILE, fake_launch
from tests.engine.test_end_to_end import SCRIPT
from tests.support.processes import PAPERCLIP, ServerProcess, free_port, wait_until

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins]


@pytest.fixture
def folder() -> Iterator[Path]:
    """Outside pytest's temp root (closed to others): the embedded server's user reaches it."""
    path = Path(tempfile.mkdtemp(prefix="paperclip-backup-", dir="/var/tmp"))
    path.chmod(0o755)
    yield path
    for data in path.glob("*/data"):
        # A killed server never let go of its PostgreSQL: a command's start and end stops it.
        subprocess.run([*PAPERCLIP, "db", "current"], env=env_of(data), capture_output=True)
    shutil.rmtree(path, ignore_errors=True)


def env_of(data: Path, **more: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PAPERCLIP_DATABASE_URL"}
    return {**env, "PAPERCLIP_DATA_DIR": str(data), **more}


def cli(data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*PAPERCLIP, *args], env=env_of(data), capture_output=True, text=True, timeout=180
    )


def created(response: httpx.Response) -> dict:
    assert response.status_code == 201, response.text
    return response.json()


class Load:
    """Comments posted one after another from a thread, each remembered once acknowledged."""

    def __init__(self, api: str, headers: dict[str, str]) -> None:
        self.url, self.acked, self.headers = f"{api}/comments", [], headers
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._post, daemon=True)

    def _post(self) -> None:
        with httpx.Client(timeout=10, headers=self.headers) as client:
            n = 0
            while not self.stop.is_set():
                n += 1
                r = client.post(self.url, json={"body": f"load {n}"})
                if r.status_code == 201:
                    self.acked.append(r.json()["id"])


def test_a_backup_under_load_restores_into_a_new_data_dir_and_runs_go_on(folder):
    scripts = folder / "scripts"
    scripts.mkdir()
    model = f"scripted-{uuid.uuid4().hex[:8]}"
    (scripts / f"{model}.json").write_text(json.dumps(SCRIPT))
    first = ServerProcess(
        env_of(folder / "a" / "data", PAPERCLIP_PORT=str(free_port())),
        folder / "a.log",
        "--no-runner",
    ).start(timeout=120)
    try:
        api = f"{first.url}/api"
        http = httpx.Client(headers=first.headers, timeout=30)
        company = created(http.post(f"{api}/companies", json={"name": "Acme"}))
        base = f"{api}/companies/{company['id']}"
        agent = created(
            http.post(
                f"{base}/agents",
                json={
                    "name": "coder",
                    "provider": "codex",
                    "provider_config": {"launch": FAKE_PROFILE, "model": model},
                },
            )
        )
        # Assigned while no runner is connected: its run waits, in the database.
        task = created(
            http.post(
                f"{base}/issues",
                json={"title": "Fix the build", "assignee_agent_id": agent["id"]},
            )
        )
        busy = created(http.post(f"{base}/issues", json={"title": "Busy"}))
        load = Load(f"{base}/issues/{busy['id']}", first.headers)
        load.thread.start()
        wait_until(lambda: len(load.acked) >= 20, 30, message="comments under way")
        acked_before = list(load.acked)
        backup = cli(folder / "a" / "data", "db", "backup", str(folder / "b.dump"), "--json")
        acked_after = list(load.acked)
        load.stop.set()
        load.thread.join(10)
        assert backup.returncode == 0, backup.stderr
        assert json.loads(backup.stdout)["bytes"] > 0
        assert len(acked_after) > len(acked_before)  # it wrote on while the backup ran
        # A backup is never overwritten.
        again = cli(folder / "a" / "data", "db", "backup", str(folder / "b.dump"))
        assert again.returncode == 2 and "exists" in again.stderr
    finally:
        assert first.terminate() == 0

    restored = cli(folder / "b" / "data", "db", "restore", str(folder / "b.dump"), "--json")
    assert restored.returncode == 0, restored.stderr
    # Into a database that holds tables: refused, nothing written.
    twice = cli(folder / "b" / "data", "db", "restore", str(folder / "b.dump"))
    assert twice.returncode == 2 and "already holds tables" in twice.stderr

    launch = json.dumps(fake_launch(scripts, folder / "fake.log"))
    second = ServerProcess(
        env_of(
            folder / "b" / "data", PAPERCLIP_PORT=str(free_port()), PAPERCLIP_RUNNER_LAUNCH=launch
        ),
        folder / "b.log",
    ).start(timeout=120)
    try:
        api = f"{second.url}/api/companies/{company['id']}"
        http = httpx.Client(headers=second.headers, timeout=30)
        ids, params = [], {"limit": 100}
        while True:
            page = http.get(f"{api}/issues/{busy['id']}/comments", params=params).json()
            ids += [c["id"] for c in page["items"]]
            if not page["next_cursor"]:
                break
            params["cursor"] = page["next_cursor"]
        # A consistent snapshot: all that was acknowledged before it, nothing never written.
        assert set(acked_before) <= set(ids) <= set(acked_after)
        # The run that waited for a runner goes on, on the restored server.
        run = wait_until(
            lambda: next(
                (
                    r
                    for r in http.get(f"{api}/runs", params={"issue_id": task["id"]}).json()[
                        "items"
                    ]
                    if r["status"] in ("succeeded", "failed")
                ),
                None,
            ),
            90,
            0.2,
            "the waiting run, finished on the restored server",
        )
        assert run["status"] == "succeeded", second.tail()
    finally:
        assert second.terminate() == 0
