"""A claim pass: queued wakes become runs, in one transaction of four round trips.

``BEGIN``; the claim (``claims``: the wakes locked, with everything their
runs stand on); then, in Python, each run's worktree, prompt, wake snapshot,
token and ``start_turn``, and its budgets' admission (one more statement, only
when a budget covers one of them); the runs written (``new_runs``: one
statement); ``COMMIT``. Each ``start_turn`` is sent once it committed.

The pass's transaction is asyncpg's own: no session, no ORM. A wake its
provider's plugin is missing for ends in a failed run that says which, and a
wake its budgets refuse waits (its task held): both rare, both through the
ORM in a transaction after the pass's, each wake locked again first.

A run's way: from ``scheduler.py``; next, the ``start_turn`` committed in the
runner's outbox (``engine/logs/outbox.py``) is sent by its link
(``engine/links/link.py``).
"""

from __future__ import annotations

import dataclasses
import logging
import uuid
from collections.abc import Callable, Collection, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

import msgspec
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from paperclip import log_context, tracing
from paperclip.common.activity import record_activity
from paperclip.common.actor import SYSTEM
from paperclip.db.driver import engine_of, plain_connection
from paperclip.domain.costs.budget_ledger import Refusal
from paperclip.domain.issues.issues import working_status
from paperclip.domain.runs.run_tokens import mint_run_token
from paperclip.domain.runs.wakes import mark_claimed
from paperclip.engine.context.prompt import assemble_run_input, chain_of_command
from paperclip.engine.context.snapshot import snapshot_source, wake_snapshot
from paperclip.engine.costs.admission import Wanted, admit_runs, wait_for_budget
from paperclip.engine.links.link import RunnerLink
from paperclip.engine.ownership.owned_runs import RunOwnership
from paperclip.engine.scheduling.claims import Claim, ClaimedAgent, claim
from paperclip.engine.scheduling.new_runs import NewRun, create_runs
from paperclip.engine.workspaces.placement import (
    SCRATCH,
    WorkspaceElsewhere,
    open_workspace,
    placement_from,
)
from paperclip.models import Run, RunStatus, WakeRequest, WakeStatus
from paperclip.plugin_host import PluginHost
from paperclip.wire.messages import StartTurn

log = logging.getLogger(__name__)

CLAIM_BATCH = 20
"""At most this many wakes a pass (a full pass is followed by another)."""


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


@dataclasses.dataclass(slots=True)
class _Planned:
    run: NewRun
    link: RunnerLink
    claimed: Claim
    when: int
    """When it was claimed (a span's start)."""


