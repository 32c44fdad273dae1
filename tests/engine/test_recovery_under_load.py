"""The reconciler never delays the server: health answers at once with 10,000 lost runs pending.

The database holds 10,000 runs lost with their provider (what a crash of many
runners leaves), written straight into it; ``paperclip serve`` starts on it,
with the ``lost_runs`` policy installed, and its reconciler works through them
in the background while ``/api/health`` is asked again and again.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from paperclip.testing import connect
from tests.support.processes import ServerProcess, free_port, wait_until
from tests.support.recovery_load import seed_lost_runs, seed_tenant

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins]

PENDING = 10_000
WITHIN = 2.0


async def seed(url: str) -> None:
    conn = await connect(url)
    try:
        await seed_lost_runs(conn, await seed_tenant(conn), PENDING)
    finally:
        await conn.close()


def test_health_answers_within_2_s_of_start_while_10000_lost_runs_are_recovered(
    paperclip_database_url, tmp_path
):
    asyncio.run(seed(paperclip_database_url))
    server = ServerProcess(
        {
            "PAPERCLIP_DATABASE_URL": paperclip_database_url,
            "PAPERCLIP_DATA_DIR": str(tmp_path / "data"),
            "PAPERCLIP_PORT": str(free_port()),
            "PAPERCLIP_LOG_FORMAT": "json",
            "PAPERCLIP_RECONCILE_SECONDS": "0.5",
        },
        tmp_path / "serve.log",
        "--no-runner",
    ).start()
    try:
        assert server.healthy_at - server.listening_at < WITHIN, server.tail()
        api = server.api(timeout=10)

        def working() -> dict | None:
            [policy] = [
                p for p in api.get("/recovery").json()["policies"] if p["name"] == "lost_runs"
            ]
            return policy if policy["settled_total"] > 0 else None

        wait_until(working, 60, message="the reconciler settling lost runs")
        slowest = 0.0
        for _ in range(20):  # while it works through the rest
            started = time.monotonic()
            assert api.get("/health").status_code == 200
            slowest = max(slowest, time.monotonic() - started)
            time.sleep(0.1)
        assert slowest < WITHIN, slowest
        status = api.get("/recovery").json()
        [policy] = [p for p in status["policies"] if p["name"] == "lost_runs"]
        assert 0 < policy["settled_total"] < PENDING or status["passes"] > 1, status
        assert policy["failed_total"] == 0, policy
    finally:
        server.terminate()
        server.stop()
    assert "Traceback" not in (tmp_path / "serve.log").read_text()
