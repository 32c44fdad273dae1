"""API keys for the authenticated mode: scoped to a company or the instance, shown once, stored as sha256."""

from __future__ import annotations

import hashlib
import re
import secrets
import uuid
from datetime import UTC, datetime, timedelta

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from paperclip.common.activity import record_activity
from paperclip.common.actor import SYSTEM, Actor
from paperclip.common.queries import Cursor, keyset_page
from paperclip.db.driver import plain_connection
from paperclip.domain.companies.companies import company_writes, require_company
from paperclip.domain.keys.key_cache import KeyCache
from paperclip.errors import ConflictError, InvalidInputError, NotFoundError
from paperclip.models import ApiKey, KeyRole

KEY_PREFIX = "pck_"
LAST_USED_EVERY = timedelta(minutes=1)
"""How stale a key's ``last_used_at`` may be before a request writes it again."""
_STALE = "(last_used_at IS NULL OR last_used_at < now() - $2::interval)"
LIVE_KEY = (
    f"SELECT id, company_id, role, {_STALE} AS stale FROM api_keys"
    " WHERE key_hash = $1 AND revoked_at IS NULL"
)
MARK_USED = f"UPDATE api_keys SET last_used_at = now() WHERE id = $1 AND {_STALE}"
NAME_MAX = 200
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def clean_name(name: str) -> str:
    """A key's name, trimmed; refused when empty, too long or holding control characters."""
    name = name.strip()
    if not name or len(name) > NAME_MAX or _CONTROL.search(name):
        raise InvalidInputError(
            f"a key needs a name of 1 to {NAME_MAX} printable characters",
            code="invalid_key_name",
            field="name",
        )
    return name


class ApiKeyService:
    def __init__(self, sessions: async_sessionmaker[AsyncSession], engine: AsyncEngine) -> None:
        self.sessions = sessions
        self.engine = engine  # the per-request check, without a session
        self.cache = KeyCache()
        """Filled only while ``self.cache.listen`` runs (the server's lifespan)."""

    async def create(
        self,
        name: str,
        *,
        company_id: uuid.UUID | None = None,
        role: KeyRole = KeyRole.INSTANCE_ADMIN,
        actor: Actor = SYSTEM,
    ) -> tuple[ApiKey, str]:
        """Create a key; the secret is returned here and never again.

        Without a company the key is an instance-admin key, and with one it may
        not be: the two go together.
        """
        name = clean_name(name)
        if (company_id is None) != (role is KeyRole.INSTANCE_ADMIN):
            raise InvalidInputError(
                "an instance_admin key has no company, and every other key has one",
                code="invalid_key_role",
                field="role",
            )
        secret = KEY_PREFIX + secrets.token_urlsafe(32)
        try:
            async with company_writes(self.sessions, company_id) as session:
                if company_id is not None:
                    await require_company(session, company_id)
                key = ApiKey(
                    id=uuid.uuid4(),
                    name=name,
                    company_id=company_id,
                    role=role.value,
                    prefix=secret[:12],
                    key_hash=hash_key(secret),
                )
                session.add(key)
                await session.flush()
                record_activity(
                    session,
                    actor,
                    "api_key.created",
                    entity_type="api_key",
                    entity_id=key.id,
                    company_id=company_id,
                    details={"name": name, "role": role.value},
                )
        except IntegrityError as exc:
            raise ConflictError(
                f"a live key named {name!r} already exists here",
                code="api_key_name_taken",
                field="name",
            ) from exc
        return key, secret

    async def list_all(self) -> list[ApiKey]:
        """Every key of the installation (the CLI)."""
        async with self.sessions() as session:
            stmt = select(ApiKey).order_by(ApiKey.created_at, ApiKey.id)
            return list((await session.execute(stmt)).scalars())

    async def list(
        self, company_id: uuid.UUID, *, after: Cursor | None, limit: int
    ) -> tuple[list[ApiKey], Cursor | None]:
        """One page of a company's keys, revoked ones included."""
        async with self.sessions() as session:
            await require_company(session, company_id)
            stmt = select(ApiKey).where(ApiKey.company_id == company_id)
            return await keyset_page(session, stmt, ApiKey, after, limit)

    async def revoke(
        self, key_id: uuid.UUID, *, company_id: uuid.UUID | None = None, actor: Actor = SYSTEM
    ) -> ApiKey:
        """Revoke a key (of ``company_id`` when given); revoking it again is a conflict."""
        async with company_writes(self.sessions, company_id) as session:
            stmt = select(ApiKey).where(ApiKey.id == key_id).with_for_update()
            if company_id is not None:
                await require_company(session, company_id)
                stmt = stmt.where(ApiKey.company_id == company_id)
            key = (await session.execute(stmt)).scalar_one_or_none()
            if key is None:
                raise NotFoundError.of("api_key", key_id, field="key_id", source="path")
            if key.revoked_at is not None:
                raise ConflictError(
                    f"key {key_id} was already revoked at {key.revoked_at.isoformat()}",
                    code="api_key_already_revoked",
                )
            key.revoked_at = datetime.now(UTC)
            record_activity(
                session,
                actor,
                "api_key.revoked",
                entity_type="api_key",
                entity_id=key.id,
                company_id=key.company_id,
            )
        self.cache.forget()  # here at once; other replicas at their notification
        return key

    async def authenticate(self, secret: str) -> Actor | None:
        """The caller of the live key with this secret, or None. Marks it used.

        A key this replica checked in the last seconds is not read again
        (``paperclip.domain.keys.key_cache``: any change to a key makes every
        replica forget at its commit). A read marks the key used only when
        the mark is older than ``LAST_USED_EVERY``, so a busy key costs no
        commit per request (``last_used_at`` is exact to about that much).
        """
        key_hash = hash_key(secret)
        if (known := self.cache.get(key_hash)) is not None:
            return known
        generation = self.cache.generation
        async with plain_connection(self.engine) as connection:  # each statement commits alone
            row = await connection.fetchrow(LIVE_KEY, key_hash, LAST_USED_EVERY)
            if row is None:
                return None
            if row["stale"]:
                await connection.execute(MARK_USED, row["id"], LAST_USED_EVERY)
        actor = Actor(
            type="api_key",
            id=str(row["id"]),
            company_id=row["company_id"],
            role=KeyRole(row["role"]),
        )
        self.cache.remember(key_hash, actor, generation)
        return actor
