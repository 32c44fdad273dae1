"""The run engine of one control-plane replica.

It holds the WebSocket links of the runners connected here and is the
controller of their runs: the replica that holds a runner's link owns (by
lease, under an epoch fence) every run that runner hosts. It claims queued
wakes into runs, persists provider events, journals and executes tool calls,
and ends runs exactly once. Everything it knows is in PostgreSQL; a replica
that dies loses nothing but its leases, which another replica adopts.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from litestar import WebSocket
from litestar.exceptions import WebSocketDisconnect
from sqlalchemy import and_, exists, func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from paperclip.db.driver import driver_connection
from paperclip.engine import journal, leases, outbox
from paperclip.engine.events import NewEvent, append_events, append_many
from paperclip.engine.fence import StaleEpochError, lock_run, lock_runs
from paperclip.engine.finalize import decide, finish_run
from paperclip.engine.links import Dispatch, RunnerLink
from paperclip.engine.prompt import assemble_for_run
from paperclip.errors import NotFoundError
from paperclip.models import (
    Agent,
    AgentStatus,
    Issue,
    IssueStatus,
    Run,
    Runner,
    RunnerMessage,
    RunStatus,
    ToolCall,
    ToolCallStatus,
    WakeRequest,
    WakeStatus,
)
from paperclip.runner import protocol
from paperclip.services.activity import record_activity
from paperclip.services.actor import SYSTEM
from paperclip.services.api_keys import hash_key
from paperclip.services.run_tokens import new_run_token, token_run
from paperclip.services.runners import RunnerService
from paperclip.tools.executor import execute_many

log = logging.getLogger(__name__)

CLAIM_BATCH = 20
DISPATCH_BATCH = 32
RECEIVE_BATCH = 256
INBOX_LIMIT = 1024
"""Runner frames read ahead of processing; past it the socket is not read (back-pressure)."""
HELLO_TIMEOUT = 10.0

ProviderCheck = Callable[[str], bool]


def provider_check(host: Any) -> ProviderCheck:
    """Whether the control plane's plugins know a provider kind (asked at each claim)."""

    def known(name: str) -> bool:
        return any(kind.name == name for kind in host.providers())

    return known


