"""Wakes to runs: claim queued wakes (``SKIP LOCKED``), create their runs, send ``start_turn``.

A committed wake (or a run that ended and freed its issue) makes PostgreSQL
``NOTIFY`` every replica (a trigger, migration 0004), which claims at once; a
slow poll stays as the fallback for a lost notification or listener.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Callable, Collection
from datetime import UTC, datetime, timedelta
from typing import Protocol

import msgspec
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from paperclip import log_context, tracing
from paperclip.db.availability import log_failure
from paperclip.db.listen import hold_listener
from paperclip.engine.context.prompt import assemble_for_run
from paperclip.engine.context.snapshot import record_wake_snapshot, snapshot_source
from paperclip.engine.costs.admission import (
    BudgetRefused,
    admit_run,
    end_for_budget,
    next_turn_refusal,
    wait_for_budget,
)
from paperclip.engine.links.link import RunnerLink
from paperclip.engine.logs import outbox
from paperclip.engine.ownership.leases import take_over
from paperclip.engine.ownership.owned_runs import RunOwnership
from paperclip.engine.recovery.resumption import queued_turn, resumable
from paperclip.engine.turns.lifecycle import open_turn
from paperclip.engine.turns.starts import queue_later_turn
from paperclip.engine.workspaces.placement import (
    WorkspaceElsewhere,
    open_workspace,
    placement_of,
)
from paperclip.models import Agent, Issue, Run, RunStatus, TurnKind, WakeRequest
from paperclip.plugin_host import PluginHost
from paperclip.services.activity import record_activity
from paperclip.services.actor import SYSTEM
from paperclip.services.issues import ISSUE_LOCK, start_work
from paperclip.services.run_tokens import new_run_token
from paperclip.services.wakes import WAKES_CHANNEL, claimable_wakes, mark_claimed
from paperclip.wire.messages import StartTurn

log = logging.getLogger(__name__)

CHANNEL = WAKES_CHANNEL
CLAIM_BATCH = 20
FALLBACK_POLL_SECONDS = 5.0
"""How often to look for wakes when no notification came (a lost listener, a missed one)."""
LISTEN_RETRY_SECONDS = 2.0


class LinkPicker(Protocol):
    """The connected runner link that offers a provider (None: any connected runner), only
    ``runner_id`` when given, only one that speaks workspaces when asked; or None."""

    def __call__(
        self,
        provider: str | None,
        *,
        runner_id: uuid.UUID | None = None,
        workspaces: bool = False,
    ) -> RunnerLink | None: ...


class WakeScheduler:
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
        prompt_ownership: bool = True,
    ) -> None:
        self.sessions = sessions
        self.engine = engine
        self.ownership = ownership
        self.plugins = plugins
        self.pick_link = pick_link
        self.clock = clock
        self.prompt_ownership = prompt_ownership
        """New runs' prompts carry ownership metadata (v5); off is the rollback (v4)."""
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

    def nudge(self) -> None:
        """Something may be claimable now (a wake, a finished run, a runner)."""
        self._nudge.set()

    async def run(self) -> None:
        """Claim whenever nudged or notified, or every FALLBACK_POLL_SECONDS; until cancelled."""
        listener = asyncio.create_task(self._listen(), name="wake-listener")
        try:
            while True:
                # asyncio.timeout, not wait_for: on 3.11 a cancel that races wait_for's own
                # timeout can be lost, and stopping the engine would hang.
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(FALLBACK_POLL_SECONDS):
                        await self._nudge.wait()
                self._nudge.clear()
                try:
                    if await self.claim_wakes():
                        self.nudge()  # a full batch may have left more
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    log_failure(log, "claiming wakes failed", exc)
                    await asyncio.sleep(LISTEN_RETRY_SECONDS)
        finally:
            listener.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await listener

    async def _listen(self) -> None:
        """Hold a connection that LISTENs on the wake channel; re-establish it when it breaks."""
        if self.engine is None:
            return
        await hold_listener(
            self.engine,
            CHANNEL,
            self.nudge,
            self._listening,
            log,
            retry_seconds=LISTEN_RETRY_SECONDS,
        )

    def _listening(self, listening: bool) -> None:
        if listening:
            self.listening.set()
            self.nudge()  # anything committed before LISTEN took effect
        else:
            self.listening.clear()

    async def claim_wakes(self) -> int:
        """Start what waits for a runner connected here: queued turns of runs that go on after
        a loss, then runs for queued wakes; how many turns started."""
        # Not ``pick_link``: a pick moves the rotation, and one per pass would send every
        # run claimed alone in its pass to the same runner.
        if not self.runners_here():
            return 0  # no runner here: a replica with one (or a runner still to come) claims
        return await self._claim_resumptions() + await self._claim_new_runs()

    async def _claim_resumptions(self) -> int:
        started: list[tuple[RunnerLink, int, StartTurn, int]] = []
        async with self.sessions.begin() as session:
            for run in (await session.execute(resumable(CLAIM_BATCH))).scalars():
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

    async def _claim_new_runs(self) -> int:
        started: list[tuple[RunnerLink, int, StartTurn]] = []
        claims: dict[uuid.UUID, tuple[int, uuid.UUID, str]] = {}  # when, the wake (a span's)
        async with self.sessions.begin() as session:
            here = self.runners_here()
            for wake, agent in await claimable_wakes(session, CLAIM_BATCH, runners=here):
                if not any(kind.name == agent.provider for kind in self.plugins.providers()):
                    await self._refuse(session, wake, agent)
                    continue
                place = await placement_of(session, wake.issue_id)
                link = self.pick_link(
                    agent.provider, runner_id=place.runner_id, workspaces=place.workspace
                )
                if link is None or place.wait:
                    continue  # another replica's runner, or a runner still to come, may take it
                claimed = tracing.now()
                try:
                    with log_context.about(issue_id=wake.issue_id, company_id=wake.company_id):
                        async with session.begin_nested():
                            seq, start = await self._create_run(session, wake, agent, link)
                except (IntegrityError, WorkspaceElsewhere):
                    continue  # another replica started a run for this issue first
                except BudgetRefused as refused:
                    await wait_for_budget(session, wake, refused.refusal)
                    continue
                started.append((link, seq, start))
                claims[start.run_id] = (claimed, wake.id, wake.source)
        for link, seq, start in started:
            claimed, wake_id, source = claims[start.run_id]
            tracing.record("paperclip.wake", start.run_id, claimed, wake_id=wake_id, source=source)
            self.ownership.own(start.run_id, 1)
            with log_context.about(run_id=start.run_id):
                log.info("run %s started on runner %s", start.run_id, link.runner_id)
            # Committed: send it now rather than when the link next reads its outbox.
            await link.deliver(seq, msgspec.structs.replace(start, seq=seq))
        return len(started)

    async def _refuse(self, session: AsyncSession, wake: WakeRequest, agent: Agent) -> None:
        """The core has no plugin for this provider: fail the run at once and say which."""
        run = Run(
            id=uuid.uuid4(),
            company_id=wake.company_id,
            agent_id=agent.id,
            issue_id=wake.issue_id,
            status=RunStatus.FAILED,
            phase="finished",
            provider=agent.provider,
            wake_request_id=wake.id,
            error_code="provider_not_installed",
            status_reason="provider_not_installed",
            error_message=f"no installed plugin provides the provider {agent.provider!r}; "
            f"install its distribution (e.g. paperclip-{agent.provider}) and restart",
            finished_at=datetime.now(UTC),
        )
        session.add(run)
        await session.flush()
        mark_claimed(wake, run.id)
        record_activity(
            session,
            SYSTEM,
            "run.failed",
            entity_type="run",
            entity_id=run.id,
            company_id=run.company_id,
            details={"error_code": "provider_not_installed"},
        )

    async def _create_run(
        self, session: AsyncSession, wake: WakeRequest, agent: Agent, link: RunnerLink
    ) -> tuple[int, StartTurn]:
        """The run of a claimed wake, its token and its ``start_turn`` (queued: its seq)."""
        issue = (
            await session.get(Issue, wake.issue_id, with_for_update=ISSUE_LOCK)
            if wake.issue_id
            else None
        )
        workspace = None
        if issue is not None:
            # First, so the prompt shows the status the agent works in.
            start_work(issue)
            workspace = await open_workspace(
                session, issue, runner_id=link.runner_id, workspace_dir=link.workspace_dir
            )
        run_id = uuid.uuid4()
        prepared = await assemble_for_run(
            session,
            agent=agent,
            issue=issue,
            wake=wake,
            run_id=str(run_id),
            hooks=self.plugins,
            workspace=workspace.view if workspace is not None else None,
            ownership=self.prompt_ownership,
        )
        assembled = prepared.assembled
        now = datetime.now(UTC)
        log_context.remember(run_id, issue_id=wake.issue_id, company_id=wake.company_id)
        run = Run(
            id=run_id,
            company_id=wake.company_id,
            agent_id=agent.id,
            issue_id=wake.issue_id,
            status=RunStatus.RUNNING,
            phase="turn",
            provider=agent.provider,
            execution_input=assembled.envelope,
            execution_input_schema=assembled.schema,
            controller_instance=self.instance,
            controller_epoch=1,
            lease_expires_at=now + timedelta(seconds=self.ttl),
            runner_id=link.runner_id,
            wake_request_id=wake.id,
            started_at=now,
        )
        session.add(run)
        await session.flush()  # the one-active-run-per-issue index decides here
        await admit_run(
            session,
            company_id=wake.company_id,
            agent_id=agent.id,
            issue=issue,
            run_id=run.id,
            now=self.clock(),
        )
        await open_turn(session, run, kind=TurnKind.INITIAL, runner_id=link.runner_id)
        await record_wake_snapshot(
            session,
            run,
            await snapshot_source(session, wake),
            prepared.current,
            assembled.execution_input.model.rendered_sources,
        )
        token = new_run_token(session, run)
        mark_claimed(wake, run.id)
        start = StartTurn(
            seq=0,
            run_id=run.id,
            provider=agent.provider,
            config=agent.provider_config,
            prompt=assembled.prompt,
            system=assembled.system,
            session_ref=None,
            token=token,
            issue_id=run.issue_id,
            workspace=workspace.spec if workspace is not None else None,
            agent_name=agent.name,
        )
        seq = await outbox.enqueue_one(session, link.runner_id, start)
        record_activity(
            session,
            SYSTEM,
            "run.started",
            entity_type="run",
            entity_id=run.id,
            company_id=run.company_id,
            details={"wake_request_id": str(wake.id)},
        )
        return seq, start
