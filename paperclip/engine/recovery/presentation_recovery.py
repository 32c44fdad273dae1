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

A candidate ``present`` declines (a held chat turn with no policy installed, or
one the policy refuses) stays a candidate, untouched. So that such candidates
cannot hold the ones behind them, a pass pages through the candidates by key,
``(finished_at, id)``, each page starting after the last key seen, and a sweep
walks past every waiting candidate to the end. A pass visits at most
``PAGES_PER_PASS`` pages; a longer sweep carries its cursor to the next pass
and, once at the end, starts again from the oldest. Keyset paging rather than
a per-row next-attempt time: it needs no column and no write for a declined
candidate (``present`` stays the only writer, the candidate query unchanged),
and a candidate that becomes presentable (the policy installed, say) is
presented on the next sweep rather than after a backoff.
"""

from __future__ import annotations

import logging
import uuid
from datetime import UTC, datetime, timedelta

from paperclip_hookspecs.presentation import PresentationPath
from sqlalchemy import and_, exists, not_, or_, select, tuple_
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
PAGES_PER_PASS = 10
"""A pass presents or passes over at most this many pages; the sweep goes on at the next."""

Key = tuple[datetime, uuid.UUID]
"""Where a page starts: after this ``(finished_at, id)``."""


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
        """When the last complete sweep began (its first pass; one pass unless more than
        ``PAGES_PER_PASS`` pages wait): every run finished before it, less the grace, was a
        candidate of that sweep."""
        self.waiting_without_policy = 0
        """Candidates the last sweep left because no recovery policy is installed (mid-sweep:
        at least those it has left so far)."""
        self._warned = False
        self._after: Key | None = None
        """The sweep's cursor; None: the next pass starts a sweep from the oldest candidate."""
        self._sweep_started_at: datetime | None = None
        self._sweep_left = 0

    async def run(self) -> None:
        await keep_running(
            self.pass_once,
            every=self.pass_seconds,
            log=log,
            failure="a presentation recovery pass failed",
        )

    async def candidates(self, after: Key | None = None) -> list[uuid.UUID]:
        """The runs due for presentation now, oldest first: one page (at most ``BATCH``),
        after the key ``after`` when given."""
        return [run_id for _, run_id in await self._page(after)]

    async def _page(self, after: Key | None) -> list[Key]:
        async with self.sessions() as session:
            query = (
                select(Run.finished_at, Run.id)
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
                # The id breaks ties: runs finished in the same microsecond are neither
                # skipped nor listed twice across pages.
                .order_by(Run.finished_at, Run.id)
                .limit(BATCH)
            )
            if after is not None:
                query = query.where(tuple_(Run.finished_at, Run.id) > tuple_(*after))
            rows = await session.execute(query)
            # Never NULL here (the query compares it): the test only narrows the type.
            return [(row.finished_at, row.id) for row in rows if row.finished_at]

    async def pass_once(self) -> int:
        """Present what is due, up to ``PAGES_PER_PASS`` pages on from where the last pass
        stopped; how many this pass recorded."""
        started_at = datetime.now(UTC)
        if self._after is None:
            self._sweep_started_at, self._sweep_left = started_at, 0
        presented = 0
        swept = False
        for _ in range(PAGES_PER_PASS):
            page = await self._page(self._after)
            for finished_at, run_id in page:
                # Moved on first: a candidate whose ``present`` raises is tried again on the
                # next sweep, not at the head of every pass.
                self._after = (finished_at, run_id)
                if await self.endings.present(uuid.UUID(str(run_id)), PresentationPath.RECOVERY):
                    presented += 1
                    self.presented_total += 1
                    log.info("presented the answer of run %s after a restart", run_id)
                else:
                    self._sweep_left += 1
            if len(page) < BATCH:
                swept, self._after = True, None
                break
        self.passes += 1
        if swept:
            self.last_pass_started_at = self._sweep_started_at
        self._say_what_waits(self._sweep_left, swept=swept)
        return presented

    def _say_what_waits(self, left: int, *, swept: bool) -> None:
        """Without the policy, committed chat turns wait (kept, not lost): say so, once."""
        if answers(self.endings.plugins, UNPRESENTED.hook or ""):
            self.waiting_without_policy = 0
            return
        # Mid-sweep, the last sweep's count stands until this one has left more.
        waiting = left if swept else max(self.waiting_without_policy, left)
        self.waiting_without_policy = waiting
        if waiting and not self._warned:
            self._warned = True
            log.warning(
                "%d committed chat answer(s) wait to be presented: no installed plugin "
                "decides which to present after a restart; install %s (they are presented "
                "then, while each is still its conversation's current turn)",
                waiting,
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