class RunEngine:
    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        runners: RunnerService,
        *,
        instance: str,
        lease_seconds: float,
        provider_known: ProviderCheck = lambda name: True,
        prompt_hooks: Any = None,
        abandon_after: float = 600.0,
    ) -> None:
        self.sessions = sessions
        self.runners = runners
        self.instance = instance
        self.ttl = lease_seconds
        self.provider_known = provider_known
        # The prompt-rendering hooks (installed plugins first, built-ins as fallback).
        self.prompt_hooks = prompt_hooks
        # Seconds past a lease's expiry after which a run with no runner is failed.
        self.abandon_after = abandon_after
        self.links: dict[uuid.UUID, RunnerLink] = {}
        # Runs this replica controls, with the epoch it holds for each.
        self.owned: dict[uuid.UUID, int] = {}
        # The verified token hash of each run controlled here; dropped when the run
        # ends or leaves, so it is bounded by the runs in flight.
        self._run_tokens: dict[uuid.UUID, str] = {}
        self._nudge = asyncio.Event()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._loops: list[asyncio.Task[None]] = []

    # Lifecycle

    async def start(self) -> None:
        self._loops = [
            asyncio.create_task(self._schedule_loop(), name="wake-scheduler"),
            asyncio.create_task(self._renew_loop(), name="lease-renewer"),
        ]

    async def stop(self) -> None:
        for task in self._loops:
            task.cancel()
        for link in list(self.links.values()):
            await link.close(1012, "control plane stopping")
        for task in [*self._loops, *self._tasks]:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        # Orderly handover: another replica may adopt at once instead of after the lease.
        with contextlib.suppress(Exception):
            async with self.sessions.begin() as session:
                await leases.release(session, list(self.owned), instance=self.instance)
        self.owned.clear()

    def nudge(self) -> None:
        """Something may be claimable now (a wake, a finished run, a runner)."""
        self._nudge.set()

    def _spawn(self, coro: Awaitable[Any], name: str) -> None:
        task = asyncio.ensure_future(coro)
        task.set_name(name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # Runner connections

    async def serve_runner(self, socket: WebSocket[Any, Any, Any]) -> None:
        """The whole life of one runner connection: hello, adoption, then messages until it drops."""
        await socket.accept()
        header = socket.headers.get("authorization", "")
        scheme, _, secret = header.partition(" ")
        runner = (
            await self.runners.authenticate(secret.strip()) if scheme.lower() == "bearer" else None
        )
        if runner is None:
            await socket.close(code=protocol.CLOSE_UNAUTHORIZED, reason="runner credential refused")
            return
        try:
            hello = protocol.decode(await asyncio.wait_for(socket.receive_text(), HELLO_TIMEOUT))
            if hello["type"] != protocol.HELLO or hello.get("protocol") != protocol.PROTOCOL:
                raise protocol.ProtocolError(f"expected a {protocol.PROTOCOL} hello")
        except (protocol.ProtocolError, TimeoutError) as exc:
            await socket.close(code=protocol.CLOSE_PROTOCOL_ERROR, reason=str(exc)[:120])
            return
        except WebSocketDisconnect:
            return

        link = await self._register(runner, socket, hello)
        try:
            await link.send(
                {"type": protocol.WELCOME, "replica": self.instance, "acked_seq": link.last_in}
            )
            await self._adopt_runs_of(link, hello)
            link.start()
            link.run_alongside(self._dispatch_loop(link), f"dispatch-{runner.name}")
            link.kick()
            self.nudge()
            await self._receive_loop(link)
        except WebSocketDisconnect:
            pass
        except StaleEpochError as exc:
            log.warning("runner %s: %s; closing this link", runner.name, exc)
            await link.close(protocol.CLOSE_REPLACED, "run adopted elsewhere")
        finally:
            await self._unregister(link)

    async def _register(
        self, runner: Runner, socket: WebSocket[Any, Any, Any], hello: dict[str, Any]
    ) -> RunnerLink:
        instance = str(hello.get("runner_instance") or "")
        received = int(hello.get("received_seq") or 0)
        previous = self.links.get(runner.id)
        if previous is not None:
            # Closed first: it saves how far it processed, which this link resumes from.
            await previous.close(protocol.CLOSE_REPLACED, "a newer connection of this runner")
        async with self.sessions.begin() as session:
            row = await session.get(Runner, runner.id, with_for_update=True)
            assert row is not None
            if row.instance != instance:
                row.in_seq = 0  # a new runner process starts its numbering again
            row.instance, row.replica = instance, self.instance
            row.last_seen_at = datetime.now(UTC)
            await outbox.acknowledge(session, runner.id, received)
            last_in = row.in_seq
        link = RunnerLink(
            runner.id,
            instance,
            socket,
            set(hello.get("providers") or []),
            self.sessions,
            last_in=last_in,
            last_sent=received,
        )
        self.links[runner.id] = link
        log.info(
            "runner %s connected (instance %s, providers %s)",
            runner.name,
            instance,
            sorted(link.providers),
        )
        return link

    async def _unregister(self, link: RunnerLink) -> None:
        # Still registered while it closes, so a reconnect of the runner waits
        # for its position to be saved (see _register).
        await link.close()
        if self.links.get(link.runner_id) is link:
            del self.links[link.runner_id]
        mine = await self._runs_of(link.runner_id)
        if link.runner_id in self.links:
            # A newer connection of this runner took over here: its runs stay
            # controlled (and leased) by this replica, through that connection.
            return
        for run_id in mine:
            self.owned.pop(run_id, None)
            self._run_tokens.pop(run_id, None)
        with contextlib.suppress(Exception):
            async with self.sessions.begin() as session:
                await leases.release(session, mine, instance=self.instance)
                if link.runner_id in self.links:
                    return  # a newer connection registered meanwhile
                await session.execute(
                    update(Runner)
                    .where(
                        Runner.id == link.runner_id,
                        Runner.instance == link.instance,
                        Runner.replica == self.instance,
                    )
                    .values(replica=None, last_seen_at=datetime.now(UTC))
                )

    async def _runs_of(self, runner_id: uuid.UUID) -> list[uuid.UUID]:
        async with self.sessions() as session:
            return list(
                (
                    await session.execute(
                        select(Run.id).where(
                            Run.runner_id == runner_id, Run.status.in_(leases.ACTIVE)
                        )
                    )
                ).scalars()
            )

    async def _adopt_runs_of(self, link: RunnerLink, hello: dict[str, Any]) -> None:
        """Become the controller of every active run of this runner, then settle their journals.

        A run still leased by a dead replica is adopted once its lease expires.
        """
        hosted = {str(r.get("run_id")) for r in hello.get("runs") or []}
        for run_id in await self._runs_of(link.runner_id):
            if str(run_id) not in hosted and not await self._start_pending(link, run_id):
                await self._fail_lost_run(run_id)
                continue
            deadline = asyncio.get_running_loop().time() + self.ttl * 3 + 10
            while True:
                if run_id in self.owned:
                    break
                async with self.sessions.begin() as session:
                    epoch = await leases.adopt(
                        session, run_id, instance=self.instance, ttl=self.ttl
                    )
                if epoch is not None:
                    self.owned[run_id] = epoch
                    log.info("adopted run %s at epoch %s", run_id, epoch)
                    break
                if asyncio.get_running_loop().time() > deadline or link.closed.is_set():
                    log.warning("could not adopt run %s in time", run_id)
                    break
                await asyncio.sleep(min(0.5, self.ttl / 4))
            if run_id in self.owned:
                await self._settle_journal(link, run_id)

    async def _start_pending(self, link: RunnerLink, run_id: uuid.UUID) -> bool:
        """Is the run's start_turn still waiting in the outbox (the runner will get it)?"""
        async with self.sessions() as session:
            return bool(
                (
                    await session.execute(
                        select(
                            exists().where(
                                RunnerMessage.runner_id == link.runner_id,
                                RunnerMessage.run_id == run_id,
                                RunnerMessage.type == protocol.START_TURN,
                            )
                        )
                    )
                ).scalar()
            )

    async def _fail_lost_run(self, run_id: uuid.UUID) -> None:
        async with self.sessions.begin() as session:
            run = await session.get(Run, run_id, with_for_update=True)
            if run is not None:
                await finish_run(
                    session,
                    run,
                    RunStatus.FAILED,
                    error_code="runner_lost_run",
                    error_message="the runner that hosted this run no longer has it",
                )
        self.nudge()

    async def _settle_journal(self, link: RunnerLink, run_id: uuid.UUID) -> None:
        """After adoption: every journaled input without a result gets one (receipt-backed replay)."""
        async with self.sessions() as session:
            pending = list(
                (
                    await session.execute(
                        select(ToolCall.id).where(
                            ToolCall.run_id == run_id, ToolCall.status == ToolCallStatus.PENDING
                        )
                    )
                ).scalars()
            )
        if pending:
            await self._dispatch(link, [(run_id, call_db_id, None) for call_db_id in pending])

    # Messages from the runner

    async def _receive_loop(self, link: RunnerLink) -> None:
        """Process the runner's messages in order, a batch at a time.

        A batch is whatever arrived while the previous one was processed. Its
        consecutive tool calls are admitted together (one statement), its
        consecutive events stored together, and one cumulative ack answers it
        all once its effects are durable.
        """
        inbox: asyncio.Queue[str | Exception] = asyncio.Queue(INBOX_LIMIT)
        link.run_alongside(self._read_socket(link, inbox), f"receive-{link.runner_id}")
        while True:
            batch = [await inbox.get()]
            while len(batch) < RECEIVE_BATCH and not inbox.empty():
                batch.append(inbox.get_nowait())
            messages: list[dict[str, Any]] = []
            ended: Exception | None = None
            for item in batch:
                if isinstance(item, Exception):
                    ended = item
                    break
                try:
                    message = protocol.decode(item)
                except protocol.ProtocolError as exc:
                    await link.send({"type": protocol.ERROR, "message": str(exc)})
                    continue
                kind = message["type"]
                if kind == protocol.ACK:
                    link.runner_acked(int(message["upto"]))
                elif kind not in protocol.UNSEQUENCED:
                    messages.append(message)
            if messages:
                await self._process(link, messages)
                # Durable now: acknowledge it all (replays of durable messages too).
                # The resume point (runners.in_seq) is saved lazily; a stale one
                # only causes replays, which every handler deduplicates.
                await link.ack(link.last_in)
            if ended is not None:
                raise ended
            if link.closed.is_set():
                raise WebSocketDisconnect(detail="the link closed")

    async def _read_socket(self, link: RunnerLink, inbox: asyncio.Queue[str | Exception]) -> None:
        """Move the runner's frames to the inbox as they arrive, so they batch up meanwhile."""
        try:
            while True:
                await inbox.put(await link.socket.receive_text())
        except asyncio.CancelledError:
            # The link was closed from this side. An idle processor waits on an
            # empty inbox: wake it. A busy one sees link.closed after its batch.
            with contextlib.suppress(asyncio.QueueFull):
                inbox.put_nowait(WebSocketDisconnect(detail="the link closed"))
            raise
        except Exception as exc:  # the socket closed (or broke): the processor ends the link
            await inbox.put(exc)

    async def _process(self, link: RunnerLink, messages: list[dict[str, Any]]) -> None:
        """Handle messages in seq order; consecutive tool calls, or events, share one transaction."""
        group: list[dict[str, Any]] = []
        highest = link.last_in
        for message in messages:
            seq = message["seq"]
            if seq <= highest:
                continue  # a replay of something already processed
            highest = seq
            kind = message["type"]
            if self._batchable(message):
                if group and group[0]["type"] != kind:
                    await self._process_group(link, group)
                    group = []
                group.append(message)
                continue
            await self._process_group(link, group)
            group = []
            handler = self._handlers.get(kind)
            if handler is None:
                await link.send(
                    {"type": protocol.ERROR, "message": f"unknown type {kind!r}", "seq": seq}
                )
            else:
                await handler(self, link, message)
            link.processed(seq)
        await self._process_group(link, group)

    def _batchable(self, message: dict[str, Any]) -> bool:
        """A tool call or an event for a run controlled here (a call also needs its verified token).

        Anything else takes its handler, which decides (a run that ended, a stale link).
        """
        if message["type"] not in (protocol.TOOL_CALL, protocol.EVENT):
            return False
        try:
            run_id = uuid.UUID(message["run_id"])
        except (KeyError, TypeError, ValueError):
            return False
        if run_id not in self.owned:
            return False
        if message["type"] == protocol.EVENT:
            return True
        token = self._run_tokens.get(run_id)
        return token is not None and token == hash_key(str(message.get("token") or ""))

    async def _process_group(self, link: RunnerLink, group: list[dict[str, Any]]) -> None:
        if not group:
            return
        if group[0]["type"] == protocol.TOOL_CALL:
            await self._admit_calls(link, group)
        else:
            await self._append_events(link, group)

    async def _append_events(self, link: RunnerLink, messages: list[dict[str, Any]]) -> None:
        """Persist consecutive provider events, of any runs controlled here, in one transaction."""
        by_run: dict[uuid.UUID, list[NewEvent]] = {}
        for message in messages:
            by_run.setdefault(uuid.UUID(message["run_id"]), []).append(
                NewEvent(
                    message["seq"], str(message.get("event_type")), message.get("payload") or {}
                )
            )
        async with self.sessions.begin() as session:
            runs, refused = await lock_runs(
                session, {run_id: self._epoch(run_id) for run_id in by_run}, instance=self.instance
            )
            if refused:
                raise next(iter(refused.values()))  # this link is stale: as in _on_event
            await append_many(
                session,
                [(runs[run_id], link.instance, events) for run_id, events in by_run.items()],
            )
        for message in messages:
            link.processed(message["seq"])

    async def _controls(self, link: RunnerLink, run_id: uuid.UUID) -> bool:
        """Whether this replica controls the run a runner message is about.

        A message about a run that has ended (or never existed) is answered by
        telling the runner to close it, not by dropping the link: a runner that
        replays after a restart must not be disconnected in a loop. An active run
        controlled by another replica means this link is stale: StaleEpochError.
        """
        if run_id in self.owned:
            return True
        async with self.sessions.begin() as session:
            status = (
                await session.execute(select(Run.status).where(Run.id == run_id))
            ).scalar_one_or_none()
            if status is not None and not RunStatus(status).terminal:
                raise StaleEpochError(f"this replica does not control run {run_id}")
            if status is not None:
                await outbox.enqueue(session, link.runner_id, protocol.CLOSE, {}, run_id=run_id)
        link.kick()
        return False

    def _epoch(self, run_id: uuid.UUID) -> int:
        epoch = self.owned.get(run_id)
        if epoch is None:
            raise StaleEpochError(f"this replica does not control run {run_id}")
        return epoch

    async def _on_event(self, link: RunnerLink, message: dict[str, Any]) -> None:
        run_id = uuid.UUID(message["run_id"])
        if not await self._controls(link, run_id):
            return  # the run has ended: its log is closed
        try:
            async with self.sessions.begin() as session:
                run = await lock_run(
                    session, run_id, instance=self.instance, epoch=self._epoch(run_id)
                )
                await append_events(
                    session,
                    run,
                    link.instance,
                    [
                        NewEvent(
                            message["seq"],
                            str(message.get("event_type")),
                            message.get("payload") or {},
                        )
                    ],
                )
        except NotFoundError:
            log.warning("event for unknown run %s dropped", run_id)

    async def _admit_calls(self, link: RunnerLink, messages: list[dict[str, Any]]) -> None:
        """Journal calls of runs controlled here in one statement, then queue them for dispatch.

        A call the statement did not admit (its run was adopted elsewhere since)
        takes the one-call path, which refuses it or closes the link.
        """
        if not messages:
            return
        requests: dict[tuple[uuid.UUID, str], journal.Request] = {}
        for message in messages:
            run_id = uuid.UUID(message["run_id"])
            request = journal.Request(
                run_id,
                self._epoch(run_id),
                str(message["call_id"]),
                str(message.get("tool")),
                message.get("arguments") or {},
            )
            # The same call twice in one batch (a replay) is one input: the first stands.
            requests.setdefault((run_id, request.call_id), request)
        async with self.sessions() as session:
            admitted = await journal.admit_many(
                await driver_connection(session), list(requests.values()), instance=self.instance
            )
        for message in messages:
            key = (uuid.UUID(message["run_id"]), str(message["call_id"]))
            request = requests.pop(key, None)
            if request is None:
                link.processed(message["seq"])  # its first copy in this batch stands for it
                continue
            entry = admitted.get(key)
            if entry is None:
                await self._on_tool_call(link, message)
            else:
                call_db_id, fresh = entry
                call = (
                    journal.CallInput(call_db_id, key[0], key[1], request.tool, request.arguments)
                    if fresh
                    else None  # admitted before: dispatch reads its stored state
                )
                link.dispatches.put_nowait((key[0], call_db_id, call))
            link.processed(message["seq"])

    async def _on_tool_call(self, link: RunnerLink, message: dict[str, Any]) -> None:
        run_id = uuid.UUID(message["run_id"])
        call_id = str(message["call_id"])
        if not await self._controls(link, run_id):
            await self._refuse_call(link, run_id, call_id, "run_ended", "this run has ended")
            return
        async with self.sessions.begin() as session:
            token_hash = hash_key(str(message.get("token") or ""))
            if self._run_tokens.get(run_id) != token_hash:
                if await token_run(session, str(message.get("token") or "")) == run_id:
                    self._run_tokens[run_id] = token_hash
            if self._run_tokens.get(run_id) != token_hash:
                # Not this run's token: nothing is journaled for the run it names.
                refused = True
            else:
                refused = False
                run = await lock_run(
                    session, run_id, instance=self.instance, epoch=self._epoch(run_id)
                )
                call_db_id, _ = await journal.admit(
                    session,
                    run,
                    call_id=call_id,
                    tool=str(message.get("tool")),
                    arguments=message.get("arguments") or {},
                    instance=self.instance,
                    epoch=self.owned[run_id],
                )
        if refused:
            await self._refuse_call(
                link, run_id, call_id, "run_token_refused", "the token does not act as this run"
            )
            return
        # Journaled (and acknowledged next): the link's dispatcher executes it, so the
        # runner's other messages are not held up.
        link.dispatches.put_nowait((run_id, call_db_id, None))

    async def _refuse_call(
        self, link: RunnerLink, run_id: uuid.UUID, call_id: str, code: str, text: str
    ) -> None:
        """Answer a tool call without journaling it (it acts for no run this replica runs)."""
        payload = {
            # run_id in the payload, not the row: the run named may not exist.
            "run_id": str(run_id),
            "call_id": call_id,
            "is_error": True,
            "content": {"error": {"code": code, "message": text}},
        }
        async with self.sessions.begin() as session:
            await outbox.enqueue(session, link.runner_id, protocol.TOOL_RESULT, payload)
        link.kick()

    async def _dispatch_loop(self, link: RunnerLink) -> None:
        """Execute admitted calls in batches: whatever is queued shares one transaction."""
        while not link.closed.is_set():
            batch = [await link.dispatches.get()]
            while not link.dispatches.empty() and len(batch) < DISPATCH_BATCH:
                batch.append(link.dispatches.get_nowait())
            await self._dispatch(link, batch)

    async def _dispatch(self, link: RunnerLink, batch: list[Dispatch]) -> None:
        """Execute journaled calls and save each result with its reply, in fenced transactions.

        A batch that fails is retried call by call, each reading its stored
        state again, so one bad call cannot hold up the others.
        """
        try:
            replies = await self._execute_batch(link, batch)
        except Exception:
            if len(batch) > 1 or batch[0][2] is not None:
                for run_id, call_db_id, _ in batch:
                    await self._dispatch(link, [(run_id, call_db_id, None)])
            else:
                log.exception("tool call %s of run %s failed to dispatch", batch[0][1], batch[0][0])
            return
        for seq, message in replies:
            await link.deliver(seq, message)

    async def _execute_batch(
        self, link: RunnerLink, batch: list[Dispatch]
    ) -> list[tuple[int, dict[str, Any]]]:
        epochs = {run_id: self.owned[run_id] for run_id, _, _ in batch if run_id in self.owned}
        if not epochs:
            log.warning("tool calls of runs not controlled here were not dispatched")
            return []
        async with self.sessions.begin() as session:
            runs, refused = await lock_runs(session, epochs, instance=self.instance)
            for run_id in {run_id for run_id, _, _ in batch} - runs.keys():
                log.warning(
                    "tool calls of run %s not dispatched: %s",
                    run_id,
                    refused.get(run_id, "this replica does not control it"),
                )
            unread = [call_db_id for run_id, call_db_id, call in batch if call is None]
            stored: dict[int, ToolCall] = {}
            if unread:
                rows = await session.execute(select(ToolCall).where(ToolCall.id.in_(unread)))
                stored = {row.id: row for row in rows.scalars()}
            answers: dict[int, tuple[str, dict[str, Any], bool]] = {}
            work: list[tuple[Run, journal.CallInput]] = []
            for run_id, call_db_id, call in batch:
                if run_id not in runs or call_db_id in answers:
                    continue
                if call is None:
                    row = stored.get(call_db_id)
                    if row is None:
                        continue
                    if row.status != ToolCallStatus.PENDING:
                        assert row.result is not None
                        answers[call_db_id] = (row.call_id, row.result, row.is_error)
                        continue
                    call = journal.CallInput.of(row)
                answers[call_db_id] = (call.call_id, {}, False)  # filled in below, in batch order
                work.append((runs[run_id], call))
            outcomes = await execute_many(session, work)
            for (_, call), outcome in zip(work, outcomes, strict=True):
                answers[call.id] = (call.call_id, outcome.result, outcome.is_error)
            order = [(run_id, call_db_id) for run_id, call_db_id, _ in batch]
            replies = [
                (run_id, {"call_id": answer[0], "content": answer[1], "is_error": answer[2]})
                for run_id, call_db_id in dict.fromkeys(order)
                if (answer := answers.get(call_db_id)) is not None
            ]
            seqs = await journal.settle_many(
                await driver_connection(session),  # in the transaction begun above
                [
                    journal.Settlement(
                        call.id,
                        outcome.result,
                        outcome.is_error,
                        epochs[call.run_id],
                        outcome.receipt,
                    )
                    for (_, call), outcome in zip(work, outcomes, strict=True)
                ],
                replies,
                instance=self.instance,
                runner_id=link.runner_id,
            )
        return [
            (seq, {"type": protocol.TOOL_RESULT, "seq": seq, "run_id": str(run_id), **payload})
            for seq, (run_id, payload) in zip(seqs, replies, strict=True)
        ]

    async def _on_turn_finished(self, link: RunnerLink, message: dict[str, Any]) -> None:
        run_id = uuid.UUID(message["run_id"])
        if not await self._controls(link, run_id):
            return  # already ended (a replay): it ends once
        async with self.sessions.begin() as session:
            run = await lock_run(session, run_id, instance=self.instance, epoch=self._epoch(run_id))
            status, code, text = decide(run, message)
            if await finish_run(
                session,
                run,
                status,
                error_code=code,
                error_message=text,
                session_ref=message.get("session_ref"),
            ):
                await append_events(
                    session,
                    run,
                    link.instance,
                    [
                        NewEvent(
                            message["seq"],
                            "run.finished",
                            {"status": status.value, "error_code": code},
                        )
                    ],
                )
            await outbox.enqueue(session, link.runner_id, protocol.CLOSE, {}, run_id=run_id)
        self.owned.pop(run_id, None)
        self._run_tokens.pop(run_id, None)
        link.kick()
        self.nudge()

    async def _on_steer_result(self, link: RunnerLink, message: dict[str, Any]) -> None:
        await self._on_event(
            link,
            {
                **message,
                "event_type": "steering_acknowledgement"
                if message.get("acknowledged")
                else "steer_refused",
                "payload": {"message_id": message.get("message_id")},
            },
        )

    _handlers: dict[str, Callable[..., Awaitable[None]]] = {
        protocol.EVENT: _on_event,
        protocol.TOOL_CALL: _on_tool_call,
        protocol.TURN_FINISHED: _on_turn_finished,
        protocol.STEER_RESULT: _on_steer_result,
    }

    # Wakes to runs

    async def _schedule_loop(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._nudge.wait(), 1.0)
            self._nudge.clear()
            if not self.links:
                continue
            try:
                started = await self.claim_wakes()
                if started:
                    self.nudge()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("claiming wakes failed")

    async def claim_wakes(self) -> int:
        """Turn queued wakes into runs for the runners connected here; how many runs started."""
        started: list[tuple[uuid.UUID, uuid.UUID]] = []
        async with self.sessions.begin() as session:
            wakes = (
                (
                    await session.execute(
                        select(WakeRequest)
                        .join(Agent, Agent.id == WakeRequest.agent_id)
                        .where(
                            WakeRequest.status == WakeStatus.QUEUED,
                            Agent.status == AgentStatus.ACTIVE,
                        )
                        .where(
                            ~exists().where(
                                and_(
                                    Run.issue_id == WakeRequest.issue_id,
                                    Run.status.in_(leases.ACTIVE),
                                )
                            )
                        )
                        .order_by(WakeRequest.created_at)
                        .limit(CLAIM_BATCH)
                        .with_for_update(of=WakeRequest, skip_locked=True)
                    )
                )
                .scalars()
                .all()
            )
            for wake in wakes:
                agent = await session.get(Agent, wake.agent_id)
                assert agent is not None
                if not self.provider_known(agent.provider):
                    await self._refuse(session, wake, agent)
                    continue
                link = next(
                    (
                        candidate
                        for candidate in self.links.values()
                        if agent.provider in candidate.providers and not candidate.closed.is_set()
                    ),
                    None,
                )
                if link is None:
                    continue  # another replica's runner, or a runner still to come, may take it
                try:
                    async with session.begin_nested():
                        run_id = await self._create_run(session, wake, agent, link)
                except IntegrityError:
                    continue  # another replica started a run for this issue first
                started.append((run_id, link.runner_id))
        for run_id, runner_id in started:
            self.owned[run_id] = 1
            if (link := self.links.get(runner_id)) is not None:
                link.kick()
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
            error_message=f"no installed plugin provides the provider {agent.provider!r}; "
            "install its distribution (e.g. paperclip-" + agent.provider + ") and restart",
            finished_at=datetime.now(UTC),
        )
        session.add(run)
        await session.flush()
        wake.status, wake.claimed_at, wake.run_id = WakeStatus.CLAIMED, datetime.now(UTC), run.id
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
    ) -> uuid.UUID:
        issue = (
            await session.get(Issue, wake.issue_id, with_for_update=True) if wake.issue_id else None
        )
        run_id = uuid.uuid4()
        # The claim moves the task first, so the prompt shows the status the agent works in.
        if issue is not None and issue.status in (
            IssueStatus.TODO,
            IssueStatus.BACKLOG,
            IssueStatus.BLOCKED,
        ):
            issue.status = IssueStatus.IN_PROGRESS
        assembled = await assemble_for_run(
            session,
            agent=agent,
            issue=issue,
            wake=wake,
            run_id=str(run_id),
            hooks=self.prompt_hooks,
        )
        now = datetime.now(UTC)
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
        token = new_run_token(session, run)
        wake.status, wake.claimed_at, wake.run_id = WakeStatus.CLAIMED, now, run.id
        await outbox.enqueue(
            session,
            link.runner_id,
            protocol.START_TURN,
            {
                "provider": agent.provider,
                "config": agent.provider_config,
                "prompt": assembled.prompt,
                "system": assembled.system,
                "session_ref": None,
                "token": token,
            },
            run_id=run.id,
        )
        record_activity(
            session,
            SYSTEM,
            "run.started",
            entity_type="run",
            entity_id=run.id,
            company_id=run.company_id,
            details={"wake_request_id": str(wake.id)},
        )
        return run.id

    # Leases

    async def fail_abandoned_runs(self) -> int:
        """End runs whose controller lease ran out long ago with no runner coming back for them.

        The run is adopted first (the epoch moves, fencing any late writer out),
        then failed with ``runner_unavailable``; its issue goes back to the queue.
        """
        async with self.sessions.begin() as session:
            stale = list(
                (
                    await session.execute(
                        select(Run.id)
                        .where(
                            Run.status.in_(leases.ACTIVE),
                            Run.lease_expires_at
                            < func.now() - timedelta(seconds=self.abandon_after),
                        )
                        .with_for_update(skip_locked=True)
                        .limit(CLAIM_BATCH)
                    )
                ).scalars()
            )
        ended = 0
        for run_id in stale:
            async with self.sessions.begin() as session:
                epoch = await leases.adopt(session, run_id, instance=self.instance, ttl=self.ttl)
                if epoch is None:
                    continue
                run = await lock_run(session, run_id, instance=self.instance, epoch=epoch)
                ended += await finish_run(
                    session,
                    run,
                    RunStatus.FAILED,
                    error_code="runner_unavailable",
                    error_message=f"no runner reported for this run for {self.abandon_after:g} s",
                )
        if ended:
            log.warning("ended %s run(s) whose runner never came back", ended)
            self.nudge()
        return ended

    async def _renew_loop(self) -> None:
        while True:
            await asyncio.sleep(self.ttl / 3)
            with contextlib.suppress(Exception):
                await self.fail_abandoned_runs()
            if not self.owned:
                continue
            try:
                owned = dict(self.owned)
                async with self.sessions.begin() as session:
                    held = await leases.renew(session, owned, instance=self.instance, ttl=self.ttl)
                for run_id in set(owned) - held:
                    if self.owned.get(run_id) == owned[run_id]:
                        log.warning("lost the lease of run %s", run_id)
                        del self.owned[run_id]
                        self._run_tokens.pop(run_id, None)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("renewing leases failed")
