"""The end of a run: the terminal guard, one status decision exactly once, then the presentation.

A turn's end is processed in two transactions, in this order. The status
decision (the run's terminal status, its reason, the issue's status, the
turn's final prose) commits first; the presentation decision (is the prose
the run's answer, posted to the task's thread?) is recorded after it, once
(``presentation``). A turn that completed without the run's report may first
be followed by a report nudge in the same session (``nudge``): the run then
goes on instead of ending.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from datetime import UTC, datetime

import msgspec
from paperclip_hookspecs.completion import CompletionStage
from paperclip_hookspecs.presentation import PresentationPath
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession, async_sessionmaker

from paperclip import tracing
from paperclip.common.activity import record_activity
from paperclip.common.actor import SYSTEM
from paperclip.db.driver import engine_of
from paperclip.domain.chat import chat_turns
from paperclip.domain.costs.budget_ledger import BUDGET_EXCEEDED, release
from paperclip.domain.holds.holds import hold_task
from paperclip.domain.issues.issue_parts import BLOCKED
from paperclip.domain.issues.issues import OUTCOME_STATUS, settle_after_run
from paperclip.domain.runs.run_tokens import revoke_run_tokens
from paperclip.engine.context.completion import check_completion, report_of, terminal_failure
from paperclip.engine.context.snapshot import SnapshotBindingError
from paperclip.engine.endings import drain
from paperclip.engine.endings.nudge import ReportNudges, nudge, unreported
from paperclip.engine.endings.plain_end import (
    EndingRun,
    StatusDecision,
    finish_plainly,
    lock_ending,
)
from paperclip.engine.endings.presentation import Presenter
from paperclip.engine.links.gate import ControlGate
from paperclip.engine.links.link import RunnerLink
from paperclip.engine.logs import outbox
from paperclip.engine.logs.events import NewEvent, append_events
from paperclip.engine.ownership.fence import lock_run
from paperclip.engine.ownership.owned_runs import RunOwnership
from paperclip.engine.turns.lifecycle import end_turn, is_lost
from paperclip.failpoints import failpoint
from paperclip.models import ConversationState, IssueStatus, Run, RunStatus, TurnStatus
from paperclip.plugin_host import PluginHost
from paperclip.plugin_host.errors import PluginError
from paperclip.wire.messages import Close, StartTurn, TurnFinished
from paperclip.wire.workspace_rules import WORKSPACE_NOT_ALLOWED, WORKSPACE_UNAVAILABLE

log = logging.getLogger(__name__)

HELD_BY_WORKSPACE = frozenset({WORKSPACE_NOT_ALLOWED, WORKSPACE_UNAVAILABLE, "workspace_busy"})
"""A turn the runner could not start in its worktree: the run fails and its task is held."""

STATUS_REASONS = {
    "done": "task_completed",
    "needs_review": "task_review_requested",
    "blocked": "task_blocked",
    "yielded": "task_yielded",
}
"""The status decision's reason for each outcome a run can report."""


def decide(run: Run, turn: TurnFinished) -> tuple[RunStatus, str | None, str | None]:
    """The terminal status of a run whose turn ended, and the error code/message if it failed."""
    if run.budget_stop_at is not None and run.result is None:
        # Its budget ran out mid-turn: its tool calls were refused since, so it could not finish.
        return (
            RunStatus.FAILED,
            BUDGET_EXCEEDED,
            "a budget of this run was spent during its turn: its tool calls were refused "
            "from then on. Raise the budget, or wait for the next month: the task goes on "
            "by itself.",
        )
    if turn.status != "completed":
        return (
            RunStatus.FAILED,
            turn.error_code or "provider_turn_failed",
            turn.error or f"the provider ended the turn as {turn.status}",
        )
    if run.result is None:
        return (
            RunStatus.FAILED,
            "finish_not_called",
            "the turn ended without a finish or block report",
        )
    return RunStatus.SUCCEEDED, None, None