class WakeClaims:
    """Claim passes of one replica: its runners' queued wakes made runs."""

    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        ownership: RunOwnership,
        plugins: PluginHost,
        pick_link: LinkPicker,
        *,
        instance: str,
        lease_seconds: float,
        clock: Callable[[], datetime],
        prompt_ownership: bool,
        plans_once: AsyncEngine | None = None,
    ) -> None:
        self.sessions = sessions
        self.engine = plans_once if plans_once is not None else engine_of(sessions)
        """The pass's connections: where each statement is planned once, when there is such a
        pool (``create_engine(generic_plans=True)``); a claim's statements compare statuses
        with literals, so one plan serves them, where a plan made anew for each pass cost
        several times what executing them does."""
        self.ownership = ownership
        self.plugins = plugins
        self.pick_link = pick_link
        self.instance = instance
        self.ttl = lease_seconds
        self.clock = clock
        """Now, for budget months (injectable: tests move it)."""
        self.prompt_ownership = prompt_ownership
        """New runs' prompts carry ownership metadata (v5); off is the rollback (v4)."""
        self.full = False
        """The last pass claimed a full batch: more may wait, another pass follows at once."""

    async def claim(self, here: Collection[uuid.UUID]) -> int:
        """One pass for the runners ``here``: how many runs it started."""
        planned: list[_Planned] = []
        refused: list[Claim] = []
        async with plain_connection(self.engine) as driver, driver.transaction():
            claims = await claim(driver, CLAIM_BATCH, here)
            self.full = len(claims) >= CLAIM_BATCH
            taken: set[uuid.UUID] = set()
            for claimed in claims:
                wake, agent = claimed.wake, claimed.agent
                if not any(kind.name == agent.provider for kind in self.plugins.providers()):
                    refused.append(claimed)
                    continue
                if wake.issue_id is not None and wake.issue_id in taken:
                    continue  # another wake of the issue starts its run in this pass
                place = _placement(claimed)
                link = self.pick_link(
                    agent.provider, runner_id=place.runner_id, workspaces=place.workspace
                )
                if link is None or place.wait:
                    continue  # another replica's runner, or a runner still to come, may take it
                when = tracing.now()
                try:
                    with log_context.about(issue_id=wake.issue_id, company_id=wake.company_id):
                        run = self._new_run(claimed, link)
                except WorkspaceElsewhere:
                    continue  # its worktree lives on another runner: its replica starts it
                if wake.issue_id is not None:
                    taken.add(wake.issue_id)
                planned.append(_Planned(run, link, claimed, when))
            waiting = await self._admit(driver, planned)
            planned = [p for p in planned if p.run.id not in waiting]
            seqs = await create_runs(driver, [p.run for p in planned], instance=self.instance)
        started = 0
        for p in planned:
            seq = seqs.get(p.run.id)
            if seq is None:
                continue  # another replica started a run for this issue first
            started += 1
            wake = p.claimed.wake
            tracing.record("paperclip.wake", p.run.id, p.when, wake_id=wake.id, source=wake.source)
            self.ownership.own(p.run.id, 1)
            with log_context.about(run_id=p.run.id):
                log.info("run %s started on runner %s", p.run.id, p.link.runner_id)
            # Committed: send it now rather than when the link next reads its outbox.
            await p.link.deliver(seq, msgspec.structs.replace(p.run.start, seq=seq))
        if refused or waiting:
            await self._settle_unstarted(refused, list(waiting.values()))
        return started

    def _new_run(self, claimed: Claim, link: RunnerLink) -> NewRun:
        """The run of a claimed wake on ``link``'s runner: its worktree, prompt, wake
        snapshot, token and ``start_turn`` (raises WorkspaceElsewhere)."""
        wake, agent, issue = claimed.wake, claimed.agent, claimed.issue
        workspace = row = None
        status = None
        if issue is not None:
            workspace, row = open_workspace(
                issue,
                claimed.workspace,
                claimed.project,
                row_project=claimed.workspace_project,
                runner_id=link.runner_id,
                workspace_dir=link.workspace_dir,
                parent=claimed.parent.workspace if claimed.parent is not None else None,
            )
            # The prompt shows the status the agent works in.
            status = working_status(issue.status)
        shown = dataclasses.replace(issue, status=status) if issue is not None else None
        run_id = uuid.uuid4()
        prepared = assemble_run_input(
            agent=agent,
            issue=shown,
            parent=claimed.parent,
            comments=claimed.comments,
            since=claimed.since,
            wake=wake,
            agent_names=claimed.agent_names,
            run_id=str(run_id),
            hooks=self.plugins,
            workspace=workspace.view if workspace is not None else None,
            queue=claimed.queue,
            ownership=self.prompt_ownership,
            chain=chain_of_command(claimed.manager, claimed.reports, claimed.report_count),
        )
        assembled = prepared.assembled
        log_context.remember(run_id, issue_id=wake.issue_id, company_id=wake.company_id)
        token, token_hash = mint_run_token()
        now = datetime.now(UTC)
        return NewRun(
            id=run_id,
            company_id=wake.company_id,
            agent_id=agent.id,
            issue_id=wake.issue_id,
            wake_id=wake.id,
            runner_id=link.runner_id,
            provider=agent.provider,
            execution_input=assembled.envelope,
            execution_input_schema=assembled.schema,
            started_at=now,
            lease_expires_at=now + timedelta(seconds=self.ttl),
            token_hash=token_hash,
            start=StartTurn(
                seq=0,
                run_id=run_id,
                provider=agent.provider,
                config=agent.provider_config,
                prompt=assembled.prompt,
                system=assembled.system,
                session_ref=None,
                token=token,
                issue_id=wake.issue_id,
                workspace=workspace.spec if workspace is not None else None,
                agent_name=agent.name,
            ),
            issue_status=status if issue is not None and status != issue.status else None,
            snapshot=wake_snapshot(
                snapshot_source(wake.source, chat=claimed.chat),
                prepared.current,
                assembled.execution_input.model.rendered_sources,
            )
            if issue is not None
            else None,
            workspace=row,
        )

    async def _admit(
        self, driver: Any, planned: Sequence[_Planned]
    ) -> dict[uuid.UUID, tuple[Claim, Refusal]]:
        """The planned runs their budgets refuse, with why; the others get their
        reservations (none without a budget: no statement)."""
        wanted = [
            Wanted(p.run.id, p.claimed.budgets, p.claimed.time_zone)
            for p in planned
            if p.claimed.budgets
        ]
        if not wanted:
            return {}
        decided = await admit_runs(driver, wanted, self.clock())
        waiting: dict[uuid.UUID, tuple[Claim, Refusal]] = {}
        for p in planned:
            outcome = decided.get(p.run.id)
            if isinstance(outcome, Refusal):
                waiting[p.run.id] = (p.claimed, outcome)
            elif outcome is not None:
                p.run.reservations = outcome
        return waiting

    async def _settle_unstarted(
        self, refused: Sequence[Claim], waiting: Sequence[tuple[Claim, Refusal]]
    ) -> None:
        """After the pass: a wake of a provider no plugin provides ends in a failed run; a
        wake its budgets refused waits (its task held). Each locked again, and left alone
        when another pass took it meanwhile (the lock and its status decide, as a claim's)."""
        async with self.sessions.begin() as session:
            for claimed in refused:
                wake = await _queued(session, claimed.wake.id)
                if wake is not None:
                    await _refuse(session, wake, claimed.agent)
            for claimed, refusal in waiting:
                wake = await _queued(session, claimed.wake.id)
                if wake is not None:
                    await wait_for_budget(session, wake, refusal)


async def _queued(session: AsyncSession, wake_id: uuid.UUID) -> WakeRequest | None:
    """The wake, locked, if it is still queued and no other transaction holds it."""
    return (
        await session.execute(
            select(WakeRequest)
            .where(WakeRequest.id == wake_id, WakeRequest.status == WakeStatus.QUEUED)
            .with_for_update(skip_locked=True)
        )
    ).scalar_one_or_none()


def _placement(claimed: Claim) -> Any:
    """Where the claimed wake's run may start (its issue's worktree, as the claim locked it)."""
    if claimed.issue is None:
        return SCRATCH
    ws = claimed.workspace
    return placement_from(
        claimed.issue.project_id,
        ws.status if ws is not None else None,
        ws.runner_id if ws is not None else None,
    )


async def _refuse(session: AsyncSession, wake: WakeRequest, agent: ClaimedAgent) -> None:
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
