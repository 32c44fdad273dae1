"""Companies: the tenants, and the lock a transaction writing a company's rows takes first."""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from sqlalchemy import ColumnElement, Integer, Select, Text, cast, func, literal, select, text
from sqlalchemy.dialects.postgresql import BIT
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from paperclip.common.activity import record_activity
from paperclip.common.actor import Actor
from paperclip.common.queries import Cursor, keyset_page
from paperclip.errors import ConflictError, InvalidInputError, NotFoundError
from paperclip.models import Company

log = logging.getLogger(__name__)

PREFIX_PATTERN = re.compile(r"^[A-Z][A-Z0-9]{1,9}$")

# The company lock. Deleting a company locks it and then deletes its rows (the
# foreign keys cascade). A writer that locked one of those rows (an agent it
# updates) and then wrote a row naming the company (its activity entry: the
# foreign key takes FOR KEY SHARE on the company) waited for the deletion,
# which waited for that row: PostgreSQL ended one of the two as a deadlock (a
# 500). So a transaction writing a company's rows first takes the company's
# advisory lock, shared (``company_writes``), and a deletion takes it
# exclusive before anything else: the deletion waits for the writers under
# way, and a writer that comes after it waits holding nothing, then finds the
# company gone (404). Writers never wait for each other on it. A row lock on
# the company (FOR KEY SHARE) would not do: writers holding it in turns keep a
# waiting FOR UPDATE out for ever, while the lock manager queues a shared
# request behind a waiting exclusive one.
COMPANY_LOCK_CLASS = 0x5043_0002
"""The first key of a company's advisory lock (the second is drawn from its id)."""
DELETE_ATTEMPTS = 5
"""How often a deletion PostgreSQL ended as a deadlock starts over (see ``delete``)."""
DEADLOCK_DETECTED = "40P01"


def default_prefix(name: str) -> str:
    letters = re.sub(r"[^A-Za-z0-9]", "", name).upper()
    if not letters or not letters[0].isalpha():
        letters = "CO" + letters
    return (letters + "XX")[:3]


def check_time_zone(name: str) -> None:
    """Refuse a time zone this machine's zone database does not know (``422``)."""
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise InvalidInputError(
            f"unknown time zone {name!r}: use an IANA name such as UTC or Europe/Paris",
            code="invalid_time_zone",
            field="time_zone",
        ) from None


class CompanyService:
    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self.sessions = sessions

    async def create(
        self, actor: Actor, *, name: str, issue_prefix: str | None, time_zone: str = "UTC"
    ) -> Company:
        check_time_zone(time_zone)
        prefix = issue_prefix or default_prefix(name)
        if not PREFIX_PATTERN.match(prefix):
            raise InvalidInputError(
                "issue_prefix must be 2 to 10 upper-case letters or digits, starting with a letter",
                code="invalid_issue_prefix",
                field="issue_prefix",
            )
        async with self.sessions.begin() as session:
            company = Company(
                id=uuid.uuid4(),
                name=name,
                issue_prefix=prefix,
                issue_counter=0,
                time_zone=time_zone,
            )
            session.add(company)
            await session.flush()
            record_activity(
                session,
                actor,
                "company.created",
                entity_type="company",
                entity_id=company.id,
                company_id=company.id,
                details={"name": name},
            )
        return company

    async def get(self, company_id: uuid.UUID) -> Company:
        async with self.sessions() as session:
            company = await session.get(Company, company_id)
        if company is None:
            raise NotFoundError.of("company", company_id)
        return company

    async def list(
        self, actor: Actor, *, after: Cursor | None, limit: int
    ) -> tuple[list[Company], Cursor | None]:
        """The companies ``actor`` may see: its own, or every one."""
        stmt = select(Company)
        if actor.company_id is not None:
            stmt = stmt.where(Company.id == actor.company_id)
        async with self.sessions() as session:
            return await keyset_page(session, stmt, Company, after, limit)

    async def update(self, actor: Actor, company_id: uuid.UUID, changes: dict[str, Any]) -> Company:
        if "time_zone" in changes:
            check_time_zone(changes["time_zone"])
        if "issue_prefix" in changes and not PREFIX_PATTERN.match(changes["issue_prefix"]):
            raise InvalidInputError(
                "issue_prefix must be 2 to 10 upper-case letters or digits, starting with a letter",
                code="invalid_issue_prefix",
                field="issue_prefix",
            )
        async with self.sessions.begin() as session:
            # NO KEY UPDATE: the writers holding the company (FOR KEY SHARE) go on.
            company = await session.get(Company, company_id, with_for_update={"key_share": True})
            if company is None:
                raise NotFoundError.of("company", company_id)
            for field, value in changes.items():
                setattr(company, field, value)
            record_activity(
                session,
                actor,
                "company.updated",
                entity_type="company",
                entity_id=company.id,
                company_id=company.id,
                details={"fields": sorted(changes)},
            )
        return company

    async def delete(self, actor: Actor, company_id: uuid.UUID) -> None:
        """Delete the company and every row of it.

        Its first step is the company's advisory lock, exclusive: writers that
        take it shared first (``company_writes``) never meet the deletion in a
        cycle. One that does not (a run engine's transaction) may:
        PostgreSQL then ends one of the two (``40P01``); when it is the
        deletion, it starts over, having written nothing.
        """
        for attempt in range(1, DELETE_ATTEMPTS + 1):
            try:
                await self._delete(actor, company_id)
                return
            except DBAPIError as exc:
                if getattr(exc.orig, "sqlstate", None) != DEADLOCK_DETECTED:
                    raise
                log.info("deleting company %s met a deadlock (attempt %d)", company_id, attempt)
        raise ConflictError(
            "the company's rows are being written too busily to delete it now; retry",
            code="company_busy",
        )

    async def _delete(self, actor: Actor, company_id: uuid.UUID) -> None:
        async with self.sessions.begin() as session:
            await session.execute(
                text("SELECT pg_advisory_xact_lock(:cls, :key)"), _lock_keys(company_id)
            )
            company = await session.get(Company, company_id, with_for_update=True)
            if company is None:
                raise NotFoundError.of("company", company_id)
            await session.delete(company)
            # The company's own log goes with it; the deletion is kept instance-wide.
            record_activity(
                session,
                actor,
                "company.deleted",
                entity_type="company",
                entity_id=company_id,
                company_id=None,
                details={"name": company.name},
            )


