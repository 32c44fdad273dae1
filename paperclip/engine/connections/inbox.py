"""A runner's messages, in order, a batch at a time: events, tool calls, turn endings, steers,
what it reports of worktrees.

A batch is whatever arrived while the previous one was processed. Its
consecutive tool calls are admitted together (one statement), its consecutive
events stored together (one transaction), and one cumulative ack answers the
batch once its effects are durable.

A run's way: from the runner (``paperclip/runner/runtime.py``); tool calls
next go to ``engine/calls/pipeline.py``, a turn's end to
``engine/endings/turn_end.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Sequence
from datetime import timedelta

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from paperclip import log_context, metrics, tracing
from paperclip.db.availability import log_failure
from paperclip.engine.calls.pipeline import CallPipeline
from paperclip.engine.costs.usage import UsageRecorder
from paperclip.engine.endings.turn_end import RunEndings
from paperclip.engine.links.gate import ControlGate
from paperclip.engine.links.link import RunnerLink
from paperclip.engine.links.runner_offers import record_provider_report
from paperclip.engine.links.transport import TransportClosed
from paperclip.engine.logs.events import NewEvent, append_rows
from paperclip.engine.ownership.fence import lock_run
from paperclip.engine.ownership.fenced_tx import FencedTransaction
from paperclip.engine.ownership.owned_runs import RunOwnership
from paperclip.engine.turns.lifecycle import turn_started, wake_age
from paperclip.engine.workspaces.reports import (
    record_merged,
    record_released,
    record_report,
    record_status,
)
from paperclip.wire.messages import (
    Ack,
    DataMessage,
    Error,
    Event,
    Hello,
    ProtocolError,
    ProviderReport,
    RunnerStatus,
    SteerResult,
    ToolCall,
    TurnFinished,
    TurnStarted,
    Usage,
    WorkspaceMerged,
    WorkspaceReleased,
    WorkspaceReport,
    decode_from_runner,
)

log = logging.getLogger(__name__)

RECEIVE_BATCH = 256
INBOX_LIMIT = 1024
"""Runner frames read ahead of processing; past it the connection is not read (back-pressure)."""


class RunnerInbox:
    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        ownership: RunOwnership,
        gate: ControlGate,
        calls: CallPipeline,
        endings: RunEndings,
        *,
        release_retry: timedelta = timedelta(hours=1),
        usage: UsageRecorder | None = None,
    ) -> None:
        self.sessions = sessions
        self.ownership = ownership
        self.gate = gate
        self.calls = calls
        self.endings = endings
        self.usage = usage
        """Records the usage runners report (None: not recorded, as in some engine tests)."""
        self.release_retry = release_retry
        """When a worktree the runner could not remove is tried again."""

    async def receive_loop(self, link: RunnerLink) -> None:
        """Process the runner's messages until the connection ends (TransportClosed)."""
        frames: asyncio.Queue[str | bytes | Exception] = asyncio.Queue(INBOX_LIMIT)
        link.run_alongside(self._read(link, frames), f"receive-{link.runner_id}")
        while True:
            batch = [await frames.get()]
            while len(batch) < RECEIVE_BATCH and not frames.empty():
                batch.append(frames.get_nowait())
            messages: list[DataMessage] = []
            ended: Exception | None = None
            for item in batch:
                if isinstance(item, Exception):
                    ended = item
                    break
                try:
                    message = decode_from_runner(item)
                except ProtocolError as exc:
                    await link.send(Error(message=str(exc)[:500]))
                    continue
                if isinstance(message, Ack):
                    link.runner_acked(message.upto)
                elif isinstance(message, DataMessage):
                    messages.append(message)
                elif isinstance(message, RunnerStatus):
                    await self._runner_status(link, message)
                elif isinstance(message, ProviderReport):
                    await self._provider_report(link, message)
                elif isinstance(message, Hello):
                    await link.send(Error(message="hello is only the first message"))
            if messages:
                await self._process(link, messages)
                # Durable now: acknowledge it all (replays of durable messages too).
                # The resume point (runners.in_seq) is saved lazily; a stale one
                # only causes replays, which every handler deduplicates.
                await link.ack(link.last_in)
            if ended is not None:
                raise ended
            if link.closed.is_set():
                raise TransportClosed("the link closed")

    async def _read(self, link: RunnerLink, frames: asyncio.Queue[str | bytes | Exception]) -> None:
        """Move the runner's frames to the queue as they arrive, so they batch up meanwhile."""
        try:
            while True:
                await frames.put(await link.transport.receive())
        except asyncio.CancelledError:
            # The link was closed from this side. An idle processor waits on an
            # empty queue: wake it. A busy one sees link.closed after its batch.
            with contextlib.suppress(asyncio.QueueFull):
                frames.put_nowait(TransportClosed("the link closed"))
            raise
        except Exception as exc:  # the connection closed (or broke): the processor ends the link
            await frames.put(exc if isinstance(exc, TransportClosed) else TransportClosed(str(exc)))

    async def _process(self, link: RunnerLink, messages: Sequence[DataMessage]) -> None:
        """Handle messages in seq order; consecutive tool calls, or events, share one step."""
        group: list[DataMessage] = []
        highest = link.last_in
        for message in messages:
            if message.seq <= highest:
                continue  # a replay of something already processed
            highest = message.seq
            if self._batchable(message):
                if group and type(group[0]) is not type(message):
                    await self._process_group(link, group)
                    group = []
                group.append(message)
                continue
            await self._process_group(link, group)
            group = []
            await self._handle(link, message)
            link.processed(message.seq)
        await self._process_group(link, group)

    def _batchable(self, message: DataMessage) -> bool:
        """Tool calls always (their admission decides each); events of runs controlled here."""
        if isinstance(message, ToolCall):
            return True
        return isinstance(message, Event) and message.run_id in self.ownership

    async def _process_group(self, link: RunnerLink, group: list[DataMessage]) -> None:
        if not group:
            return
        if isinstance(group[0], ToolCall):
            await self.calls.admit(link, [m for m in group if isinstance(m, ToolCall)])
        else:
            await self._append_events(link, [m for m in group if isinstance(m, Event)])

    async def _handle(self, link: RunnerLink, message: DataMessage) -> None:
        with log_context.about(run_id=getattr(message, "run_id", None)):
            await self._handle_one(link, message)

    async def _handle_one(self, link: RunnerLink, message: DataMessage) -> None:
        if isinstance(message, TurnFinished):
            await self.endings.turn_finished(link, message)
        elif isinstance(message, TurnStarted):
            await self._turn_started(link, message)
        elif isinstance(message, SteerResult):
            await self._steer_result(link, message)
        elif isinstance(message, WorkspaceReport):
            await self._workspace_report(link, message)
        elif isinstance(message, Usage):
            if self.usage is not None and await self.gate.controls(link, message.run_id):
                await self.usage.record(message, self.ownership.epoch(message.run_id))
            # else: the run ended; what its provider reports after that is not charged
        elif isinstance(message, WorkspaceReleased):
            async with self.sessions.begin() as session:
                await record_released(
                    session, link.runner_id, message, retry_after=self.release_retry
                )
        elif isinstance(message, WorkspaceMerged):
            async with self.sessions.begin() as session:
                await record_merged(session, link.runner_id, message)
        elif isinstance(message, Event):
            if await self.gate.controls(link, message.run_id):
                await self._append_events(link, [message])
            # else: the run has ended, its log is closed
        else:
            await link.send(Error(message=f"unexpected {type(message).__name__}", seq=message.seq))

    async def _append_events(self, link: RunnerLink, messages: Sequence[Event]) -> None:
        """Persist consecutive provider events, of any runs controlled here, in one transaction."""
        by_run: dict[uuid.UUID, list[NewEvent]] = {}
        for message in messages:
            by_run.setdefault(message.run_id, []).append(
                NewEvent(message.seq, message.event_type, message.payload, message.turn)
            )
        epochs = {run_id: self.ownership.epoch(run_id) for run_id in by_run}
        async with FencedTransaction.begin(
            self.sessions, epochs, instance=self.calls.instance
        ) as tx:
            if tx.refused:
                raise next(iter(tx.refused.values()))  # this link is stale
            await append_rows(
                tx.driver,
                [(run_id, link.instance, events) for run_id, events in by_run.items()],
            )
        for message in messages:
            link.processed(message.seq)

    async def _turn_started(self, link: RunnerLink, message: TurnStarted) -> None:
        """The runner started the turn; the session it reports is durable from now on."""
        if not await self.gate.controls(link, message.run_id):
            return
        async with self.sessions.begin() as session:
            run = await lock_run(
                session,
                message.run_id,
                instance=self.calls.instance,
                epoch=self.ownership.epoch(message.run_id),
            )
            first = await turn_started(session, run, message.turn, message.session_ref)
            waited = await wake_age(session, run) if first and message.turn == 1 else None
        if first:
            metrics.TURNS_STARTED.inc()
            tracing.turn_began(message.run_id, message.turn)
        if waited is not None:
            metrics.WAKE_TO_TURN_SECONDS.observe(waited)

    async def _workspace_report(self, link: RunnerLink, message: WorkspaceReport) -> None:
        if not await self.gate.controls(link, message.run_id):
            return  # the run ended: its worktree's later state comes with its next run
        async with self.sessions.begin() as session:
            run = await lock_run(
                session,
                message.run_id,
                instance=self.calls.instance,
                epoch=self.ownership.epoch(message.run_id),
            )
            await record_report(session, run, link.instance, message)

    async def _runner_status(self, link: RunnerLink, message: RunnerStatus) -> None:
        try:
            async with self.sessions.begin() as session:
                await record_status(session, link.runner_id, message)
        except Exception as exc:  # a figure for people: never worth the connection
            log_failure(log, "recording runner %s's disk use failed", exc, link.runner_id)

    async def _provider_report(self, link: RunnerLink, message: ProviderReport) -> None:
        try:
            async with self.sessions.begin() as session:
                await record_provider_report(session, link.runner_id, link.instance, message)
        except Exception as exc:  # what a check reports: never worth the connection
            log_failure(log, "recording runner %s's provider probes failed", exc, link.runner_id)

    async def _steer_result(self, link: RunnerLink, message: SteerResult) -> None:
        event = Event(
            seq=message.seq,
            run_id=message.run_id,
            event_type="steering_acknowledgement" if message.acknowledged else "steer_refused",
            payload={"message_id": message.message_id},
            turn=message.turn,
        )
        if await self.gate.controls(link, message.run_id):
            await self._append_events(link, [event])
