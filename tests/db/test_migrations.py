"""Migrations apply to an empty database, and the models match them exactly."""

from __future__ import annotations

import asyncio

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from paperclip.db import migrate
from paperclip.db.engine import create_engine
from paperclip.models import Base
from paperclip.testing import _admin, _with_database


def test_upgrade_from_empty_then_models_match(postgres_admin_url):
    name = "paperclip_migration_check"
    asyncio.run(
        _admin(
            postgres_admin_url,
            f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)',
            f'CREATE DATABASE "{name}"',
        )
    )
    url = _with_database(postgres_admin_url, name)
    try:
        assert migrate.current_revision(url) is None
        migrate.upgrade(url)
        assert migrate.current_revision(url) == migrate.head_revision()
        migrate.upgrade(url)  # idempotent at head

        async def diff():
            engine = create_engine(url, pool_size=1)
            try:
                async with engine.connect() as conn:
                    return await conn.run_sync(
                        lambda sync: compare_metadata(
                            MigrationContext.configure(
                                sync, opts={"compare_type": True, "compare_server_default": True}
                            ),
                            Base.metadata,
                        )
                    )
            finally:
                await engine.dispose()

        assert asyncio.run(diff()) == []
    finally:
        asyncio.run(_admin(postgres_admin_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
