"""Runner credentials: a runner proves who it is with a secret shown once and stored as sha256."""

from __future__ import annotations

import secrets
import uuid
from datetime import UTC, datetime

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from paperclip.common.activity import record_activity
from paperclip.common.actor import SYSTEM, Actor
from paperclip.domain.keys.api_keys import hash_key
from paperclip.errors import ConflictError, NotFoundError
from paperclip.models import Runner

CREDENTIAL_PREFIX = "pcrn_"


class RunnerService:
    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self.sessions = sessions

    async def create(self, name: str, actor: Actor = SYSTEM) -> tuple[Runner, str]:
        """Register a runner; its credential is returned here and never again."""
        secret = CREDENTIAL_PREFIX + secrets.token_urlsafe(32)
        try:
            async with self.sessions.begin() as session:
                runner = Runner(id=uuid.uuid4(), name=name, credential_hash=hash_key(secret))
                session.add(runner)
                await session.flush()
                record_activity(
                    session,
                    actor,
                    "runner.created",
                    entity_type="runner",
                    entity_id=runner.id,
                    company_id=None,
                    details={"name": name},
                )
        except IntegrityError as exc:
            raise ConflictError(
                f"a runner named {name!r} exists", code="runner_name_taken"
            ) from exc
        return runner, secret

    async def ensure(self, name: str, secret: str) -> Runner:
        """The runner ``name`` with exactly this credential (created, or re-keyed to it)."""
        async with self.sessions.begin() as session:
            runner = (
                await session.execute(select(Runner).where(Runner.name == name).with_for_update())
            ).scalar_one_or_none()
            if runner is None:
                runner = Runner(id=uuid.uuid4(), name=name, credential_hash=hash_key(secret))
                session.add(runner)
            else:
                runner.credential_hash = hash_key(secret)
                runner.revoked_at = None
            await session.flush()
        return runner

    async def list(self) -> list[Runner]:
        async with self.sessions() as session:
            return list(
                (await session.execute(select(Runner).order_by(Runner.created_at))).scalars()
            )

    async def revoke(self, runner_id: uuid.UUID) -> Runner:
        async with self.sessions.begin() as session:
            runner = await session.get(Runner, runner_id, with_for_update=True)
            if runner is None:
                raise NotFoundError.of("runner", runner_id)
            runner.revoked_at = runner.revoked_at or datetime.now(UTC)
        return runner

    async def authenticate(self, secret: str) -> Runner | None:
        async with self.sessions() as session:
            return (
                await session.execute(
                    select(Runner).where(
                        Runner.credential_hash == hash_key(secret), Runner.revoked_at.is_(None)
                    )
                )
            ).scalar_one_or_none()
