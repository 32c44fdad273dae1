"""Lost runs go on: their next turn is queued (settled once), then started where a runner is.

Settling a lost run happens under the fence of the controller that took it
over (the reconciler's): the lost turn is closed, and either the next turn is
opened, waiting for a runner that offers the provider (``phase = resuming``),
or, when the run's resumptions are spent or no runner came for too long, the
run fails and its task is held with a reason a person can act on.

Starting the queued turn is a claim like a wake's: whichever replica holds a
link to a runner offering the provider adopts the run (the epoch moves) and
sends ``start_turn``. The settlement notifies the schedulers when it commits
(``notify_resumption``): they look for queued turns only when told so, when a
runner connects, or on a slow poll.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Collection
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from paperclip_hookspecs.prompts import ContinuationMessage
from sqlalchemy import func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from paperclip.common.actor import SYSTEM
from paperclip.domain.holds.holds import hold_task
from paperclip.domain.runs.wakes import notify_resumption
from paperclip.engine.context.prompt import retry_history, steered_comments
from paperclip.engine.context.run_view import run_view
from paperclip.engine.endings.turn_end import finish_run
from paperclip.engine.turns.lifecycle import current_turn, end_turn, open_turn
from paperclip.engine.turns.unread_steers import unread_steered_messages
from paperclip.models import (
    Agent,
    IssueWorkspace,
    Run,
    Runner,
    RunStatus,
    RunTurn,
    TurnKind,
    TurnStatus,
    WorkspaceStatus,
)
from paperclip.plugin_host import PluginHost, ProviderNotInstalledError
from paperclip.prompts import AgentBrief, read_execution_input
from paperclip.prompts.restart import fresh_retry, restart_continuation
from paperclip.prompts.run_record import render_run_record

log = logging.getLogger(__name__)

RETRIES_EXHAUSTED = "run_retries_exhausted"
NO_RUNNER = "runner_unavailable"
CANNOT_RESUME = "session_not_resumable"


@dataclass(frozen=True, slots=True)
class Limits:
    max_resumes: int
    """Turns started again after losses, per run; past it the task is held."""
    wait_for_runner: timedelta
    """How long a queued turn waits for a runner offering its provider."""


async def settle_lost_run(
    session: AsyncSession, run: Run, plugins: PluginHost, limits: Limits, *, reason: str
) -> str:
    """Settle a lost run, locked under the caller's fence: ``resuming`` or ``held``."""
    turn = await current_turn(session, run)
    if turn is not None and TurnStatus(turn.status).active:
        await end_turn(session, run, turn.number, TurnStatus.LOST, error_code=reason)
    if run.phase == "resuming":
        # A queued turn no runner came for: spent, like a failed resumption.
        waited = f"{limits.wait_for_runner.total_seconds():g} s"
        host = await worktree_host(session, run.issue_id)
        await _give_up(
            session,
            run,
            NO_RUNNER,
            f"the runner {host} holding this issue's worktree did not connect within {waited} "
            "to continue this run. Connect it; or, if it is gone for good, forget the worktree "
            "(DELETE …/issues/<issue>/workspace: the next run makes a new one elsewhere). "
            "Then resolve this hold to run the task again."
            if host is not None
            else f"no runner offering the {run.provider!r} provider connected within {waited} "
            "to continue this run. Connect one (see docs/remote-runner.md), then resolve this "
            "hold to run the task again.",
        )
        return "held"
    if run.resume_attempts >= limits.max_resumes:
        await _give_up(
            session,
            run,
            RETRIES_EXHAUSTED,
            f"the run was lost {run.resume_attempts + 1} times ({reason} last) and was not "
            f"started again (at most {limits.max_resumes}). Look at the runner's log, then "
            "resolve this hold to run the task again.",
        )
        return "held"
    kind, inputs, steered = await _next_input(session, run, turn, plugins)
    if kind is None:
        await _give_up(
            session,
            run,
            CANNOT_RESUME,
            f"the {run.provider!r} provider can neither resume its session nor start a fresh "
            "one for this run; resolve this hold to run the task again.",
        )
        return "held"
    agent = await session.get(Agent, run.agent_id)
    assert agent is not None
    if kind is TurnKind.FRESH_RETRY:
        assembled = fresh_retry(
            read_execution_input(run.execution_input or {}),
            plugins,
            AgentBrief(name=agent.name, instructions=agent.role),
            history=await retry_history(session, run),
            steered=steered,
        )
        inputs = {
            "schema": assembled.schema,
            "prompt": assembled.prompt,
            "system": assembled.system,
            "executionInput": assembled.envelope,
        }
    await open_turn(
        session,
        run,
        kind=kind,
        runner_id=None,
        session_ref=run.session_ref if kind is TurnKind.CONTINUATION else None,
        input_schema=inputs["schema"],
        input=inputs,
    )
    run.phase = "resuming"
    run.resumable_since = datetime.now(UTC)
    run.resume_attempts += 1
    run.lease_expires_at = datetime.now(UTC)  # any replica with a runner may take it now
    await notify_resumption(session)  # at commit: the schedulers look for it then
    return "resuming"


