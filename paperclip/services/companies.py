"""Companies: the tenants."""

from __future__ import annotations

import re
import uuid
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from paperclip.errors import InvalidInputError, NotFoundError
from paperclip.models import Company
from paperclip.services.activity import record_activity
from paperclip.services.actor import Actor
from paperclip.services.queries import Cursor, keyset_page

PREFIX_PATTERN = re.compile(r"^[A-Z][A-Z0-9]{1,9}$")


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
            company = await session.get(Company, company_id, with_for_update=True)
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
        async with self.sessions.begin() as session:
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


async def require_company(session: AsyncSession, company_id: uuid.UUID) -> Company:
    company = await session.get(Company, company_id)
    if company is None:
        raise NotFoundError.of("company", company_id)
    return company
