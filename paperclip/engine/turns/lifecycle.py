"""A run's turns: opened, started, ended, lost. Each call runs in the caller's transaction,
with the run's row locked under the fence.

A run has turns; a turn is one provider round, from its input to its end. When
a turn is lost with its runner or provider process, the run is not failed: its
next turn resumes the provider session (a restart continuation) or starts a
fresh one with the full brief, once the reconciler has settled the loss.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from paperclip_hookspecs.providers import PROVIDER_EXITED, PROVIDER_SPAWN_FAILED, RESUME_FAILED
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from paperclip.engine.logs import outbox
from paperclip.models import Run, RunTurn, TurnKind, TurnStatus, WakeRequest

TURN_LOST = "turn_lost"
"""The runner's code for a turn an earlier process of it started: gone with that process."""
RUNNER_RESTARTED = "runner_restarted"
"""Why a turn was lost: its runner came back as a new process without it."""
RUNNER_GONE = "runner_gone"
"""Why a turn was lost: no runner reported for it within its grace period."""

LOST_CODES = frozenset({PROVIDER_EXITED, PROVIDER_SPAWN_FAILED, RESUME_FAILED, TURN_LOST})
"""Turn failures of a process, not of the model: the run resumes instead of failing."""


async def open_turn(
    session: AsyncSession,
    run: Run,
    *,
    kind: TurnKind,
    runner_id: Any,
    session_ref: str | None = None,
    input_schema: str | None = None,
    input: dict[str, Any] | None = None,
) -> RunTurn:
    """The run's next turn, ``starting``; the partial unique index allows one in flight."""
    run.turn += 1
    turn = RunTurn(
        company_id=run.company_id,
        run_id=run.id,
        number=run.turn,
        kind=kind,
        status=TurnStatus.STARTING,
        runner_id=runner_id,
        session_ref=session_ref,
        input_schema=input_schema,
        input=input,
    )
    session.add(turn)
    await session.flush()
    return turn


async def current_turn(session: AsyncSession, run: Run) -> RunTurn | None:
    if run.turn == 0:
        return None
    return (
        await session.execute(
            select(RunTurn).where(RunTurn.run_id == run.id, RunTurn.number == run.turn)
        )
    ).scalar_one_or_none()


async def turn_started(
    session: AsyncSession, run: Run, number: int, session_ref: str | None
) -> bool:
    """The runner started the turn (and, when given, its provider session exists); True
    for the turn's first such report (a runner may report again, with its session)."""
    before = await session.scalar(
        select(RunTurn.status).where(RunTurn.run_id == run.id, RunTurn.number == number)
    )
    values: dict[str, Any] = {"status": TurnStatus.RUNNING}
    if session_ref:
        values["session_ref"] = session_ref
        if number == run.turn:
            # Durable as soon as reported: a lost turn resumes it. A turn given up
            # already (its report came late) does not name the session to go on in.
            run.session_ref = session_ref
    await session.execute(
        update(RunTurn)
        .where(
            RunTurn.run_id == run.id,
            RunTurn.number == number,
            RunTurn.status.in_((TurnStatus.STARTING, TurnStatus.RUNNING)),
        )
        .values(**values, started_at=datetime.now(UTC))
    )
    return before == TurnStatus.STARTING


async def wake_age(session: AsyncSession, run: Run) -> float | None:
    """Seconds since the wake that made ``run`` (None for a run of no wake)."""
    if run.wake_request_id is None:
        return None
    woken = await session.scalar(
        select(WakeRequest.created_at).where(WakeRequest.id == run.wake_request_id)
    )
    return (datetime.now(UTC) - woken).total_seconds() if woken is not None else None


async def end_turn(
    session: AsyncSession,
    run: Run,
    number: int,
    status: TurnStatus,
    *,
    error_code: str | None = None,
    error_message: str | None = None,
    session_ref: str | None = None,
    provider_turn_id: str | None = None,
) -> None:
    """Close the turn (if it is still in flight); a lost one leaves the run ``resuming``-bound,
    and its ``start_turn``, if no runner took it yet, leaves the outbox: it never starts later."""
    values: dict[str, Any] = {
        "status": status,
        "error_code": error_code,
        "error_message": error_message,
        "finished_at": datetime.now(UTC),
    }
    if provider_turn_id:
        values["provider_turn_id"] = provider_turn_id[:200]
    if session_ref:
        values["session_ref"] = session_ref
        run.session_ref = session_ref
    await session.execute(
        update(RunTurn)
        .where(
            RunTurn.run_id == run.id,
            RunTurn.number == number,
            RunTurn.status.in_((TurnStatus.STARTING, TurnStatus.RUNNING)),
        )
        .values(**values)
    )
    if status == TurnStatus.LOST:
        await outbox.withdraw_start(session, run.id, number)


def is_lost(error_code: str | None) -> bool:
    """Whether a turn that ended with ``error_code`` was lost (the run resumes)."""
    return error_code in LOST_CODES