async def worktree_host(session: AsyncSession, issue_id: uuid.UUID | None) -> str | None:
    """The name of the runner holding the issue's live worktree, if it has one."""
    if issue_id is None:
        return None
    row = (
        await session.execute(
            select(Runner.name)
            .join(IssueWorkspace, IssueWorkspace.runner_id == Runner.id)
            .where(
                IssueWorkspace.issue_id == issue_id,
                IssueWorkspace.status.in_((WorkspaceStatus.REQUESTED, WorkspaceStatus.READY)),
            )
        )
    ).scalar_one_or_none()
    return None if row is None else repr(row)


async def _next_input(
    session: AsyncSession, run: Run, lost: RunTurn | None, plugins: PluginHost
) -> tuple[TurnKind | None, dict[str, Any], tuple[ContinuationMessage, ...]]:
    """A restart continuation of the same session when the provider can resume it, else a
    fresh retry when it may start over; (None, {}, ()) when it can do neither.

    Either carries the steers the provider acknowledged but the model never read
    (seed 004), read from the run log here: the next turn's input is their last way
    to the model (the steer ledger counts them read once a later turn began)."""
    try:
        capabilities = plugins.provider(run.provider).capabilities
    except ProviderNotInstalledError:
        return None, {}, ()
    resume_failed = lost is not None and lost.error_code == "resume_failed"
    if capabilities.resume and run.session_ref and not resume_failed:
        previous = read_execution_input(run.execution_input or {})
        steered = await unread_steered_messages(session, run, plugins)
        restart = restart_continuation(
            previous,
            plugins,
            turn=run.turn + 1,
            steered=steered,
            steered_comments=await steered_comments(session, run, steered),
            record=render_run_record(
                await run_view(session, run, None), reported=run.result is not None
            ),
        )
        return TurnKind.CONTINUATION, restart.envelope, steered
    if capabilities.fresh_retry or not run.session_ref:
        return TurnKind.FRESH_RETRY, {}, await unread_steered_messages(session, run, plugins)
    return None, {}, ()


async def _give_up(session: AsyncSession, run: Run, code: str, reason: str) -> None:
    await finish_run(session, run, RunStatus.FAILED, error_code=code, error_message=reason)
    if run.issue_id is not None:
        await hold_task(
            session,
            SYSTEM,
            company_id=run.company_id,
            issue_id=run.issue_id,
            run_id=run.id,
            kind=code,
            reason=reason,
        )
    log.warning("run %s failed (%s); its task is held", run.id, code)


def resumable(limit: int) -> Any:
    """Runs whose next turn waits for a runner, oldest first, locked (``SKIP LOCKED``)."""
    return (
        select(Run)
        .where(
            Run.phase == "resuming",
            Run.status == RunStatus.RUNNING,
            or_(Run.lease_expires_at.is_(None), Run.lease_expires_at <= func.now()),
        )
        .order_by(Run.resumable_since)
        .limit(limit)
        .with_for_update(skip_locked=True)
    )


def leased_resumable(listed: Collection[uuid.UUID]) -> Any:
    """Seconds until a queued turn the pass did not list may be taken (0: now), or NULL: none
    waits so. Its run's lease still runs (its settling controller's, renewed once more as it
    let go); or its row was locked when the pass looked (``SKIP LOCKED`` passed it over: a
    lease renewal letting go of it at that moment, another replica's pass), and the
    notification that named it is spent: only a look again finds it."""
    return select(
        func.extract(
            "epoch",
            func.min(func.greatest(func.coalesce(Run.lease_expires_at, func.now()), func.now()))
            - func.now(),
        )
    ).where(
        Run.phase == "resuming",
        Run.status == RunStatus.RUNNING,
        Run.id.not_in(list(listed)),
    )


async def queued_turn(session: AsyncSession, run: Run) -> RunTurn:
    turn = await current_turn(session, run)
    assert turn is not None and turn.status == TurnStatus.STARTING
    return turn
