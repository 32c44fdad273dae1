"""The tool-call pipeline: admit -> execute -> settle, one path for every call.

A call is journaled (admitted, with this controller's instance and epoch)
before it is executed, and its result is saved, in the same transaction as
its effect and the reply in the runner's outbox, before the reply is sent.
Calls that arrive together share each step: one statement admits a batch,
one transaction executes and settles it.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from paperclip import metrics, tracing
from paperclip.db.availability import is_unavailable, log_failure
from paperclip.db.driver import engine_of, plain_connection
from paperclip.domain.issues.issue_numbers import IssueNumbers
from paperclip.domain.keys.api_keys import hash_key
from paperclip.engine.calls.callbacks import CallbackMemory
from paperclip.engine.calls.executor import ToolExecutor
from paperclip.engine.calls.plugin_calls import PluginCalls
from paperclip.engine.calls.recorded import recording
from paperclip.engine.links.gate import ControlGate
from paperclip.engine.links.link import Admitted, RunnerLink
from paperclip.engine.logs import journal, outbox
from paperclip.engine.ownership.fence import LockedRun, StaleEpochError
from paperclip.engine.ownership.fenced_tx import FencedTransaction
from paperclip.engine.ownership.owned_runs import RunOwnership
from paperclip.failpoints import failpoint
from paperclip.models import RunToken, ToolCall, ToolCallStatus
from paperclip.plugin_host import PluginHost
from paperclip.wire.messages import FEATURE_UNSEQUENCED_RESULTS, ToolResult
from paperclip.wire.messages import ToolCall as ToolCallMessage

log = logging.getLogger(__name__)

DISPATCH_BATCH = 32
UNAVAILABLE_BACKOFF_SECONDS = 1.0


class CallPipeline:
    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        ownership: RunOwnership,
        gate: ControlGate,
        plugins: PluginHost,
        *,
        instance: str,
        memory: CallbackMemory | None = None,
        journal: AsyncEngine | None = None,
        numbers: IssueNumbers | None = None,
    ) -> None:
        self.sessions = sessions
        # Admission: one statement, no session around it, on the journal's engine if it has one.
        self.engine = journal if journal is not None else engine_of(sessions)
        self.ownership = ownership
        self.gate = gate
        self.plugins = plugins
        self.executor = ToolExecutor(plugins, numbers)
        self.instance = instance
        self.memory = memory if memory is not None else CallbackMemory()
        """The callbacks this process runs and saw fail (recovery asks it)."""
        self.plugin_calls = PluginCalls(
            sessions, ownership, plugins, self.memory, instance=instance
        )

    # Admit

    async def admit(self, link: RunnerLink, messages: Sequence[ToolCallMessage]) -> None:
        """Journal consecutive calls (of any runs) in one statement, then queue them for execution.

        A call whose token is not its run's live token is refused without
        being journaled; a call of a run that has ended is refused too. A call
        of a run adopted elsewhere since raises StaleEpochError: this link is stale.
        """
        verified: list[ToolCallMessage] = []
        for message in messages:
            if not await self.gate.controls(link, message.run_id):
                await self._refuse(link, message, "run_ended", "this run has ended")
            else:
                verified.append(message)
        await self._verify_tokens(verified)
        requests: dict[tuple[uuid.UUID, str], journal.Request] = {}
        repeats: list[tuple[uuid.UUID, str]] = []
        for message in verified:
            if not self.ownership.token_verified(message.run_id, message.token):
                # Not this run's token: nothing is journaled for the run it names.
                await self._refuse(
                    link, message, "run_token_refused", "the token does not act as this run"
                )
                continue
            request = journal.Request(
                message.run_id,
                self.ownership.epoch(message.run_id),
                message.call_id,
                message.tool,
                message.arguments,
            )
            key = (message.run_id, message.call_id)
            if key in requests:
                # The same call twice in one batch (a replay) is one input: the first
                # stands, and the copy is answered with its saved result.
                repeats.append(key)
            requests.setdefault(key, request)
        recordings = [
            recorded
            for key, request in requests.items()
            if key not in repeats and (recorded := recording(request)) is not None
        ]
        if recordings:
            for key in await self._record(link, recordings):
                del requests[key]
        if requests:
            async with plain_connection(self.engine) as connection:
                admitted = await journal.admit_many(
                    connection, list(requests.values()), instance=self.instance
                )
            failpoint("engine.tool.admitted.before_dispatch")
            for key, request in requests.items():
                entry = admitted.get(key)
                if entry is None:
                    raise StaleEpochError(f"run {key[0]} was adopted by another controller")
                call_db_id, fresh = entry
                call = (
                    journal.CallInput(call_db_id, key[0], key[1], request.tool, request.arguments)
                    if fresh
                    else None  # admitted before: execution reads its stored state
                )
                link.admitted.put_nowait((key[0], call_db_id, call))
            for key in repeats:
                link.admitted.put_nowait((key[0], admitted[key][0], None))
        for message in messages:
            link.processed(message.seq)

    async def _record(
        self, link: RunnerLink, recordings: Sequence[journal.Recording]
    ) -> set[tuple[uuid.UUID, str]]:
        """Journal self-contained calls in one statement, then send their replies; the calls
        recorded (the others take the two-step path).

        A runner that takes unsequenced results gets them straight from here:
        the journal holds each, and sends it again if the runner names its call
        as still waiting when it reconnects (``CallRecovery.answer_again``).
        """
        started, began = time.perf_counter(), tracing.now()
        unsequenced = FEATURE_UNSEQUENCED_RESULTS in link.features
        async with plain_connection(self.engine) as connection:
            seqs = await journal.record_many(
                connection,
                recordings,
                instance=self.instance,
                runner_id=None if unsequenced else link.runner_id,
            )
        if not seqs:
            return set()
        failpoint("engine.tool.settled.before_reply")
        elapsed = time.perf_counter() - started
        for recorded in recordings:
            call = recorded.request
            seq = seqs.get((call.run_id, call.call_id))
            if seq is None:
                continue
            _measured(call.run_id, call.call_id, call.tool, "ok", elapsed, began)
            reply = ToolResult(
                seq=seq, run_id=call.run_id, call_id=call.call_id, content=recorded.result
            )
            if unsequenced:
                await link.send_unsequenced(reply)
            else:
                await link.deliver(seq, reply)
        return set(seqs)

    async def _verify_tokens(self, messages: Sequence[ToolCallMessage]) -> None:
        """Check the tokens not verified yet against live run tokens, in one query."""
        unknown = {
            hash_key(m.token): m
            for m in messages
            if m.token and not self.ownership.token_verified(m.run_id, m.token)
        }
        if not unknown:
            return
        async with self.sessions() as session:
            rows = await session.execute(
                select(RunToken.token_hash, RunToken.run_id).where(
                    RunToken.token_hash.in_(list(unknown)), RunToken.revoked_at.is_(None)
                )
            )
        for token_hash, run_id in rows.all():
            message = unknown[token_hash]
            if message.run_id == run_id:
                self.ownership.remember_token(run_id, message.token)

    async def _refuse(
        self, link: RunnerLink, message: ToolCallMessage, code: str, text: str
    ) -> None:
        """Answer a call without journaling it (it acts for no run this replica runs)."""
        reply = ToolResult(
            seq=0,
            run_id=message.run_id,
            call_id=message.call_id,
            is_error=True,
            content={"error": {"code": code, "message": text}},
        )
        async with self.sessions.begin() as session:
            # Not attached to the run's row: the run named may not exist.
            await outbox.enqueue_one(session, link.runner_id, reply, attach=False)
        link.kick()

    # Execute and settle

    async def dispatch_loop(self, link: RunnerLink) -> None:
        """Execute admitted calls in batches: whatever is queued shares one transaction."""
        while not link.closed.is_set():
            batch = [await link.admitted.get()]
            while not link.admitted.empty() and len(batch) < DISPATCH_BATCH:
                batch.append(link.admitted.get_nowait())
            await self.dispatch(link, batch)

    async def dispatch(self, link: RunnerLink, batch: list[Admitted]) -> None:
        """Execute journaled calls and save each result with its reply, in fenced transactions.

        A batch that fails is retried call by call, each reading its stored
        state again, so one bad call cannot hold up the others. A freshly
        admitted call of a plugin tool runs on its own, outside the batch's
        transaction (its effect is outside our database).
        """
        core: list[Admitted] = []
        for item in batch:
            call = item[2]
            if call is not None and self.plugin_calls.owns(call.tool):
                self.plugin_calls.start(link.runner_id, call, link.deliver)
            else:
                core.append(item)
        if not core:
            return
        batch = core
        try:
            replies = await self.execute_batch(link.runner_id, batch)
        except Exception as exc:
            if is_unavailable(exc):
                # The calls stay journaled and pending: try them again once it is back.
                log_failure(log, "%s tool call(s) wait for the database", exc, len(batch))
                await asyncio.sleep(UNAVAILABLE_BACKOFF_SECONDS)
                for run_id, call_db_id, _ in batch:
                    link.admitted.put_nowait((run_id, call_db_id, None))
                return
            if len(batch) > 1 or batch[0][2] is not None:
                for run_id, call_db_id, _ in batch:
                    await self.dispatch(link, [(run_id, call_db_id, None)])
            else:
                log_failure(
                    log, "tool call %s of run %s failed to dispatch", exc, batch[0][1], batch[0][0]
                )
            return
        failpoint("engine.tool.settled.before_reply")
        for seq, message in replies:
            await link.deliver(seq, message)

    async def execute_batch(
        self, runner_id: uuid.UUID, batch: list[Admitted]
    ) -> list[tuple[int, ToolResult]]:
        """Execute and settle a batch; its replies, queued in ``runner_id``'s outbox, by seq."""
        started, began = time.perf_counter(), tracing.now()
        epochs = {
            run_id: epoch
            for run_id, _, _ in batch
            if (epoch := self.ownership.snapshot().get(run_id)) is not None
        }
        if not epochs:
            log.warning("tool calls of runs not controlled here were not dispatched")
            return []
        async with FencedTransaction.begin(self.sessions, epochs, instance=self.instance) as tx:
            runs = tx.locked
            for run_id in {run_id for run_id, _, _ in batch} - runs.keys():
                log.warning(
                    "tool calls of run %s not dispatched: %s",
                    run_id,
                    tx.refused.get(run_id, "this replica does not control it"),
                )
            unread = [call_db_id for run_id, call_db_id, call in batch if call is None]
            stored: dict[int, ToolCall] = {}
            if unread:
                # A replay or a retry: rare, so through the ORM.
                rows = await tx.session().execute(select(ToolCall).where(ToolCall.id.in_(unread)))
                stored = {row.id: row for row in rows.scalars()}
            answers: dict[int, ToolResult] = {}
            work: list[tuple[LockedRun, journal.CallInput]] = []
            for run_id, call_db_id, call in batch:
                if run_id not in runs or call_db_id in answers:
                    continue
                if call is None:
                    row = stored.get(call_db_id)
                    if row is None:
                        continue
                    if row.status != ToolCallStatus.PENDING:
                        answers[call_db_id] = reply_to(
                            run_id, row.call_id, row.result, row.is_error
                        )
                        continue
                    if self.plugin_calls.owns(row.tool):
                        # Admitted before and not settled: it may have had its effect.
                        # Its own run answers it, or recovery does; never a second run.
                        continue
                    call = journal.CallInput.of(row)
                answers[call_db_id] = reply_to(run_id, call.call_id, {}, False)  # filled in below
                work.append((runs[run_id], call))
            outcomes = await self.executor.execute_many(tx, work)
            for (_, call), outcome in zip(work, outcomes, strict=True):
                answers[call.id] = reply_to(
                    call.run_id, call.call_id, outcome.result, outcome.is_error
                )
            # One reply per call in the batch: a repeated call is answered again.
            replies = [answers[db_id] for _, db_id, _ in batch if db_id in answers]
            seqs, added = await journal.settle_many(
                tx.driver,
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
                runner_id=runner_id,
                effects=[
                    (call.run_id, "tool", outcome.events)
                    for (_, call), outcome in zip(work, outcomes, strict=True)
                ],
            )
            tx.appended(added)
        elapsed = time.perf_counter() - started
        for (_, call), outcome in zip(work, outcomes, strict=True):
            result = "error" if outcome.is_error else "ok"
            _measured(call.run_id, call.call_id, call.tool, result, elapsed, began)
        return [(seq, numbered(reply, seq)) for seq, reply in zip(seqs, replies, strict=True)]


def reply_to(run_id: uuid.UUID, call_id: str, content: object, is_error: bool) -> ToolResult:
    return ToolResult(seq=0, run_id=run_id, call_id=call_id, content=content, is_error=is_error)


def numbered(reply: ToolResult, seq: int) -> ToolResult:
    return ToolResult(
        seq=seq,
        run_id=reply.run_id,
        call_id=reply.call_id,
        content=reply.content,
        is_error=reply.is_error,
    )


def _measured(
    run_id: uuid.UUID, call_id: str, tool: str, outcome: str, elapsed: float, began: int
) -> None:
    """A settled call counted, timed and traced (``outcome``: ``ok`` or ``error``)."""
    counted, timed = metrics.tool_call_series(tool, outcome)
    counted.inc()
    timed.observe(elapsed)
    tracing.record(
        "paperclip.tool_call", run_id, began, tool=tool, call_id=call_id, outcome=outcome
    )
