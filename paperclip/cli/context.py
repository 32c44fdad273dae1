"""What every command needs: the settings, and the database for the length of one command."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from pydantic import ValidationError

from paperclip.cli.output import fail
from paperclip.settings import Settings

T = TypeVar("T")


def load_settings(**overrides: Any) -> Settings:
    try:
        return Settings(**{k: v for k, v in overrides.items() if v is not None})
    except ValidationError as exc:
        problems = "; ".join(
            f"PAPERCLIP_{'_'.join(str(p) for p in e['loc']).upper()}: {e['msg']}"
            for e in exc.errors()
        )
        fail(f"invalid settings: {problems}", hint="See docs/configuration.md.")
        raise  # unreachable: fail() exits


def start_database(settings: Settings) -> Any:
    """A container with its database up, or a clear refusal (exit 2)."""
    from paperclip.container import Container
    from paperclip.db.access import EmbeddedDatabaseError

    container = Container(settings=settings)
    try:
        container.init_resources()
    except EmbeddedDatabaseError as exc:
        fail(str(exc), code=2)
    return container


def with_database(settings: Settings, work: Callable[[Any], Awaitable[T]]) -> T:
    """Run ``work(container)`` with the database up, then stop what was started."""
    from paperclip.db import migrate

    container = start_database(settings)
    try:
        migrate.upgrade(container.database_url())

        async def run() -> T:
            try:
                return await work(container)
            finally:
                await container.engine().dispose()

        return asyncio.run(run())
    finally:
        container.shutdown_resources()
