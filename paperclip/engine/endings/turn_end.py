"""The end of a run: the terminal guard, one status decision exactly once, then the presentation.

A turn's end is processed in two transactions, in this order. The status
decision (the run's terminal status, its reason, the issue's status, the
turn's final prose) commits first; the presentation decision (is the prose
the run's answer, posted to the task's thread?) is recorded after it, once.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime

from paperclip_hookspecs.completion import CompletionStage
from paperclip_hookspecs.presentation import (
    COMMITTED_CONVERSATION_INTERACTION_PRESENTED,
    ConversationTurn,
    PendingCard,
    PresentationDecision,
    PresentationMode,
    PresentationPath,
    UnpresentedTurn,
)
from paperclip_hookspecs.runs import RunView
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from paperclip import tracing
from paperclip.engine.context.completion import (
    check_completion,
    current_snapshot,
    report_of,
    terminal_failure,
)
from paperclip.engine.context.run_view import run_view
from paperclip.engine.context.snapshot import SnapshotBindingError
from paperclip.engine.endings import drain
from paperclip.engine.links.gate import ControlGate
from paperclip.engine.links.link import RunnerLink
from paperclip.engine.logs import outbox
from paperclip.engine.logs.events import NewEvent, append_events
from paperclip.engine.ownership.fence import RUN_LOCK, lock_run
from paperclip.engine.ownership.owned_runs import RunOwnership
from paperclip.engine.turns.lifecycle import end_turn, is_lost
from paperclip.failpoints import failpoint
from paperclip.models import ConversationState, Run, RunStatus, TurnStatus
from paperclip.plugin_host import PluginHost
from paperclip.plugin_host.errors import PluginError
from paperclip.services import chat_turns
from paperclip.services.activity import record_activity
from paperclip.services.actor import SYSTEM, Actor
from paperclip.services.budget_ledger import BUDGET_EXCEEDED, release
from paperclip.services.comments import add_comment
from paperclip.services.holds import hold_task
from paperclip.services.issues import settle_after_run
from paperclip.services.run_tokens import revoke_run_tokens
from paperclip.wire.messages import Close, TurnFinished
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

NO_PROSE = "conversation_turn_without_prose"
"""Presentation reason of a successful conversation turn that ended with no final prose."""

ANSWER_NAMESPACE = uuid.UUID("0f1c6a43-7d52-4d57-9a3e-5b1d1c0a9e01")
"""Names the comment that presents a run's answer: one per run, by primary key."""