@asynccontextmanager
async def company_writes(
    sessions: async_sessionmaker[AsyncSession], company_id: uuid.UUID | None
) -> AsyncIterator[AsyncSession]:
    """A transaction that writes rows of one company, holding the company's lock first.

    ``company_not_found`` when the company is gone (deleted while the request
    waited). ``None``: an instance-wide write, nothing to hold.
    """
    async with sessions.begin() as session:
        if company_id is not None:
            await hold_company(session, company_id)
        yield session


async def hold_company(session: AsyncSession, company_id: uuid.UUID) -> None:
    """Take the company's lock, shared, in the caller's transaction; ``company_not_found``
    when it is gone."""
    await session.execute(
        text("SELECT pg_advisory_xact_lock_shared(:cls, :key)"), _lock_keys(company_id)
    )
    found = await session.execute(select(Company.id).where(Company.id == company_id))
    if found.scalar_one_or_none() is None:
        raise NotFoundError.of("company", company_id)


async def hold_companies_of(session: AsyncSession, company_ids: Select[Any]) -> set[uuid.UUID]:
    """Take the lock, shared, of each company ``company_ids`` (a query of one column) names,
    in the caller's transaction and in the same statement; those companies. One that is
    gone is not checked: the caller's next reads find its rows gone."""
    named = company_ids.subquery()
    (company_id,) = named.c
    held = await session.execute(
        select(
            company_id,
            func.pg_advisory_xact_lock_shared(COMPANY_LOCK_CLASS, company_lock_key(company_id)),
        )
    )
    return {row[0] for row in held}


def company_lock_key(company_id: ColumnElement[uuid.UUID]) -> ColumnElement[int]:
    """``_lock_keys``'s second key, computed by PostgreSQL: the id's first four bytes (its
    first eight hex digits) as a signed integer."""
    digits = func.left(func.replace(cast(company_id, Text), "-", ""), 8)
    return cast(cast(literal("x", Text) + digits, BIT(32)), Integer)


def _lock_keys(company_id: uuid.UUID) -> dict[str, int]:
    # Two int4 keys: their own space, apart from single-key advisory locks.
    return {"cls": COMPANY_LOCK_CLASS, "key": int.from_bytes(company_id.bytes[:4], signed=True)}


async def require_company(session: AsyncSession, company_id: uuid.UUID) -> Company:
    company = await session.get(Company, company_id)
    if company is None:
        raise NotFoundError.of("company", company_id)
    return company
