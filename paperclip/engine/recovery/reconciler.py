"""The reconciler: every replica, in the background, runs the recovery policies.

A pass asks each policy (``paperclip_recovery_policies``) for its candidates,
asks it to prove each one's earlier owner gone, and asks it to settle the
candidate; policies settle through the control plane's port, which records
each settlement once (a database constraint). The reconciler never delays
startup, keeps what it did observable (``GET /api/recovery``), and sets a
candidate aside (quarantine, with the reason) after a bounded number of
failed attempts instead of trying it forever.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from paperclip_hookspecs.recovery import (
    RecoveryCandidate,
    RecoveryContext,
    RecoveryPolicy,
    RecoveryPort,
    SettlementOutcome,
)
from sqlalchemy import func, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from paperclip.db.availability import is_unavailable
from paperclip.engine.loop import keep_running
from paperclip.failpoints import failpoint
from paperclip.models import RecoveryItem, RecoveryItemStatus
from paperclip.plugin_host import PluginHost
from paperclip.plugin_host.errors import PluginError

log = logging.getLogger(__name__)

PASS_SECONDS = 2.0
"""How often a pass runs when nothing nudges it."""
BATCH = 100
"""Candidates a policy is asked for per pass."""
MAX_ATTEMPTS = 5
"""Failed settlements of one candidate before it is quarantined."""


@dataclass
class PolicyReport:
    """What one policy did in the last pass of this replica, and in all of them."""

    name: str
    last_pass_at: datetime | None = None
    candidates: int = 0
    """Listed in the last pass."""
    settled: int = 0
    kept: int = 0
    failed: int = 0
    settled_total: int = 0
    failed_total: int = 0
    last_error: str | None = None
    reasons: dict[str, int] = field(default_factory=dict)
    """Why candidates were kept or failed in the last pass, counted."""


class Reconciler:
    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        plugins: PluginHost,
        port: RecoveryPort,
        *,
        instance: str,
        pass_seconds: float = PASS_SECONDS,
    ) -> None:
        self.sessions = sessions
        self.plugins = plugins
        self.port = port
        self.instance = instance
        self.pass_seconds = pass_seconds
        self.reports: dict[str, PolicyReport] = {}
        self.passes = 0
        self._nudge = asyncio.Event()

    def nudge(self) -> None:
        """Something may need recovery now (a turn was lost here)."""
        self._nudge.set()

    async def run(self) -> None:
        """Pass after pass until cancelled; a failing pass is logged and retried later."""
        await keep_running(
            self.pass_once,
            every=self.pass_seconds,
            nudge=self._nudge,
            log=log,
            failure="a recovery pass failed",
        )

    async def pass_once(self) -> None:
        for policy in self.plugins.recovery_policies():
            ctx = RecoveryContext(instance_id=self.instance, now=datetime.now(UTC), port=self.port)
            # Built aside and swapped in whole: a status read mid-pass sees the last full pass.
            report = replace(
                self.reports.get(policy.name) or PolicyReport(policy.name),
                last_pass_at=ctx.now,
                candidates=0,
                settled=0,
                kept=0,
                failed=0,
                reasons={},
            )
            try:
                await self._run_policy(policy, ctx, report)
            except (Exception, PluginError) as exc:
                # One policy that cannot even list its candidates stops none of the others.
                if is_unavailable(exc):
                    raise
                report.failed += 1
                report.failed_total += 1
                report.last_error = f"{type(exc).__name__}: {exc}"
                log.warning("recovery policy %s failed: %s", policy.name, exc)
            self.reports[policy.name] = report
        self.passes += 1

    async def _run_policy(
        self, policy: RecoveryPolicy, ctx: RecoveryContext, report: PolicyReport
    ) -> None:
        candidates = list(await policy.list_candidates(ctx, BATCH))
        report.candidates = len(candidates)
        quarantined = await self._quarantined(policy.name, [c.key for c in candidates])
        for candidate in candidates:
            if candidate.key in quarantined:
                report.kept += 1
                report.reasons["quarantined"] = report.reasons.get("quarantined", 0) + 1
                continue
            try:
                proof = await policy.prove_owner_gone(ctx, candidate)
                if not proof.gone:
                    report.kept += 1
                    report.reasons[proof.reason] = report.reasons.get(proof.reason, 0) + 1
                    continue
                failpoint("reconciler.settlement.before_settle")
                settlement = await policy.settle(ctx, candidate, proof)
                failpoint("reconciler.settlement.after_settle")
            except (Exception, PluginError) as exc:
                report.failed += 1
                report.failed_total += 1
                report.last_error = f"{candidate.key}: {type(exc).__name__}: {exc}"
                log.warning("recovery of %s %s failed: %s", policy.name, candidate.key, exc)
                await self._failed(candidate, str(exc))
                continue
            if settlement.outcome is SettlementOutcome.SETTLED:
                report.settled += 1
                report.settled_total += 1
            elif settlement.outcome is SettlementOutcome.QUARANTINED:
                await self._quarantine(candidate, settlement.reason)
            else:
                report.kept += 1
                reason = settlement.reason or "kept"
                report.reasons[reason] = report.reasons.get(reason, 0) + 1

    async def _quarantined(self, kind: str, keys: list[str]) -> set[str]:
        if not keys:
            return set()
        async with self.sessions() as session:
            rows = await session.execute(
                select(RecoveryItem.key).where(
                    RecoveryItem.kind == kind,
                    RecoveryItem.key.in_(keys),
                    RecoveryItem.status == RecoveryItemStatus.QUARANTINED,
                )
            )
            return set(rows.scalars())

    async def _failed(self, candidate: RecoveryCandidate, error: str) -> None:
        """Count a failed attempt; at ``MAX_ATTEMPTS`` the candidate is quarantined."""
        statement = insert(RecoveryItem).values(
            kind=candidate.kind,
            key=candidate.key,
            company_id=_company(candidate),
            attempts=1,
            last_error=error[:2000],
            last_outcome="failed",
            status=RecoveryItemStatus.PENDING,
        )
        statement = statement.on_conflict_do_update(
            index_elements=[RecoveryItem.kind, RecoveryItem.key],
            set_={
                "attempts": RecoveryItem.attempts + 1,
                "last_error": statement.excluded.last_error,
                "last_outcome": "failed",
                "updated_at": func.now(),
                "status": _status_after(RecoveryItem.attempts + 1),
            },
        )
        async with self.sessions.begin() as session:
            await session.execute(statement)

    async def _quarantine(self, candidate: RecoveryCandidate, reason: str) -> None:
        statement = insert(RecoveryItem).values(
            kind=candidate.kind,
            key=candidate.key,
            company_id=_company(candidate),
            last_error=reason,
            last_outcome="quarantined",
            status=RecoveryItemStatus.QUARANTINED,
        )
        statement = statement.on_conflict_do_update(
            index_elements=[RecoveryItem.kind, RecoveryItem.key],
            set_={
                "status": RecoveryItemStatus.QUARANTINED,
                "last_error": reason,
                "last_outcome": "quarantined",
                "updated_at": func.now(),
            },
        )
        async with self.sessions.begin() as session:
            await session.execute(statement)

    async def quarantined_items(self, limit: int = 100) -> list[RecoveryItem]:
        async with self.sessions() as session:
            rows = await session.execute(
                select(RecoveryItem)
                .where(RecoveryItem.status == RecoveryItemStatus.QUARANTINED)
                .order_by(RecoveryItem.updated_at.desc())
                .limit(limit)
            )
            return list(rows.scalars())


def _company(candidate: RecoveryCandidate) -> uuid.UUID | None:
    """The candidate's company, when it names one by id (a policy's own kinds may not)."""
    try:
        return uuid.UUID(candidate.company_id)
    except (TypeError, ValueError):
        return None


def _status_after(attempts: object) -> object:
    from sqlalchemy import case

    return case(
        (attempts >= MAX_ATTEMPTS, RecoveryItemStatus.QUARANTINED.value),  # type: ignore[operator]
        else_=RecoveryItemStatus.PENDING.value,
    )
