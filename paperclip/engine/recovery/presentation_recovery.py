"""Presentation recovery: an answer whose status decision committed is presented, even after a crash.

The live path presents a run's answer right after its status decision
commits (``endings``). A process that dies between the two leaves a succeeded
run with an answer and no presentation decision; every replica looks for such
runs in the background and presents each through the same ``present`` call
(path ``recovery``), which records the decision once under the run's row
lock: the live path, a replay and two replicas cannot post the answer twice.

A chat turn is a candidate only while it is still the unsettled current turn
of its conversation (the installed recovery policy,
``paperclip_accept_unpresented_turn``, has the last word on each): the
candidate query below matches those turns, so a stale or superseded turn is
never listed and a presented one leaves the set with its decision.
"""

from __future__ import annotations

import logging
import uuid
from datetime import UTC, datetime, timedelta

from paperclip_hookspecs.presentation import PresentationPath
from sqlalchemy import and_, exists, not_, or_, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from sqlalchemy.orm import aliased

from paperclip.engine.endings.turn_end import RunEndings
from paperclip.engine.loop import keep_running
from paperclip.models import (
    ACTIVE_RUN_STATUSES,
    Conversation,
    ConversationState,
    ConversationTurnRecord,
    Issue,
    IssueStatus,
    Run,
    RunStatus,
)
from paperclip.plugin_host.seed_policies import SEED_POLICIES, answers

log = logging.getLogger(__name__)

UNPRESENTED = next(p for p in SEED_POLICIES if p.seed == "002")

BATCH = 100


class PresentationRecovery:
    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        endings: RunEndings,
        *,
        pass_seconds: float,
        grace: timedelta,
    ) -> None:
        self.sessions, self.endings = sessions, endings
        self.pass_seconds = pass_seconds
        self.grace = grace
        """How long the live path gets before recovery presents in its place."""
        self.presented_total = 0
        self.passes = 0
        """Passes completed since this replica started."""
        self.last_pass_started_at: datetime | None = None
        """When the last completed pass began: every run finished before it, less the grace,
        was a candidate of that pass."""
        self.waiting_without_policy = 0
        """Candidates the last pass left because no recovery policy is installed."""
        self._warned = False

    async def run(self) -> None:
        await keep_running(
            self.pass_once,
            every=self.pass_seconds,
            log=log,
            failure="a presentation recovery pass failed",
        )

    async def candidates(self) -> list[uuid.UUID]:
        """The runs due for presentation now, oldest first (a bounded batch)."""
        async with self.sessions() as session:
            return list(
                await session.scalars(
                    select(Run.id)
                    .where(
                        Run.status == RunStatus.SUCCEEDED,
                        Run.presentation.is_(None),
                        Run.finished_at < datetime.now(UTC) - self.grace,
                        # A chat turn settles even without prose (it records ``none``).
                        or_(
                            and_(Run.answer.is_not(None), not_(_is_chat_turn())),
                            _unsettled_current_turn(),
                        ),
                    )
                    .order_by(Run.finished_at)
                    .limit(BATCH)
                )
            )

    async def pass_once(self) -> int:
        """Present what is due; how many this pass recorded."""
        started_at = datetime.now(UTC)
        due = await self.candidates()
        presented = 0
        for run_id in due:
            if await self.endings.present(uuid.UUID(str(run_id)), PresentationPath.RECOVERY):
                presented += 1
                log.info("presented the answer of run %s after a restart", run_id)
        self.presented_total += presented
        self.passes += 1
        self.last_pass_started_at = started_at
        self._say_what_waits(len(due) - presented)
        return presented

    def _say_what_waits(self, left: int) -> None:
        """Without the policy, committed chat turns wait (kept, not lost): say so, once."""
        self.waiting_without_policy = 0
        if left and not answers(self.endings.plugins, UNPRESENTED.hook or ""):
            self.waiting_without_policy = left
            if not self._warned:
                self._warned = True
                log.warning(
                    "%d committed chat answer(s) wait to be presented: no installed plugin "
                    "decides which to present after a restart; install %s (they are presented "
                    "then, while each is still its conversation's current turn)",
                    left,
                    UNPRESENTED.distribution,
                )


def _is_chat_turn():  # type: ignore[no-untyped-def]
    return (
        exists().where(ConversationTurnRecord.wake_request_id == Run.wake_request_id).correlate(Run)
    )


def _unsettled_current_turn():  # type: ignore[no-untyped-def]
    """A chat turn recovery may present: ``done`` or ``yielded``, still its conversation's
    current turn (same agent, person and session generation, the conversation active), no
    other run of the task executing; a ``conversation_turn_finished`` one with its task
    ``in_progress``. The same turns the recovery policy accepts."""
    other = aliased(Run)
    return (
        exists()
        .where(
            ConversationTurnRecord.wake_request_id == Run.wake_request_id,
            Conversation.id == ConversationTurnRecord.conversation_id,
            Conversation.current_wake_id == Run.wake_request_id,
            Conversation.state == ConversationState.ACTIVE,
            Conversation.agent_id == Run.agent_id,
            Conversation.agent_id == ConversationTurnRecord.agent_id,
            Conversation.user_ref == ConversationTurnRecord.user_ref,
            Conversation.session_generation == ConversationTurnRecord.session_generation,
            Issue.id == Run.issue_id,
            Run.result["outcome"].astext.in_(("done", "yielded")),
            or_(
                Run.status_reason != "conversation_turn_finished",
                Issue.status == IssueStatus.IN_PROGRESS,
            ),
            not_(
                exists()
                .where(
                    other.issue_id == Run.issue_id,
                    other.id != Run.id,
                    other.status.in_(ACTIVE_RUN_STATUSES),
                )
                .correlate(Run)  # the run being listed, two levels out
            ),
        )
        .correlate(Run)
    )
