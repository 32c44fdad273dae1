"""What a person does with a failed run: retry it (a new wake), or dismiss it from the inbox.

A retry is a wake of the run's agent for the run's issue (source ``retry``,
payload ``{"retry_of": <run>}``), made at most once per failed run: a marker
key, ``retry:<run id>``, in ``wake_keys`` (primary key company, agent, key)
points at the wake the first retry made, so a second press, a double click or
a client that lost the answer gets the same wake, whatever key it sent. The
client's own ``Idempotency-Key`` is the wake's idempotency key: the same key
answers the same wake, and a key used for another request is refused
(``idempotency_key_reused``).

A dismissal is recorded once on the run (``dismissed_at``, ``dismissed_by``);
the inbox leaves the run out from then on.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import select, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from paperclip.common.activity import record_activity
from paperclip.common.actor import Actor
from paperclip.common.queries import get_scoped
from paperclip.domain.companies.companies import company_writes
from paperclip.domain.runs.wakes import request_fingerprint, request_wake
from paperclip.errors import ConflictError
from paperclip.models import Issue, IssueStatus, Run, RunStatus, WakeKey, WakeRequest

CLOSED = (IssueStatus.DONE, IssueStatus.CANCELLED)
RETRY_SOURCE = "retry"


@dataclass(frozen=True, slots=True)
class Retried:
    """The wake a retry made, or found (``created`` False: a repeat)."""

    wake: WakeRequest
    issue_id: uuid.UUID | None
    created: bool


def _marker(run_id: uuid.UUID) -> str:
    return f"retry:{run_id}"


async def _failed_run(session: AsyncSession, company_id: uuid.UUID, run_id: uuid.UUID) -> Run:
    run = await get_scoped(session, Run, company_id, run_id, "run")
    if run.status != RunStatus.FAILED:
        raise ConflictError(
            f"run {run.id} did not fail (it is {run.status})", code="run_not_failed"
        )
    return run


async def _wake_of_key(
    session: AsyncSession, run: Run, key: str
) -> tuple[uuid.UUID, str | None] | None:
    found = await session.execute(
        select(WakeKey.wake_request_id, WakeKey.request_hash).where(
            WakeKey.company_id == run.company_id,
            WakeKey.agent_id == run.agent_id,
            WakeKey.key == key,
        )
    )
    row = found.one_or_none()
    return None if row is None else (row[0], row[1])


async def _wake(session: AsyncSession, wake_id: uuid.UUID) -> WakeRequest:
    return (
        await session.execute(select(WakeRequest).where(WakeRequest.id == wake_id))
    ).scalar_one()


class RunActions:
    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self.sessions = sessions

    async def retry(
        self, actor: Actor, company_id: uuid.UUID, run_id: uuid.UUID, *, key: str | None
    ) -> Retried:
        """Wake the failed run's agent for its issue again, once per run (see the module)."""
        async with company_writes(self.sessions, company_id) as session:
            run = await _failed_run(session, company_id, run_id)
            payload = {"retry_of": str(run.id)}
            reason = f"retry of run {run.id}"
            fingerprint = request_fingerprint(run.issue_id, RETRY_SOURCE, reason, payload)
            if key is not None and (used := await _wake_of_key(session, run, key)) is not None:
                wake_id, first = used
                if first is not None and first != fingerprint:
                    raise ConflictError(
                        "this Idempotency-Key was used for a different request to this agent; "
                        "use a new key for a new request",
                        code="idempotency_key_reused",
                        field="idempotency-key",
                        source="header",
                    )
                return Retried(await _wake(session, wake_id), run.issue_id, created=False)
            if (earlier := await _wake_of_key(session, run, _marker(run.id))) is not None:
                return Retried(await _wake(session, earlier[0]), run.issue_id, created=False)
            issue = await session.get(Issue, run.issue_id) if run.issue_id is not None else None
            if issue is not None and issue.status in CLOSED:
                raise ConflictError(
                    f"issue {issue.identifier} is {issue.status}: reopen it to run it again",
                    code="issue_closed",
                )
            # The marker first: a twin retry of the same run waits here for this one's commit,
            # then finds its wake.
            claimed = await session.execute(
                insert(WakeKey)
                .values(
                    company_id=company_id,
                    agent_id=run.agent_id,
                    key=_marker(run.id),
                    wake_request_id=uuid.uuid4(),  # the wake's id, set below (deferred FK)
                    request_hash=fingerprint,
                )
                .on_conflict_do_nothing()
                .returning(WakeKey.key)
            )
            if claimed.scalar_one_or_none() is None:
                earlier = await _wake_of_key(session, run, _marker(run.id))
                assert earlier is not None
                return Retried(await _wake(session, earlier[0]), run.issue_id, created=False)
            outcome = await request_wake(
                session,
                actor,
                company_id=company_id,
                agent_id=run.agent_id,
                issue_id=run.issue_id,
                source=RETRY_SOURCE,
                reason=reason,
                payload=payload,
                idempotency_key=key,
            )
            await session.execute(
                update(WakeKey)
                .where(
                    WakeKey.company_id == company_id,
                    WakeKey.agent_id == run.agent_id,
                    WakeKey.key == _marker(run.id),
                )
                .values(wake_request_id=outcome.wake.id)
            )
            record_activity(
                session,
                actor,
                "run.retried",
                entity_type="run",
                entity_id=run.id,
                company_id=company_id,
                details={"wake_request_id": str(outcome.wake.id)},
            )
            return Retried(outcome.wake, run.issue_id, created=True)

    async def dismiss(self, actor: Actor, company_id: uuid.UUID, run_id: uuid.UUID) -> Run:
        """Record that a person dismissed the failed run (once: again is
        ``run_already_dismissed``); it leaves the inbox."""
        async with company_writes(self.sessions, company_id) as session:
            run = await _failed_run(session, company_id, run_id)
            # Once: a twin waits for this row's lock, then finds it dismissed.
            dismissed = await session.execute(
                update(Run)
                .where(Run.id == run.id, Run.dismissed_at.is_(None))
                .values(dismissed_at=datetime.now(UTC), dismissed_by=actor.id[:200])
                .returning(Run.id)
            )
            if dismissed.scalar_one_or_none() is None:
                raise ConflictError(
                    f"run {run.id} was dismissed already", code="run_already_dismissed"
                )
            await session.refresh(run)
            record_activity(
                session,
                actor,
                "run.dismissed",
                entity_type="run",
                entity_id=run.id,
                company_id=company_id,
                details={},
            )
            return run
