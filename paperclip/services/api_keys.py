"""Board API keys for the authenticated mode: shown once, stored as sha256."""

from __future__ import annotations

import hashlib
import secrets
import uuid
from datetime import UTC, datetime

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from paperclip.errors import NotFoundError
from paperclip.models import ApiKey
from paperclip.services.activity import record_activity
from paperclip.services.actor import SYSTEM, Actor

KEY_PREFIX = "pck_"


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


class ApiKeyService:
    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self.sessions = sessions

    async def create(self, name: str, actor: Actor = SYSTEM) -> tuple[ApiKey, str]:
        """Create a key; the secret is returned here and never again."""
        secret = KEY_PREFIX + secrets.token_urlsafe(32)
        async with self.sessions.begin() as session:
            key = ApiKey(id=uuid.uuid4(), name=name, prefix=secret[:12], key_hash=hash_key(secret))
            session.add(key)
            await session.flush()
            record_activity(
                session,
                actor,
                "api_key.created",
                entity_type="api_key",
                entity_id=key.id,
                company_id=None,
                details={"name": name},
            )
        return key, secret

    async def list(self) -> list[ApiKey]:
        async with self.sessions() as session:
            return list(
                (await session.execute(select(ApiKey).order_by(ApiKey.created_at))).scalars()
            )

    async def revoke(self, key_id: uuid.UUID, actor: Actor = SYSTEM) -> ApiKey:
        async with self.sessions.begin() as session:
            key = await session.get(ApiKey, key_id, with_for_update=True)
            if key is None:
                raise NotFoundError.of("api_key", key_id)
            if key.revoked_at is None:
                key.revoked_at = datetime.now(UTC)
                record_activity(
                    session,
                    actor,
                    "api_key.revoked",
                    entity_type="api_key",
                    entity_id=key.id,
                    company_id=None,
                )
        return key

    async def authenticate(self, secret: str) -> ApiKey | None:
        """The live key with this secret, or None. Marks it used."""
        async with self.sessions.begin() as session:
            return (
                await session.execute(
                    update(ApiKey)
                    .where(ApiKey.key_hash == hash_key(secret), ApiKey.revoked_at.is_(None))
                    .values(last_used_at=datetime.now(UTC))
                    .returning(ApiKey)
                )
            ).scalar_one_or_none()
