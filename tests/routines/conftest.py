from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy import text


@pytest.fixture
async def routines(paperclip_container, paperclip_plugin_host, paperclip_register_plugin):
    """The engine in memory with a company, an agent and a fake clock at 2026-02-28 23:59:30."""
    from tests.routines.world import routine_world

    built, engine = await routine_world(
        paperclip_container,
        paperclip_plugin_host,
        paperclip_register_plugin,
        datetime(2026, 2, 28, 23, 59, 30, tzinfo=UTC),
    )
    try:
        yield built
    finally:
        await engine.stop()
        # The module's database outlives the test: its schedules must not fire in the next.
        async with paperclip_container.sessions().begin() as session:
            await session.execute(text("UPDATE routines SET enabled = false"))
            await session.execute(text("UPDATE agents SET heartbeat_seconds = NULL"))


@pytest.fixture
def stack(paperclip_database_url, tmp_path):
    """Control planes as processes (``tests/engine/conftest.py``'s stack)."""
    from tests.engine.conftest import Stack

    made = Stack(database_url=paperclip_database_url, tmp=tmp_path)
    yield made
    made.stop()
