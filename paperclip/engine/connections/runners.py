"""Runner connections on this replica: hello, resume, adoption of their runs, and the link's life.

The replica that holds a runner's connection controls (by lease, under the
epoch fence) every run that runner hosts. A runner that reconnects, here or to
another replica, resumes where its previous connection stopped: both sides
replay what the other has not acknowledged.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Callable
from datetime import UTC, datetime

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from paperclip.db.availability import log_failure
from paperclip.engine.calls.pipeline import CallPipeline
from paperclip.engine.connections.inbox import RunnerInbox
from paperclip.engine.links.link import RunnerLink
from paperclip.engine.links.runner_offers import offers_of
from paperclip.engine.links.transport import Transport, TransportClosed
from paperclip.engine.logs import outbox
from paperclip.engine.ownership import leases
from paperclip.engine.ownership.fence import StaleEpochError, lock_run
from paperclip.engine.ownership.owned_runs import RunOwnership
from paperclip.engine.recovery.call_recovery import CallRecovery
from paperclip.engine.turns.lifecycle import RUNNER_RESTARTED, end_turn
from paperclip.models import Run, TurnStatus
from paperclip.models import Runner as RunnerRow
from paperclip.wire.messages import (
    CLOSE_PROTOCOL_ERROR,
    CLOSE_REPLACED,
    FEATURE_PROVIDER_REPORT,
    FEATURE_WORKSPACES,
    PROTOCOL,
    Hello,
    ProtocolError,
    Welcome,
    decode_from_runner,
)

log = logging.getLogger(__name__)

HELLO_TIMEOUT = 10.0
CLOSE_TRY_AGAIN = 1013
"""WebSocket close code "try again later" (the database is away, say)."""
STOPPING = 1012
"""WebSocket close code "service restart": the runner reconnects to another replica."""


class RunnerConnections:
    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        ownership: RunOwnership,
        calls: CallPipeline,
        recovery: CallRecovery,
        inbox: RunnerInbox,
        *,
        instance: str,
        lease_seconds: float,
        nudge: Callable[[], None],
        on_lost: Callable[[], None] = lambda: None,
    ) -> None:
        self.sessions = sessions
        self.ownership = ownership
        self.calls = calls
        self.recovery = recovery
        self.inbox = inbox
        self.instance = instance
        self.ttl = lease_seconds
        self.nudge = nudge
        self.on_lost = on_lost
        self.links: dict[uuid.UUID, RunnerLink] = {}
        self._serving: set[asyncio.Task[object]] = set()
        """The tasks serving a connection: a stop waits for their cleanup (its transactions)."""
        self._turn = 0
        self.stopping = asyncio.Event()
        """Set when this replica begins to stop: a connection still adopting runs gives up."""

    def runner_ids(self) -> list[uuid.UUID]:
        """The runners connected to this replica now."""
        return list(self.links)

    def pick_link(
        self,
        provider: str | None,
        *,
        runner_id: uuid.UUID | None = None,
        workspaces: bool = False,
    ) -> RunnerLink | None:
        """A connected runner that offers ``provider`` (None: any), or None; only
        ``runner_id`` when given (the host holding a worktree), only a runner that speaks
        workspaces when the run works in one.

        Each in turn: runs started together spread over the runners instead
        of all going to the first one connected.
        """
        offering = [
            link
            for link in self.links.values()
            if (provider is None or provider in link.providers)
            and (runner_id is None or link.runner_id == runner_id)
            and (not workspaces or FEATURE_WORKSPACES in link.features)
            and not link.closed.is_set()
        ]
        if not offering:
            return None
        self._turn += 1
        return offering[self._turn % len(offering)]

    async def serve(self, runner: RunnerRow, transport: Transport) -> None:
        """The whole life of one authenticated runner connection, until it drops."""
        task = asyncio.current_task()
        assert task is not None  # a coroutine runs in a task
        self._serving.add(task)
        try:
            await self._serve(runner, transport)
        finally:
            self._serving.discard(task)

    async def _serve(self, runner: RunnerRow, transport: Transport) -> None:
        try:
            hello = decode_from_runner(await asyncio.wait_for(transport.receive(), HELLO_TIMEOUT))
            if not isinstance(hello, Hello) or hello.protocol != PROTOCOL:
                raise ProtocolError(f"expected a {PROTOCOL} hello")
        except (ProtocolError, TimeoutError) as exc:
            await transport.close(CLOSE_PROTOCOL_ERROR, str(exc)[:120])
            return
        except TransportClosed:
            return

        try:
            link = await self._register(runner.id, transport, hello)
        except Exception as exc:
            log_failure(log, "runner %s could not be registered", exc, runner.name)
            await transport.close(CLOSE_TRY_AGAIN, "the control plane cannot serve it now")
            return
        try:
            await link.send(
                Welcome(
                    replica=self.instance,
                    acked_seq=link.last_in,
                    features=[FEATURE_WORKSPACES, FEATURE_PROVIDER_REPORT],
                )
            )
            await self._adopt_runs_of(link, hello)
            if self.stopping.is_set():
                # Its runs are adopted (and recovered) by the replica the runner dials next.
                await link.close(STOPPING, "control plane stopping")
                return
            link.start()
            link.run_alongside(self.calls.dispatch_loop(link), f"dispatch-{runner.name}")
            link.kick()
            self.nudge()
            await self.inbox.receive_loop(link)
        except TransportClosed:
            pass
        except StaleEpochError as exc:
            log.warning("runner %s: %s; closing this link", runner.name, exc)
            await link.close(CLOSE_REPLACED, "run adopted elsewhere")
        except Exception as exc:
            # The runner reconnects (with backoff) and both sides replay what is unacknowledged.
            log_failure(log, "the connection of runner %s failed", exc, runner.name)
            await link.close(CLOSE_TRY_AGAIN, "the control plane cannot serve it now")
        finally:
            await self._unregister(link)

    async def close_all(self, code: int, reason: str, *, wait: float = 5.0) -> None:
        """Close every link, then wait (up to ``wait`` s) for their cleanup to end: a
        connection's last transactions (letting its runs go) must not outlive the engine."""
        for link in list(self.links.values()):
            await link.close(code, reason)
        serving = self._serving - {asyncio.current_task()}
        if serving:
            await asyncio.wait(serving, timeout=wait)

    async def _register(
        self, runner_id: uuid.UUID, transport: Transport, hello: Hello
    ) -> RunnerLink:
        previous = self.links.get(runner_id)
        if previous is not None:
            # Closed first: it saves how far it processed, which this link resumes from.
            await previous.close(CLOSE_REPLACED, "a newer connection of this runner")
        async with self.sessions.begin() as session:
            row = await session.get(RunnerRow, runner_id, with_for_update=True)
            assert row is not None
            same_process = row.instance == hello.runner_instance
            if not same_process:
                row.in_seq = 0  # a new runner process starts its numbering again
            # What it hosts, for a check of an agent answered by any replica.
            row.offers = offers_of(hello, row.offers, same_process)
            row.instance, row.replica = hello.runner_instance, self.instance
            row.last_seen_at = datetime.now(UTC)
            if FEATURE_WORKSPACES in hello.features:
                # What its host allows: the door refuses a project no runner could use.
                row.workspace_roots = list(hello.workspace_roots)
                row.workspace_remotes = list(hello.workspace_remotes)
            await outbox.acknowledge(session, runner_id, hello.received_seq)
            last_in = row.in_seq
        link = RunnerLink(
            runner_id,
            hello.runner_instance,
            transport,
            set(hello.providers),
            self.sessions,
            last_in=last_in,
            last_sent=hello.received_seq,
            features=frozenset(hello.features),
            workspace_dir=hello.workspace_dir,
        )
        self.links[runner_id] = link
        log.info(
            "runner %s connected (instance %s, providers %s)",
            runner_id,
            hello.runner_instance,
            sorted(link.providers),
        )
        return link

    async def _unregister(self, link: RunnerLink) -> None:
        # Still registered while it closes, so a reconnect of the runner waits
        # for its position to be saved (see _register).
        await link.close()
        if self.links.get(link.runner_id) is link:
            del self.links[link.runner_id]
        mine = await self._runs_of_when_reachable(link.runner_id)
        if mine is None or link.runner_id in self.links:
            # A newer connection of this runner took over here: its runs stay
            # controlled (and leased) by this replica, through that connection.
            return
        for run_id in mine:
            self.ownership.release(run_id)
        with contextlib.suppress(Exception):
            async with self.sessions.begin() as session:
                await leases.release(session, mine, instance=self.instance)
                if link.runner_id in self.links:
                    return  # a newer connection registered meanwhile
                await session.execute(
                    update(RunnerRow)
                    .where(
                        RunnerRow.id == link.runner_id,
                        RunnerRow.instance == link.instance,
                        RunnerRow.replica == self.instance,
                    )
                    .values(replica=None, last_seen_at=datetime.now(UTC))
                )

    async def _runs_of_when_reachable(self, runner_id: uuid.UUID) -> list[uuid.UUID] | None:
        """The runner's runs, read once the database answers (it may be away while the link
        drops); None when a newer connection of the runner registered here meanwhile.

        Its runs must be let go even then: kept, this replica would renew their leases
        when the database is back, and no other replica could adopt them. A stopping
        replica stops asking (None): it renews nothing more, its leases lapse.
        """
        while True:
            try:
                return await self._runs_of(runner_id)
            except Exception as exc:
                log_failure(log, "listing the runs of a gone runner %s failed", exc, runner_id)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stopping.wait(), min(1.0, self.ttl / 2))
            if runner_id in self.links or self.stopping.is_set():
                return None

    async def _runs_of(self, runner_id: uuid.UUID) -> list[uuid.UUID]:
        """The runner's runs with a turn on it (not those waiting for a runner to go on)."""
        async with self.sessions() as session:
            return list(
                (
                    await session.execute(
                        select(Run.id).where(
                            Run.runner_id == runner_id,
                            Run.status.in_(leases.ACTIVE),
                            Run.phase == "turn",
                        )
                    )
                ).scalars()
            )

    async def _adopt_runs_of(self, link: RunnerLink, hello: Hello) -> None:
        """Become the controller of every active run of this runner, then settle their journals.

        A run still leased by a dead replica is adopted once its lease expires. A
        run the runner no longer hosts (a new process of it) lost its turn: the
        run is not failed, the reconciler resumes it.
        """
        hosted = {run.run_id: run for run in hello.runs}
        for run_id in await self._runs_of(link.runner_id):
            if self.stopping.is_set():
                return
            if not await self._adopt(link, run_id):
                continue
            if run_id not in hosted and not await self._start_pending(link, run_id):
                await self._lose(run_id, RUNNER_RESTARTED)
                continue
            await self.recovery.recover_pending(run_id, runner_id=link.runner_id, link=link)
            waiting = hosted[run_id].pending_calls if run_id in hosted else []
            await self.recovery.answer_again(link, run_id, waiting)

    async def _adopt(self, link: RunnerLink, run_id: uuid.UUID) -> bool:
        """Take the run's lease, waiting (a few leases at most) for another replica's to lapse.

        The wait ends early when the link closes or this replica begins to stop: a
        stopping server waits for its open connections, and this one would hold it
        for as long as the other replica's lease lasts.
        """
        deadline = asyncio.get_running_loop().time() + self.ttl * 3 + 10
        waiting = False
        while run_id not in self.ownership:
            async with self.sessions.begin() as session:
                epoch = await leases.adopt(session, run_id, instance=self.instance, ttl=self.ttl)
            if epoch is not None:
                self.ownership.own(run_id, epoch)
                log.info("adopted run %s at epoch %s", run_id, epoch)
                return True
            if self.stopping.is_set():
                log.info("stopping: run %s is left to the next replica", run_id)
                return False
            if asyncio.get_running_loop().time() > deadline or link.closed.is_set():
                log.warning("could not adopt run %s in time", run_id)
                return False
            if not waiting:  # once: why this runner's runs do not go on yet
                log.info("run %s: another replica holds its lease; waiting for it", run_id)
                waiting = True
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stopping.wait(), min(0.5, self.ttl / 4))
        return True

    async def _start_pending(self, link: RunnerLink, run_id: uuid.UUID) -> bool:
        async with self.sessions() as session:
            return await outbox.has_start_pending(session, link.runner_id, run_id)

    async def _lose(self, run_id: uuid.UUID, reason: str) -> None:
        """The run's turn went with its runner process: close it as lost, hand the run over."""
        async with self.sessions.begin() as session:
            run = await lock_run(
                session, run_id, instance=self.instance, epoch=self.ownership.epoch(run_id)
            )
            if run.phase == "turn":
                await end_turn(session, run, run.turn, TurnStatus.LOST, error_code=reason)
            # else: settled since the runner's runs were listed; its queued turn waits for any runner.
            run.lease_expires_at = datetime.now(UTC)
        self.ownership.release(run_id)
        log.info("run %s lost its turn (%s); it goes on after recovery", run_id, reason)
        self.on_lost()
