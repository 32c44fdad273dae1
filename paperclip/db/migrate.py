"""Alembic, driven programmatically (no alembic.ini): upgrade, current, revision.

These functions block and call ``asyncio.run`` inside Alembic's environment, so
they must run outside any running event loop (the CLI calls them before
serving; tests call them from synchronous fixtures).
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

import paperclip


def migrations_dir() -> Path:
    """The Alembic environment: inside the wheel, or the source tree's ``migrations/``."""
    package = Path(paperclip.__file__).parent
    for candidate in (package / "_migrations", package.parent / "migrations"):
        if (candidate / "env.py").exists():
            return candidate
    raise FileNotFoundError("the Alembic environment (migrations/env.py) is missing")


def alembic_config(url: str) -> Config:
    from paperclip.db.engine import async_url

    config = Config()
    config.set_main_option("script_location", str(migrations_dir()))
    # '%' is an interpolation character in Alembic's config parser.
    config.set_main_option("sqlalchemy.url", async_url(url).replace("%", "%%"))
    config.attributes["configure_logging"] = False
    return config


def upgrade(url: str, revision: str = "head") -> None:
    command.upgrade(alembic_config(url), revision)


def head_revision() -> str | None:
    script = ScriptDirectory.from_config(alembic_config("postgresql://unused/unused"))
    return script.get_current_head()


def current_revision(url: str) -> str | None:
    """The revision the database is at (None: never migrated)."""
    import asyncio

    from paperclip.db.engine import create_engine

    async def read() -> str | None:
        engine = create_engine(url, pool_size=1)
        try:
            async with engine.connect() as conn:
                return await conn.run_sync(
                    lambda sync: MigrationContext.configure(sync).get_current_revision()
                )
        finally:
            await engine.dispose()

    return asyncio.run(read())


def revision(url: str, message: str, autogenerate: bool = True) -> None:
    command.revision(alembic_config(url), message=message, autogenerate=autogenerate)
