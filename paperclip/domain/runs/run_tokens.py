"""Run tokens: bearer tokens that act as one run, its agent and company, and die with the run."""

from __future__ import annotations

import secrets
import uuid
from datetime import UTC, datetime

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from paperclip.common.actor import Actor
from paperclip.domain.keys.api_keys import hash_key
from paperclip.models import Run, RunStatus, RunToken

RUN_TOKEN_PREFIX = "pcr_"


def mint_run_token() -> tuple[str, str]:
    """A new run token and the hash of it that is stored (the token itself never is)."""
    token = RUN_TOKEN_PREFIX + secrets.token_urlsafe(32)
    return token, hash_key(token)


def new_run_token(session: AsyncSession, run: Run) -> str:
    """Mint a token for ``run`` in the caller's transaction; only its hash is stored."""
    token, token_hash = mint_run_token()
    session.add(
        RunToken(
            token_hash=token_hash,
            run_id=run.id,
            company_id=run.company_id,
            agent_id=run.agent_id,
        )
    )
    return token


async def revoke_run_tokens(session: AsyncSession, run_id: uuid.UUID) -> None:
    """Every live token of the run dies (the run ended, or its turn's provider is gone)."""
    await session.execute(
        update(RunToken)
        .where(RunToken.run_id == run_id, RunToken.revoked_at.is_(None))
        .values(revoked_at=datetime.now(UTC))
    )


async def token_run(session: AsyncSession, token: str) -> uuid.UUID | None:
    """The run a live token acts as, or None."""
    row = await session.get(RunToken, hash_key(token))
    if row is None or row.revoked_at is not None:
        return None
    return row.run_id


class RunTokenService:
    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self.sessions = sessions

    async def authenticate(self, token: str) -> Actor | None:
        """The agent actor of a live token whose run is still active, or None."""
        async with self.sessions() as session:
            row = (
                await session.execute(
                    select(RunToken, Run.issue_id)
                    .join(Run, Run.id == RunToken.run_id)
                    .where(
                        RunToken.token_hash == hash_key(token),
                        RunToken.revoked_at.is_(None),
                        Run.status.in_((RunStatus.QUEUED, RunStatus.RUNNING)),
                    )
                )
            ).one_or_none()
        if row is None:
            return None
        token, issue_id = row
        return Actor(
            type="agent",
            id=str(token.agent_id),
            company_id=token.company_id,
            run_id=token.run_id,
            issue_id=issue_id,
        )