async def finish_run(
    session: AsyncSession,
    run: Run,
    status: RunStatus,
    *,
    error_code: str | None = None,
    error_message: str | None = None,
    session_ref: str | None = None,
    answer: str | None = None,
) -> bool:
    """Commit the status decision of the locked ``run``; False when it already was terminal.

    The caller holds the run's row lock (under the epoch fence, for a
    controller), so this is the only transition: a replayed ``turn_finished``
    finds a terminal run and does nothing.
    """
    if RunStatus(run.status).terminal:
        return False
    outcome = (run.result or {}).get("outcome") if status is RunStatus.SUCCEEDED else None
    run.status = status
    run.phase = "finished"
    run.error_code = error_code
    run.error_message = error_message
    run.status_reason = STATUS_REASONS.get(outcome or "", error_code or status.value)
    chat = await chat_turns.chat_turn_of(session, run) if run.issue_id is not None else None
    run.finished_at = datetime.now(UTC)
    if answer:
        run.answer = answer
    if session_ref:
        run.session_ref = session_ref
    await revoke_run_tokens(session, run.id)
    await release(session, run.id)  # what it still reserves of its budgets
    if chat is not None and status is RunStatus.SUCCEEDED:
        # A chat turn's own status decision; its answer is presented after this commits.
        run.status_reason = await chat_turns.commit_status_decision(session, run)
    elif run.issue_id is not None:
        succeeded = status is RunStatus.SUCCEEDED
        await settle_after_run(session, run.issue_id, succeeded=succeeded, outcome=outcome, by=run)
        if chat is not None:  # a failed turn has nothing to present: its conversation settles
            await chat_turns.settle(session, chat, ConversationState.IDLE)
    record_activity(
        session,
        SYSTEM,
        f"run.{status.value}",
        entity_type="run",
        entity_id=run.id,
        company_id=run.company_id,
        details={"error_code": error_code} if error_code else {"outcome": outcome},
    )
    return True


def plain_decision(
    run: EndingRun, message: TurnFinished, status: RunStatus, code: str | None, text: str | None
) -> StatusDecision:
    """What ``finish_run`` and ``end_turn`` decide for a run whose end is plain."""
    outcome = (run.result or {}).get("outcome") if status is RunStatus.SUCCEEDED else None
    issue_status = issue_from = None
    if run.issue_id is not None:
        # As ``settle_after_run``: its outcome decides; a failure puts it back to todo.
        if status is RunStatus.SUCCEEDED and outcome is not None:
            issue_status = OUTCOME_STATUS.get(outcome)
        elif status is not RunStatus.SUCCEEDED:
            issue_status, issue_from = IssueStatus.TODO, IssueStatus.IN_PROGRESS
    return StatusDecision(
        status=status.value,
        error_code=code,
        error_message=text,
        status_reason=STATUS_REASONS.get(outcome or "", code or status.value),
        turn=run.turn,
        turn_status=TurnStatus.COMPLETED if message.status == "completed" else TurnStatus.FAILED,
        turn_error_code=message.error_code,
        turn_error_message=message.error,
        provider_turn_id=message.provider_turn_id[:200] if message.provider_turn_id else None,
        session_ref=message.session_ref or None,
        answer=message.answer or None,
        issue_status=issue_status,
        issue_status_from=issue_from,
        details={"error_code": code} if code else {"outcome": outcome},
    )