def answer_comment_id(run_id: uuid.UUID) -> uuid.UUID:
    return uuid.uuid5(ANSWER_NAMESPACE, str(run_id))


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
        await settle_after_run(
            session, run.issue_id, succeeded=status is RunStatus.SUCCEEDED, outcome=outcome
        )
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

    async def turn_finished(self, link: RunnerLink, message: TurnFinished) -> None:
        run_id = message.run_id
        if not await self.gate.controls(link, run_id):
            return  # already ended (a replay): it ends once
        async with self.sessions.begin() as session:
            run = await lock_run(
                session, run_id, instance=self.instance, epoch=self.ownership.epoch(run_id)
            )
            number = message.turn or run.turn
            if number != run.turn or run.phase != "turn":
                return  # the end of an earlier turn of the run, replayed: settled already
            if message.status != "completed" and is_lost(message.error_code):
                await self._lose_turn(session, run, message)
                lost = True
            else:
                lost = False
                pending = await drain.pending_callbacks(session, run_id)
                if pending:
                    # Close must prove the drain: it cannot, so the session stays suspended.
                    ended, status = await self._quarantine(session, run, link, message, pending)
                else:
                    ended, status = await self._end_run(session, run, link, message)
                    await outbox.enqueue_one(session, link.runner_id, Close(seq=0, run_id=run_id))
        tracing.turn_ended(
            run_id, number, status="lost" if lost else message.status, error=message.error_code
        )
        if lost:
            self.ownership.release(run_id)
            self.on_lost()
            return
        failpoint("engine.status_decision.before_presentation")
        if ended:
            log.info("run %s ended %s", run_id, status.value)
        self.ownership.release(run_id)
        link.kick()
        self.nudge()
        if ended and status is RunStatus.SUCCEEDED:
            await self.present(run_id, PresentationPath.LIVE)

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
        self, session: AsyncSession, run: Run
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

    async def present(
        self,
        run_id: uuid.UUID,
        path: PresentationPath,
    ) -> bool:
        """Ask the presentation decision for a succeeded run's answer and record it, once.

        With ``answer`` the final prose is posted: to its conversation for a chat
        turn, else to the task's thread as the agent's comment. The decision is
        written only where none is, under the run's row lock, and the reply is
        unique per run in the database: a second caller (a replay, another
        replica, recovery) posts nothing. On the recovery path the recovery
        policy (``paperclip_accept_unpresented_turn``) may decline a chat turn that
        is no longer its conversation's unsettled current turn. Returns whether this call recorded the decision.
        """
        async with self.sessions() as session:
            run = await session.get(Run, run_id)
            if run is None or run.status != RunStatus.SUCCEEDED or run.presentation is not None:
                return False
            chat = await chat_turns.chat_turn_of(session, run)
            if chat is not None and path is PresentationPath.RECOVERY:
                facts = await chat_turns.unpresented_facts(session, run, chat)
                if not self._accepts(facts):
                    return False
            cards = await chat_turns.pending_cards(session, run.id) if chat else ()
            turn = _turn_of(run, path, cards)
            if turn is not None:
                turn = replace(turn, run=await self._view(session, run))
        if turn is not None:
            try:
                decision = self.plugins.decide_presentation(turn)
            except PluginError:
                log.exception("the presentation of run %s was not decided", run_id)
                return False
        elif chat is not None:
            # No prose to decide on, yet the conversation turn must settle: nothing is posted.
            decision = PresentationDecision.none(
                COMMITTED_CONVERSATION_INTERACTION_PRESENTED if cards else NO_PROSE
            )
        else:
            return False
        async with self.sessions.begin() as session:
            run = await session.get(Run, run_id, with_for_update=RUN_LOCK, populate_existing=True)
            if run is None or run.presentation is not None:
                return False
            answered = decision.mode is PresentationMode.ANSWER and run.answer
            comment_id = message_id = None
            if chat is not None:
                if answered:
                    message_id = await chat_turns.post_reply(session, chat, run)
                # Presented by its own card, it waits for the person; else it is over.
                waits = not answered and bool(cards)
                settled = ConversationState.WAITING if waits else ConversationState.IDLE
                await chat_turns.settle(session, chat, settled)
            elif answered and run.issue_id is not None:
                actor = Actor(
                    type="agent", id=str(run.agent_id), company_id=run.company_id, run_id=run.id
                )
                comment = await add_comment(
                    session,
                    actor,
                    run.company_id,
                    run.issue_id,
                    body=run.answer,
                    command_id=answer_comment_id(run.id),
                )
                comment_id = str(comment.id)
            run.presentation = {
                "presentationDecision": decision.mode.value,
                "reason": decision.reason,
                "comment_id": comment_id,
                **({"message_id": str(message_id) if message_id else None} if chat else {}),
            }
        return True

    @staticmethod
    async def _view(session: AsyncSession, run: Run) -> RunView:
        """What the run did, for the presentation hook (its snapshot only when it is the run's)."""
        try:
            snapshot, _ = await current_snapshot(session, run)
        except SnapshotBindingError:
            snapshot = None
        return await run_view(session, run, snapshot)

    def _accepts(self, facts: UnpresentedTurn) -> bool:
        try:
            return self.plugins.accept_unpresented_turn(facts)
        except PluginError:
            log.exception("the recovery policy failed on run %s", facts.run_id)
            return False


def _turn_of(
    run: Run, path: PresentationPath, cards: tuple[PendingCard, ...] = ()
) -> ConversationTurn | None:
    """The run's turn as the presentation hook sees it; None when there is no prose to present."""
    if not run.answer:
        return None
    outcome = (run.result or {}).get("outcome")
    return ConversationTurn(
        run_id=str(run.id),
        company_id=str(run.company_id),
        issue_id=str(run.issue_id or ""),
        turn_id=str(run.id),
        status_reason=run.status_reason or "",
        result="done" if outcome == "done" else "yielded",
        answer=run.answer,
        pending_cards=cards,
        path=path,
    )
