"""Wakes to runs: claim queued wakes (``SKIP LOCKED``), create their runs, send ``start_turn``.

A committed wake (or a run that ended and freed its issue) makes PostgreSQL
``NOTIFY`` every replica (a trigger, migration 0004), which claims at once; a
slow poll stays as the fallback for a lost notification or listener. A pass
is one transaction for its wakes (``wake_claims``).

The queued turns of lost runs are looked for only when one may wait for a
runner here: a lost run's settlement notifies on the same channel (payload
``resume``), a runner connected here, the listener was (re)established, a
lease that held one back runs out, a row locked when a pass looked (``SKIP
LOCKED`` passed it over) may be free; or every ``RESUME_POLL_SECONDS`` (every
pass while no LISTEN is in place).

A run's way: from a wake's commit (``domain/runs/wakes.py``); next,
``wake_claims.py`` makes the runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Callable, Collection
from datetime import UTC, datetime

import msgspec
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from paperclip.db.availability import log_failure
from paperclip.db.listen import hold_listener
from paperclip.domain.runs.wakes import RESUMPTION, WAKES_CHANNEL
from paperclip.engine.costs.admission import end_for_budget, next_turn_refusal
from paperclip.engine.links.link import RunnerLink
from paperclip.engine.ownership.leases import take_over
from paperclip.engine.ownership.owned_runs import RunOwnership
from paperclip.engine.recovery.resumption import leased_resumable, queued_turn, resumable
from paperclip.engine.scheduling.wake_claims import CLAIM_BATCH, LinkPicker, WakeClaims
from paperclip.engine.turns.starts import queue_later_turn
from paperclip.engine.workspaces.placement import placement_of
from paperclip.models import Run
from paperclip.plugin_host import PluginHost
from paperclip.wire.messages import StartTurn

log = logging.getLogger(__name__)

CHANNEL = WAKES_CHANNEL
FALLBACK_POLL_SECONDS = 5.0
"""How often to look for wakes when no notification came (a lost listener, a missed one)."""
RESUME_POLL_SECONDS = 30.0
"""How often to look for queued turns of lost runs when nothing said one may wait (a missed
notification, a runner's offers that changed)."""
LISTEN_RETRY_SECONDS = 2.0
LEASE_MARGIN_SECONDS = 0.05
"""How long after a lease's expiry its run's queued turn is looked for (clocks round)."""


class WakeScheduler:
    """This replica's scheduler: claim passes, when nudged or notified, until stopped."""

    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        engine: AsyncEngine | None,
        ownership: RunOwnership,
        plugins: PluginHost,
        pick_link: LinkPicker,
        *,
        instance: str,
        lease_seconds: float,
        on_adopted: Callable[[RunnerLink, uuid.UUID], None] = lambda link, run_id: None,
        runners_here: Callable[[], Collection[uuid.UUID]],
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        nudged: asyncio.Event | None = None,
        resumptions: asyncio.Event | None = None,
        prompt_ownership: bool = True,
        plans_once: AsyncEngine | None = None,
    ) -> None:
        self.sessions = sessions
        self.engine = engine
        self.ownership = ownership
        self.plugins = plugins
        self.pick_link = pick_link
        self.clock = clock
        """Now, for budget months (injectable: tests move it)."""
        self.runners_here = runners_here
        """The runners connected to this replica: none, nothing to claim; a wake pinned to
        another one's worktree is left to it."""
        self.on_adopted = on_adopted
        """Called for a run this replica adopted to start its next turn (settle its journal)."""
        self.instance = instance
        self.ttl = lease_seconds
        self._nudge = nudged if nudged is not None else asyncio.Event()
        """Set by whoever may have made work claimable (the parts get its ``set``)."""
        self.listening = asyncio.Event()
        """Set while this replica's LISTEN is in place."""
        self.wakes = WakeClaims(
            sessions,
            ownership,
            plugins,
            pick_link,
            instance=instance,
            lease_seconds=lease_seconds,
            clock=clock,
            prompt_ownership=prompt_ownership,
            plans_once=plans_once,
        )
        self.resumptions = resumptions if resumptions is not None else asyncio.Event()
        """Set by whoever may have queued a lost run's next turn for a runner here (a runner
        connected, a settlement notified): the next pass looks for it. The first one does."""
        self.resumptions.set()
        self._resumptions_looked = float("-inf")
        self._look_again: asyncio.TimerHandle | None = None

    def nudge(self) -> None:
        """Something may be claimable now (a wake, a finished run, a runner)."""
        self._nudge.set()

    def nudge_resumptions(self) -> None:
        """A lost run's next turn may be queued now: the next pass looks for it."""
        self.resumptions.set()
        self._nudge.set()

    def _notified(self, payload: str) -> None:
        if payload == RESUMPTION:
            self.nudge_resumptions()
        else:
            self.nudge()

    async def run(self) -> None:
        """Claim whenever nudged or notified, or every FALLBACK_POLL_SECONDS; until cancelled."""
        listener = asyncio.create_task(self.listen(), name="wake-listener")
        try:
            while True:
                # asyncio.timeout, not wait_for: on 3.11 a cancel that races wait_for's own
                # timeout can be lost, and stopping the engine would hang.
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(FALLBACK_POLL_SECONDS):
                        await self._nudge.wait()
                self._nudge.clear()
                try:
                    await self.claim_wakes()
                    if self.wakes.full:
                        self.nudge()  # a full batch may have left more
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    log_failure(log, "claiming wakes failed", exc)
                    await asyncio.sleep(LISTEN_RETRY_SECONDS)
        finally:
            if self._look_again is not None:
                self._look_again.cancel()
            listener.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await listener

    async def listen(self) -> None:
        """Hold a connection that LISTENs on the wake channel; re-establish it when it breaks
        (``listening`` is set while it is in place). ``run`` runs it; a test may alone."""
        if self.engine is None:
            return
        await hold_listener(
            self.engine,
            CHANNEL,
            self._notified,
            self._listening,
            log,
            retry_seconds=LISTEN_RETRY_SECONDS,
        )

    def _listening(self, listening: bool) -> None:
        if listening:
            self.listening.set()
            self.nudge_resumptions()  # anything committed before LISTEN took effect
        else:
            self.listening.clear()

    async def claim_wakes(self) -> int:
        """Start what waits for a runner connected here: queued turns of runs that go on after
        a loss, then runs for queued wakes; how many turns started."""
        # Not ``pick_link``: a pick moves the rotation, and one per pass would send every
        # run claimed alone in its pass to the same runner.
        self.wakes.full = False
        here = self.runners_here()
        if not here:
            return 0  # no runner here: a replica with one (or a runner still to come) claims
        resumed = await self._claim_resumptions() if self._resumptions_wanted() else 0
        return resumed + await self.wakes.claim(here)

    def _resumptions_wanted(self) -> bool:
        """Whether this pass looks for queued turns of lost runs: one may wait for a runner
        here (a settlement notified, a runner connected), nothing would have told (no LISTEN
        in place), or the slow poll is due."""
        now = asyncio.get_running_loop().time()
        if (
            self.resumptions.is_set()
            or not self.listening.is_set()
            or now - self._resumptions_looked >= RESUME_POLL_SECONDS
        ):
            self.resumptions.clear()
            self._resumptions_looked = now
            return True
        return False

    def _look_again_in(self, seconds: object) -> None:
        """Look for queued turns again once the first one the pass could not take may be:
        its lease lapsed, or its row no longer locked (soon)."""
        if seconds is None:
            return
        loop = asyncio.get_running_loop()
        when = loop.time() + float(seconds) + LEASE_MARGIN_SECONDS  # type: ignore[arg-type]
        if self._look_again is not None and self._look_again.when() <= when:
            return
        if self._look_again is not None:
            self._look_again.cancel()
        self._look_again = loop.call_at(when, self._looked_again)

    def _looked_again(self) -> None:
        self._look_again = None
        self.nudge_resumptions()

    async def _claim_resumptions(self) -> int:
        """Start the queued turns of lost runs (their runs adopted here); how many."""
        try:
            return await self._resume_queued_turns()
        except BaseException:
            self.resumptions.set()  # the next pass looks again
            raise

    async def _resume_queued_turns(self) -> int:
        started: list[tuple[RunnerLink, int, StartTurn, int]] = []
        async with self.sessions.begin() as session:
            listed = list((await session.execute(resumable(CLAIM_BATCH))).scalars())
            for run in listed:
                refusal = await next_turn_refusal(session, run, self.clock())
                if run.budget_stop_at is not None or refusal is not None:
                    # Taken over (the fence moves) to end it: its earlier controller writes no
                    # more, and an ended run holds no lease (it lapses at once).
                    if await take_over(session, run, instance=self.instance, ttl=0) is not None:
                        await end_for_budget(session, run, refusal)
                    continue
                place = await placement_of(session, run.issue_id)
                link = self.pick_link(
                    run.provider, runner_id=place.runner_id, workspaces=place.workspace
                )
                if link is None or place.wait:
                    continue
                resumed = await self._resume(session, run, link)
                if resumed is not None:
                    started.append((link, *resumed))
            if len(listed) == CLAIM_BATCH:
                self.nudge_resumptions()  # a full batch may have left more
            else:
                self._look_again_in(await session.scalar(leased_resumable([r.id for r in listed])))
        log.debug("looked for queued turns: %d found, %d started", len(listed), len(started))
        for link, seq, start, epoch in started:
            self.ownership.own(start.run_id, epoch)
            await link.deliver(seq, msgspec.structs.replace(start, seq=seq))
            self.on_adopted(link, start.run_id)
        return len(started)

    async def _resume(
        self, session: AsyncSession, run: Run, link: RunnerLink
    ) -> tuple[int, StartTurn, int] | None:
        """Adopt the run (the epoch moves) and send its queued turn to ``link``'s runner."""
        epoch = await take_over(session, run, instance=self.instance, ttl=self.ttl)
        if epoch is None:
            return None  # its lease turned out held: a later pass tries again
        turn = await queued_turn(session, run)
        run.runner_id = link.runner_id
        run.phase = "turn"
        run.resumable_since = None
        turn.runner_id = link.runner_id
        seq, start = await queue_later_turn(session, run, turn, link)
        log.info("run %s goes on in turn %s (%s)", run.id, turn.number, turn.kind)
        return seq, start, epoch
