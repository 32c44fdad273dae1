"""Migrations apply to an empty database, and the models match them exactly."""

from __future__ import annotations

import asyncio

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from paperclip.db import migrate
from paperclip.db.engine import create_engine
from paperclip.models import Base
from paperclip.testing import scratch_database
from tests.support.db import query


def test_upgrade_from_empty_then_models_match(paperclip_postgres_url):
    with scratch_database(paperclip_postgres_url, "paperclip_migration_check") as url:
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


def test_keys_made_before_scoping_become_instance_keys_with_unique_names(paperclip_postgres_url):
    """From the previous schema, with keys of every shape the old one allowed."""
    with scratch_database(paperclip_postgres_url, "paperclip_migration_keys") as url:
        migrate.upgrade(url, "0002")
        rows = [("", "pck_aaaaaaaa"), ("ci", "pck_bbbbbbbb"), ("ci", "pck_cccccccc")]
        for key_name, prefix in rows:
            query(
                url,
                "INSERT INTO api_keys (id, name, prefix, key_hash) "
                "VALUES (gen_random_uuid(), $1, $2::text, md5($2::text) || md5($2::text))",
                key_name,
                prefix,
            )
        migrate.upgrade(url)
        keys = query(url, "SELECT name, role, company_id FROM api_keys ORDER BY prefix")
        assert keys == [
            {"name": "key-pck_aaaaaaaa", "role": "instance_admin", "company_id": None},
            {"name": "ci", "role": "instance_admin", "company_id": None},
            {"name": "ci (pck_cccccccc)", "role": "instance_admin", "company_id": None},
        ]
