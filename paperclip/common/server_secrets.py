"""Random secrets of this installation, made once and shared by every replica through the database."""

from __future__ import annotations

import secrets

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from paperclip.models import ServerSecret

SECRET_BYTES = 32


async def server_secret(sessions: async_sessionmaker[AsyncSession], name: str) -> bytes:
    """The secret called ``name``; the first replica to ask makes it, the others read it."""
    async with sessions.begin() as session:
        await session.execute(
            insert(ServerSecret)
            .values(name=name, value=secrets.token_bytes(SECRET_BYTES))
            .on_conflict_do_nothing()
        )
        return (
            await session.execute(select(ServerSecret.value).where(ServerSecret.name == name))
        ).scalar_one()
