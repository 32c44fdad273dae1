"""``GET /api/recovery``: what the reconciler of this replica is doing, and what it set aside."""

from __future__ import annotations

from datetime import datetime

import msgspec
from litestar import get
from litestar.datastructures import State

from paperclip.http.access import Access, access


class PolicyStatus(msgspec.Struct):
    name: str
    last_pass_at: datetime | None
    candidates: int
    """Listed in the last pass."""
    settled: int
    kept: int
    failed: int
    settled_total: int
    """Since this replica started."""
    failed_total: int
    last_error: str | None
    reasons: dict[str, int]
    """Why candidates of the last pass were kept or failed, counted."""


class QuarantinedItem(msgspec.Struct):
    kind: str
    key: str
    attempts: int
    reason: str | None
    updated_at: datetime


class PresentationStatus(msgspec.Struct):
    passes: int
    """Passes of this replica's presentation recovery completed since it started."""
    last_pass_started_at: datetime | None
    """When the last complete sweep over the candidates began (its first pass: one, unless
    more candidates wait than a pass pages through)."""
    presented_total: int
    """Answers it presented since this replica started."""


class RecoveryStatus(msgspec.Struct):
    replica: str
    passes: int
    """Passes this replica's reconciler completed."""
    policies: list[PolicyStatus]
    quarantined: list[QuarantinedItem]
    """Candidates set aside after too many failed attempts (newest first, at most 100)."""
    presentation: PresentationStatus
    """Answers whose run succeeded but were never presented (a crash in between)."""


@get("/recovery", tags=["recovery"], opt=access(Access.INSTANCE))
async def recovery_status(state: State) -> RecoveryStatus:
    """The recovery policies this replica runs, its last pass of each, and the quarantine."""
    reconciler = state.run_engine.reconciler
    names = [policy.name for policy in state.plugin_host.recovery_policies()]
    reports = [reconciler.reports.get(name) for name in names]
    policies = [
        PolicyStatus(
            name,
            r.last_pass_at if r else None,
            r.candidates if r else 0,
            r.settled if r else 0,
            r.kept if r else 0,
            r.failed if r else 0,
            r.settled_total if r else 0,
            r.failed_total if r else 0,
            r.last_error if r else None,
            dict(r.reasons) if r else {},
        )
        for name, r in zip(names, reports, strict=True)
    ]
    quarantined = [
        QuarantinedItem(i.kind, i.key, i.attempts, i.last_error, i.updated_at)
        for i in await reconciler.quarantined_items()
    ]
    presentations = state.run_engine.presentations
    presentation = PresentationStatus(
        presentations.passes, presentations.last_pass_started_at, presentations.presented_total
    )
    return RecoveryStatus(
        state.run_engine.instance, reconciler.passes, policies, quarantined, presentation
    )