class RunEndings:
    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        ownership: RunOwnership,
        gate: ControlGate,
        plugins: PluginHost,
        *,
        instance: str,
        nudge: Callable[[], None],
        on_lost: Callable[[], None] = lambda: None,
        boot: uuid.UUID | None = None,
        report_nudges: ReportNudges | None = None,
    ) -> None:
        self.sessions = sessions
        self.ownership = ownership
        self.gate = gate
        self.plugins = plugins
        self.instance = instance
        self.nudge = nudge
        self.on_lost = on_lost
        """Called when a turn was lost: the reconciler settles it (a nudge, not a wait)."""
        self.boot = boot or uuid.uuid4()
        """This process's boot: the stamp of a cleanup hold it sets (``drain``)."""
        self.presenter = Presenter(sessions, plugins)
        self.report_nudges = report_nudges or ReportNudges()
        """How often a turn that ended without its report is asked for it (``nudge``)."""

    async def turn_finished(self, link: RunnerLink, message: TurnFinished) -> None:
        run_id = message.run_id
        if not await self.gate.controls(link, run_id):
            return  # already ended (a replay): it ends once
        epoch = self.ownership.epoch(run_id)
        nudged: tuple[int, StartTurn] | None = None
        async with engine_of(self.sessions).connect() as connection, connection.begin():
            ending = await lock_ending(connection, run_id, instance=self.instance, epoch=epoch)
            number = message.turn or ending.turn
            if number != ending.turn or ending.phase != "turn":
                return  # the end of an earlier turn of the run, replayed: settled already
            lost = message.status != "completed" and is_lost(message.error_code)
            session: AsyncSession | None = None
            try:
                decided = None if lost else self._plain(ending, message)
                if decided is not None and decided[0] is RunStatus.SUCCEEDED:
                    session = self._joined(connection)
                    decided = await self._terminal_guard(session, ending)
                    if decided[1] in HELD_BY_WORKSPACE or decided[1] == BUDGET_EXCEEDED:
                        decided = None  # a hold to set: the ORM's
                if decided is not None:
                    ended, status = True, decided[0]
                    raw = await connection.get_raw_connection()
                    await finish_plainly(
                        raw.driver_connection,
                        ending,
                        plain_decision(ending, message, *decided),
                        now=datetime.now(UTC),
                        runner_id=link.runner_id,
                        source_instance=link.instance,
                        source_seq=message.seq,
                    )
                else:
                    session = session or self._joined(connection)
                    run = await lock_run(session, run_id, instance=self.instance, epoch=epoch)
                    lost, nudged, ended, status = await self._end_in_session(
                        session, run, link, message, lost=lost
                    )
                    await session.flush()
            finally:
                if session is not None:
                    await session.close()  # leaves the transaction to the block above
        tracing.turn_ended(
            run_id, number, status="lost" if lost else message.status, error=message.error_code
        )
        if lost:
            self.ownership.release(run_id)
            self.on_lost()
            return
        if nudged is not None:
            # The run goes on in its session: still this controller's, its report asked for.
            seq, start = nudged
            log.info(
                "run %s ended turn %s unreported; asked in turn %s", run_id, number, start.turn
            )
            await link.deliver(seq, msgspec.structs.replace(start, seq=seq))
            return
        failpoint("engine.status_decision.before_presentation")
        if ended:
            log.info("run %s ended %s", run_id, status.value)
        self.ownership.release(run_id)
        link.kick()
        self.nudge()
        if ended and status is RunStatus.SUCCEEDED:
            await self.present(run_id, PresentationPath.LIVE)

    def _joined(self, connection: AsyncConnection) -> AsyncSession:
        """A session in the turn end's transaction; it never commits it (its rollback does)."""
        return self.sessions(bind=connection, join_transaction_mode="rollback_only")

    def _plain(
        self, run: EndingRun, message: TurnFinished
    ) -> tuple[RunStatus, str | None, str | None] | None:
        """The decision of a plain end (``plain_end``; a success still to pass the terminal
        guard), or None: the turn's end is the ORM's (a drain to report, a report nudge to
        ask, a chat turn's decision, reservations to give back, a hold to set, a parent to
        tell, a blocker to send up)."""
        if run.pending or run.chat or run.reserved or run.part or run.status != RunStatus.RUNNING:
            return None
        if (run.result or {}).get("outcome") == BLOCKED:
            return None  # a blocker goes up the chart (``issue_parts.escalate``)
        if self.report_nudges.limit > 0 and unreported(run, message):
            return None  # it may be asked for its report in its session
        status, code, text = decide(run, message)  # type: ignore[arg-type]
        if code in HELD_BY_WORKSPACE or code == BUDGET_EXCEEDED:
            return None
        return status, code, text

    async def _end_in_session(
        self,
        session: AsyncSession,
        run: Run,
        link: RunnerLink,
        message: TurnFinished,
        *,
        lost: bool,
    ) -> tuple[bool, tuple[int, StartTurn] | None, bool, RunStatus]:
        """A turn's end that is not plain, through the ORM: lost, nudged, ended, status."""
        if lost:
            await self._lose_turn(session, run, message)
            return True, None, False, RunStatus.RUNNING
        pending = await drain.pending_callbacks(session, run.id)
        if pending:
            # Close must prove the drain: it cannot, so the session stays suspended.
            ended, status = await self._quarantine(session, run, link, message, pending)
            return False, None, ended, status
        nudged = await nudge(
            session,
            run,
            link,
            message,
            self.plugins,
            self.report_nudges,
            instance=self.instance,
        )
        if nudged is not None:
            return False, nudged, False, RunStatus.RUNNING
        ended, status = await self._end_run(session, run, link, message)
        await outbox.enqueue_one(session, link.runner_id, Close(seq=0, run_id=run.id))
        return False, None, ended, status

    async def _lose_turn(self, session: AsyncSession, run: Run, message: TurnFinished) -> None:
        """The provider process, not the model, failed: the run is not over.

        The turn is closed as lost and the run's lease released at once, so the
        reconciler settles the loss (the next turn resumes the session).
        """
        await end_turn(
            session,
            run,
            run.turn,
            TurnStatus.LOST,
            error_code=message.error_code,
            error_message=message.error,
            session_ref=message.session_ref,
            provider_turn_id=message.provider_turn_id,
        )
        run.lease_expires_at = datetime.now(UTC)
        log.info("turn %s of run %s was lost (%s)", run.turn, run.id, message.error_code)

    async def _quarantine(
        self,
        session: AsyncSession,
        run: Run,
        link: RunnerLink,
        message: TurnFinished,
        pending: list[dict[str, object]],
    ) -> tuple[bool, RunStatus]:
        """The turn ended with inputs unsettled: report it, fail the run, hold its task."""
        completed = message.status == "completed"
        report = drain.settlement_report(pending)  # type: ignore[arg-type]
        await end_turn(
            session,
            run,
            run.turn,
            TurnStatus.COMPLETED if completed else TurnStatus.FAILED,
            error_code=message.error_code,
            error_message=message.error,
            session_ref=message.session_ref,
            provider_turn_id=message.provider_turn_id,
        )
        epoch = run.controller_epoch
        ended = await finish_run(
            session,
            run,
            RunStatus.FAILED,
            error_code=drain.CLEANUP_QUARANTINED,
            error_message=f"{drain.SETTLEMENT_INCOMPLETE}: {len(pending)} tool call(s) pending",
            session_ref=message.session_ref,
            answer=message.answer,
        )
        if ended:
            await append_events(
                session,
                run,
                self.instance,  # the controller's report, beside the runner's events
                [NewEvent(message.seq, drain.SETTLEMENT_INCOMPLETE, report)],
            )
            await append_events(
                session,
                run,
                link.instance,
                [
                    NewEvent(
                        message.seq,
                        "run.finished",
                        {"status": "failed", "error_code": drain.CLEANUP_QUARANTINED},
                    )
                ],
            )
            await drain.quarantine(
                session,
                run,
                report,
                instance=self.instance,
                epoch=epoch,
                boot=self.boot,
                turn_completed=completed,
            )
        return ended, RunStatus.FAILED

    async def _end_run(
        self, session: AsyncSession, run: Run, link: RunnerLink, message: TurnFinished
    ) -> tuple[bool, RunStatus]:
        """The run's status decision: the turn ended, and with it the run."""
        status, code, text = decide(run, message)
        if status is RunStatus.SUCCEEDED:
            status, code, text = await self._terminal_guard(session, run)
        await end_turn(
            session,
            run,
            run.turn,
            TurnStatus.COMPLETED if message.status == "completed" else TurnStatus.FAILED,
            error_code=message.error_code,
            error_message=message.error,
            session_ref=message.session_ref,
            provider_turn_id=message.provider_turn_id,
        )
        ended = await finish_run(
            session,
            run,
            status,
            error_code=code,
            error_message=text,
            session_ref=message.session_ref,
            answer=message.answer,
        )
        if ended:
            await append_events(
                session,
                run,
                link.instance,
                [
                    NewEvent(
                        message.seq, "run.finished", {"status": status.value, "error_code": code}
                    )
                ],
            )
            if code in HELD_BY_WORKSPACE and run.issue_id is not None:
                # The runner host refused or could not make the worktree: nothing ran, and a
                # person must act (its settings, the project) before the task runs again.
                await hold_task(
                    session,
                    SYSTEM,
                    company_id=run.company_id,
                    issue_id=run.issue_id,
                    run_id=run.id,
                    kind=code,
                    reason=f"{text} Fix it, then resolve this hold to run the task again.",
                )
            elif code == BUDGET_EXCEEDED and run.issue_id is not None:
                # Released by the budget keeper once the budget allows it again.
                await hold_task(
                    session,
                    SYSTEM,
                    company_id=run.company_id,
                    issue_id=run.issue_id,
                    run_id=run.id,
                    kind=BUDGET_EXCEEDED,
                    reason=text or BUDGET_EXCEEDED,
                )
        return ended, status

    async def _terminal_guard(
        self, session: AsyncSession, run: Run | EndingRun
    ) -> tuple[RunStatus, str | None, str | None]:
        """The completion guards again, after the provider ended its turn, against the exact
        wake snapshot as it is now: a refusal fails the run with its code."""
        assert run.result is not None
        try:
            refusal = await check_completion(
                session, run, CompletionStage.TERMINAL, report_of(run.result), self.plugins
            )
        except PluginError as exc:
            return RunStatus.FAILED, getattr(exc, "code", "plugin_failed"), str(exc)
        except SnapshotBindingError as exc:
            return RunStatus.FAILED, exc.code, str(exc)
        if refusal is not None:
            return RunStatus.FAILED, *terminal_failure(refusal)
        return RunStatus.SUCCEEDED, None, None

    async def present(self, run_id: uuid.UUID, path: PresentationPath) -> bool:
        """Present a succeeded run's answer once (``presentation.Presenter.present``)."""
        return await self.presenter.present(run_id, path)
