"""The report nudge: a turn that ended without its report gets one more turn in its session.

Real models often end a turn with prose and no ``finish``. Rather than failing
the run at once (``finish_not_called``), the same provider session is sent a
short follow-up turn (seed 001's completion-only recovery lane, rendered by
``paperclip_render_completion_recovery``) that says what the run has done and
that no report was recorded, and asks for it. At most ``limit`` nudges per run
(``PAPERCLIP_RUN_REPORT_NUDGES``, default 1); past them the run fails as before.

Decided in the turn end's transaction, under the run's row lock and fence: the
count is the run's turns of kind ``report_nudge``, and the next turn is opened
there (one turn in flight per run, unique in the database), so a replayed turn
end, another replica or a restart never nudges twice for one turn.

Left alone (they end as before): a turn that failed or was lost, a run with its
report, a chat turn (its prose is its answer), a run waiting on a person (a
pending card it raised), a provider that cannot resume its session, a run whose
next turn its budget refuses.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from paperclip_hookspecs.prompts import TaskSource
from paperclip_hookspecs.runs import RunView
from sqlalchemy import exists, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from paperclip.domain.chat import chat_turns
from paperclip.engine.context.completion import current_snapshot
from paperclip.engine.context.prompt import task_source
from paperclip.engine.context.run_view import run_view
from paperclip.engine.context.snapshot import SnapshotBindingError
from paperclip.engine.links.link import RunnerLink
from paperclip.engine.logs.events import NewEvent, append_events
from paperclip.engine.turns.lifecycle import end_turn, open_turn
from paperclip.engine.turns.starts import queue_later_turn
from paperclip.engine.workspaces.placement import workspace_of
from paperclip.models import (
    HOLDING_STATUSES,
    Interaction,
    Issue,
    Run,
    RunTurn,
    TurnKind,
    TurnStatus,
)
from paperclip.plugin_host import PluginHost, ProviderNotInstalledError
from paperclip.plugin_host.errors import PluginError
from paperclip.prompts import read_execution_input
from paperclip.prompts.report_nudge import nudge_input
from paperclip.wire.messages import StartTurn, TurnFinished

log = logging.getLogger(__name__)

NUDGED = "run.report_nudge"
"""The run event of a nudge: which turn ended unreported, which turn asks, how many so far."""

TurnAdmission = Callable[[AsyncSession, Run], Awaitable[object | None]]
"""Why the run's next turn may not start (its budget), or None."""


@dataclass(frozen=True, slots=True)
class ReportNudges:
    """How many report nudges a run gets, and what may refuse its next turn."""

    limit: int = 1
    admission: TurnAdmission | None = None


async def nudge(
    session: AsyncSession,
    run: Run,
    link: RunnerLink,
    message: TurnFinished,
    plugins: PluginHost,
    nudges: ReportNudges,
    *,
    instance: str,
) -> tuple[int, StartTurn] | None:
    """Open and queue a nudge turn for ``run``, locked, whose turn ended as ``message`` says:
    its outbox seq and ``start_turn``; None when the run ends as it is."""
    if nudges.limit <= 0 or not unreported(run, message):
        return None
    given = await session.scalar(
        select(func.count())
        .select_from(RunTurn)
        .where(RunTurn.run_id == run.id, RunTurn.kind == TurnKind.REPORT_NUDGE)
    )
    session_ref = message.session_ref or run.session_ref
    if (given or 0) >= nudges.limit or not session_ref or not _resumes(plugins, run.provider):
        return None
    if await chat_turns.chat_turn_of(session, run) is not None or await _asks_a_person(
        session, run
    ):
        return None
    if nudges.admission is not None and await nudges.admission(session, run) is not None:
        return None
    number = (given or 0) + 1
    try:
        inputs = nudge_input(
            read_execution_input(run.execution_input or {}),
            await _task_now(session, run, link),
            await _view(session, run),
            plugins,
            turn=run.turn + 1,
            nudge=number,
        )
    except PluginError:
        log.exception("the report nudge of run %s was not rendered; it ends unreported", run.id)
        return None
    ended = run.turn
    await end_turn(
        session,
        run,
        ended,
        TurnStatus.COMPLETED,
        session_ref=message.session_ref,
        provider_turn_id=message.provider_turn_id,
    )
    turn = await open_turn(
        session,
        run,
        kind=TurnKind.REPORT_NUDGE,
        runner_id=link.runner_id,
        session_ref=session_ref,
        input_schema=inputs["schema"],
        input=inputs,
    )
    await append_events(
        session,
        run,
        instance,  # the controller's decision, beside the runner's events
        [
            NewEvent(
                message.seq,
                NUDGED,
                {"ended_turn": ended, "turn": turn.number, "nudge": number, "of": nudges.limit},
            )
        ],
    )
    return await queue_later_turn(session, run, turn, link)


def unreported(run: Any, message: TurnFinished) -> bool:
    """The turn completed, and the run has no report: the case ``finish_not_called`` names."""
    return message.status == "completed" and run.result is None and run.budget_stop_at is None


def _resumes(plugins: PluginHost, provider: str) -> bool:
    try:
        return plugins.provider(provider).capabilities.resume
    except ProviderNotInstalledError:
        return False


async def _asks_a_person(session: AsyncSession, run: Run) -> bool:
    """A card the run raised waits for a person's answer: the run waits, it is not nudged."""
    return bool(
        await session.scalar(
            select(
                exists().where(
                    Interaction.run_id == run.id, Interaction.status.in_(HOLDING_STATUSES)
                )
            )
        )
    )


async def _task_now(session: AsyncSession, run: Run, link: RunnerLink) -> TaskSource:
    """The task as it is now (its current criteria); a run of no issue keeps its own."""
    issue = await session.get(Issue, run.issue_id) if run.issue_id is not None else None
    if issue is None:
        return read_execution_input(run.execution_input or {}).task
    parent = await session.get(Issue, issue.parent_id) if issue.parent_id else None
    workspace = await workspace_of(session, issue.id, link.workspace_dir)
    return task_source(issue, parent, workspace.view if workspace is not None else None)


async def _view(session: AsyncSession, run: Run) -> RunView:
    try:
        snapshot, _ = await current_snapshot(session, run)
    except SnapshotBindingError:
        snapshot = None
    return await run_view(session, run, snapshot)
