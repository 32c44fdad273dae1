"""Each migration, applied to the schema before it with a row in every table: nothing lost.

A database is brought up one revision at a time. Before each step, every
table that is still empty gets a row (its columns filled by type, its
foreign keys pointing at the rows already there), so each migration meets
data in every table of the schema it starts from: the previous release's
schema among them. After each step no table holds fewer rows. At the head,
every row of every table reads through the models, and the models match
the schema.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from alembic.script import ScriptDirectory
from sqlalchemy import select

from paperclip.db import migrate
from paperclip.db.engine import create_engine
from paperclip.models import Base
from paperclip.testing import _admin, _with_database, connect

TABLES = """
    SELECT table_name FROM information_schema.tables
    WHERE table_schema = 'public' AND table_type = 'BASE TABLE' AND table_name <> 'alembic_version'
"""
COLUMNS = """
    SELECT column_name, data_type, udt_name, is_nullable = 'YES' AS nullable,
           column_default IS NOT NULL OR is_identity = 'YES' AS has_default
    FROM information_schema.columns WHERE table_schema = 'public' AND table_name = $1
    ORDER BY ordinal_position
"""
FOREIGN_KEYS = """
    SELECT c.conrelid::regclass::text AS child, a.attname AS column,
           c.confrelid::regclass::text AS parent, af.attname AS ref
    FROM pg_constraint c
    JOIN LATERAL unnest(c.conkey, c.confkey) AS k(col, refcol) ON true
    JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.col
    JOIN pg_attribute af ON af.attrelid = c.confrelid AND af.attnum = k.refcol
    WHERE c.contype = 'f' AND c.connamespace = 'public'::regnamespace
"""
VALUES = {
    "uuid": "gen_random_uuid()",
    "text": "'x'",
    "character varying": "'x'",
    "integer": "1",
    "bigint": "1",
    "smallint": "1",
    "boolean": "false",
    "jsonb": "'{}'::jsonb",
    "json": "'{}'::json",
    "timestamp with time zone": "now()",
    "timestamp without time zone": "now()",
    "date": "current_date",
    "double precision": "1",
    "numeric": "1",
    "bytea": "'\\x00'::bytea",
    "ARRAY": "'{}'",
}

CHECKED = {("projects", "repo_path"): "'/srv/x'"}
"""Nullable columns a CHECK constraint wants set (one of two sources)."""


def revisions() -> list[str]:
    """Every revision, oldest first."""
    script = ScriptDirectory.from_config(migrate.alembic_config("postgresql://unused/none"))
    return [r.revision for r in reversed(list(script.walk_revisions()))]


async def fill(url: str) -> dict[str, int]:
    """A row in every empty table (parents first); every table's count."""
    conn = await connect(url)
    try:
        tables = {r["table_name"] for r in await conn.fetch(TABLES)}
        keys: dict[str, dict[str, tuple[str, str]]] = {t: {} for t in tables}
        for fk in await conn.fetch(FOREIGN_KEYS):
            keys[fk["child"].strip('"')][fk["column"]] = (fk["parent"].strip('"'), fk["ref"])
        done: set[str] = set()
        while len(done) < len(tables):
            progressed = False
            for table in sorted(tables - done):
                columns = await conn.fetch(COLUMNS, table)
                needs = {
                    keys[table][c["column_name"]][0]
                    for c in columns
                    if c["column_name"] in keys[table] and not c["nullable"]
                } - {table}
                if not needs <= done:
                    continue
                if not await conn.fetchval(f'SELECT count(*) FROM "{table}"'):
                    await insert_row(conn, table, columns, keys[table])
                done.add(table)
                progressed = True
            assert progressed, f"no order fills {sorted(tables - done)}"
        return {t: await conn.fetchval(f'SELECT count(*) FROM "{t}"') for t in tables}
    finally:
        await conn.close()


async def insert_row(conn: Any, table: str, columns: list[Any], keys: dict) -> None:
    names, values = [], []
    for column in columns:
        name = column["column_name"]
        if name in keys:
            parent, ref = keys[name]
            value = await conn.fetchval(f'SELECT "{ref}" FROM "{parent}" LIMIT 1')
            if value is None and column["nullable"]:
                continue
            names.append(name)
            values.append(f'(SELECT "{ref}" FROM "{parent}" LIMIT 1)')
        elif (table, name) in CHECKED:
            names.append(name)
            values.append(CHECKED[(table, name)])
        elif not column["nullable"] and not column["has_default"]:
            names.append(name)
            values.append(VALUES[column["data_type"]])
    await conn.execute(f'INSERT INTO "{table}" ({", ".join(names)}) VALUES ({", ".join(values)})')


async def read_every_model(url: str) -> dict[str, int]:
    engine = create_engine(url, pool_size=1)
    try:
        async with engine.connect() as conn:
            read = {}
            for table in Base.metadata.tables.values():
                read[table.name] = len((await conn.execute(select(table))).all())
            return read
    finally:
        await engine.dispose()


@pytest.fixture
def empty_database(paperclip_postgres_url):
    name = f"paperclip_upgrades_{uuid.uuid4().hex[:8]}"
    asyncio.run(_admin(paperclip_postgres_url, f'CREATE DATABASE "{name}"'))
    yield _with_database(paperclip_postgres_url, name)
    asyncio.run(_admin(paperclip_postgres_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


def test_each_migration_keeps_the_rows_of_every_table_it_starts_from(empty_database):
    url = empty_database
    steps = revisions()
    assert steps[-1] == migrate.head_revision() and len(steps) >= 17
    migrate.upgrade(url, steps[0])
    counts = asyncio.run(fill(url))
    for revision in steps[1:]:
        migrate.upgrade(url, revision)
        after = asyncio.run(fill(url))
        lost = {t: (n, after.get(t)) for t, n in counts.items() if after.get(t, 0) < n}
        assert not lost, f"{revision} lost rows: {lost}"
        counts = after
    assert migrate.current_revision(url) == migrate.head_revision()
    read = asyncio.run(read_every_model(url))
    assert read == {t: n for t, n in counts.items() if t in read}
    assert all(n >= 1 for n in read.values())
