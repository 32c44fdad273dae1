"""Tool inputs an earlier controller left without a result, and calls a runner still waits for.

After a replica adopts a run (its lease expired and the epoch moved), every
input of the run without a saved result is decided by the tool-recovery hook
(``paperclip_recover_tool_input``), through the plugin host: a durable
receipt is replayed, an input is settled as interrupted, run again (it
provably had no effect), or kept pending.
"""

from __future__ import annotations

import asyncio
import logging
import uuid

from paperclip_hookspecs.receipts import (
    SEMANTIC_TOOL_OUTCOME_UNKNOWN,
    TOOL_CALL_INTERRUPTED_BY_RESTART,
    Admission,
    PendingToolInput,
    ReceiptStatus,
    ToolReceipt,
    ToolRecovery,
    ToolRecoveryAction,
)
from paperclip_hookspecs.recovery import CallbacksRecovered
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from paperclip.db.availability import log_failure
from paperclip.db.driver import driver_connection
from paperclip.engine.calls.pipeline import CallPipeline, numbered, reply_to
from paperclip.engine.links.link import Admitted, RunnerLink
from paperclip.engine.links.transport import TransportClosed
from paperclip.engine.logs import journal, outbox
from paperclip.engine.ownership.fence import StaleEpochError, lock_run, lock_runs
from paperclip.models import ToolCall, ToolCallStatus
from paperclip.models import ToolReceipt as ReceiptRow
from paperclip.wire.messages import ToolResult
from paperclip.wire.tools import BY_NAME

log = logging.getLogger(__name__)


class CallRecovery:
    """Settles the inputs of adopted runs, through the call pipeline."""

    def __init__(self, calls: CallPipeline) -> None:
        self.calls = calls
        self.sessions = calls.sessions
        self.ownership = calls.ownership
        self.plugins = calls.plugins
        self.instance = calls.instance
        self.adoptions: set[asyncio.Task[None]] = set()
        """Recoveries of runs adopted to start their next turn, still running."""

    def adopted(self, link: RunnerLink, run_id: uuid.UUID) -> None:
        """A run adopted to start its next turn: settle what its lost turn left pending."""
        task = asyncio.create_task(self._recover_adopted(link, run_id))
        self.adoptions.add(task)
        task.add_done_callback(self.adoptions.discard)

    async def _recover_adopted(self, link: RunnerLink, run_id: uuid.UUID) -> None:
        try:
            await self.recover_pending(run_id, runner_id=link.runner_id, link=link)
        except StaleEpochError:
            # Its lease moved on meanwhile: the next controller's adoption recovers them.
            log.info("run %s changed controller before its inputs were recovered here", run_id)
        except TransportClosed:
            pass  # the replies are in the runner's outbox: sent when it connects again
        except Exception as exc:
            log_failure(log, "recovering the inputs of adopted run %s failed", exc, run_id)

    async def recover_pending(
        self, run_id: uuid.UUID, *, runner_id: uuid.UUID, link: RunnerLink | None = None
    ) -> CallbacksRecovered:
        """After adoption: ask the tool-recovery hook what becomes of each input without a result.

        This controller just adopted the run (its lease expired and the epoch
        moved), so the earlier owner is gone. A receipt is replayed, an
        interrupted input settles with ``tool_call_interrupted_by_restart``, an
        input that provably had no effect runs now, and a kept one waits.
        Replies go to ``runner_id``'s outbox (and out on ``link``, when there is one).
        """
        epoch = self.ownership.epoch(run_id)
        async with self.sessions() as session:
            pending = list(
                (
                    await session.execute(
                        select(ToolCall).where(
                            ToolCall.run_id == run_id, ToolCall.status == ToolCallStatus.PENDING
                        )
                    )
                ).scalars()
            )
            receipts = await _receipts_of(session, pending)
        settle: list[tuple[ToolCall, dict[str, object], bool]] = []
        again: list[Admitted] = []
        for row in pending:
            asked = await self._pending_input(row, epoch, receipts.get(row.id))
            decision = self.plugins.recover_tool_input(asked)
            if decision.action is ToolRecoveryAction.REDISPATCH and not asked.effect_in_journal:
                # Only an input that provably had no effect may run again.
                decision = ToolRecovery.keep_pending(
                    "its effect may have happened: never run again"
                )
            log.info(
                "tool call %s of run %s after adoption: %s (%s)",
                row.call_id,
                run_id,
                decision.action.value,
                decision.reason,
            )
            if decision.action is ToolRecoveryAction.REDISPATCH:
                again.append((run_id, row.id, None))
            elif decision.action is not ToolRecoveryAction.KEEP_PENDING:
                result, is_error = _settled_result(decision)
                settle.append((row, result, is_error))
        if settle:
            seqs = await self._settle_recovered(runner_id, run_id, epoch, settle)
            if link is not None:
                for seq, reply in seqs:
                    await link.deliver(seq, reply)
        if again and link is not None:
            for item in again:
                link.admitted.put_nowait(item)
        elif again:
            await self.calls.execute_batch(runner_id, again)
        return CallbacksRecovered(
            settled=len(settle), pending=len(pending) - len(settle) - len(again)
        )

    async def answer_again(self, link: RunnerLink, run_id: uuid.UUID, call_ids: list[str]) -> None:
        """The runner still waits for these calls (``hello``): send the saved results again.

        A call still pending gets its answer when it settles; one the journal does
        not know is replayed by the runner itself (its outbox).
        """
        if not call_ids:
            return
        async with self.sessions.begin() as session:
            # The run first, then the runner's counter (outbox.enqueue), as every writer of a
            # run: the counter first waited, in the outbox row's foreign-key check, for a
            # writer that held the run (a steer) and waited for the counter.
            await lock_run(
                session, run_id, instance=self.instance, epoch=self.ownership.epoch(run_id)
            )
            rows = (
                await session.execute(
                    select(ToolCall).where(
                        ToolCall.run_id == run_id,
                        ToolCall.call_id.in_(call_ids),
                        ToolCall.status == ToolCallStatus.SETTLED,
                    )
                )
            ).scalars()
            replies = [
                outbox.Outgoing.of(reply_to(run_id, row.call_id, row.result, row.is_error))
                for row in rows
            ]
            await outbox.enqueue(session, link.runner_id, replies)
        link.kick()

    async def _pending_input(
        self, row: ToolCall, epoch: int, receipt: ToolReceipt | None
    ) -> PendingToolInput:
        """What the hook is told about one input. The admission is computed, never saved:
        ``this_controller`` when this process dispatched it live (at this epoch, or it still
        remembers running it or seeing it fail), else ``earlier_controller``."""
        memory = self.calls.memory
        running, failed = memory.running(row.id), memory.failed_here(row.id)
        here = (row.admitted_by == self.instance and row.admitted_epoch == epoch) or (
            running or failed
        )
        answer = None
        if receipt is None and not running and self.calls.plugin_calls.owns(row.tool):
            receipt, answer = await self._ask_authority(row)
        return PendingToolInput(
            run_id=str(row.run_id),
            input_id=str(row.id),
            tool_name=row.tool,
            admission=Admission.THIS_CONTROLLER if here else Admission.EARLIER_CONTROLLER,
            running_here=running,
            owner_gone=not here,
            receipt=receipt,
            failed_here=failed,
            authority_answer=answer,
            # A core tool's effect commits with its saved result.
            effect_in_journal=row.tool in BY_NAME,
        )

    async def _ask_authority(self, row: ToolCall) -> tuple[ToolReceipt | None, str | None]:
        """The plugin tool's receipt lookup: its receipt, none, or ``semantic_tool_outcome_unknown``."""
        tool = self.calls.plugin_calls.tools[row.tool]
        try:
            return await tool.handler.find_receipt(journal.CallInput.of(row).command_id), None
        except Exception as exc:
            # ToolOutcomeUnknown, or a lookup that failed: either way nobody can tell.
            log.info(
                "receipt lookup of %s for call %s: outcome unknown (%s)", row.tool, row.id, exc
            )
            return None, SEMANTIC_TOOL_OUTCOME_UNKNOWN

    async def _settle_recovered(
        self,
        runner_id: uuid.UUID,
        run_id: uuid.UUID,
        epoch: int,
        settle: list[tuple[ToolCall, dict[str, object], bool]],
    ) -> list[tuple[int, ToolResult]]:
        replies = [
            reply_to(run_id, row.call_id, result, is_error) for row, result, is_error in settle
        ]
        async with self.sessions.begin() as session:
            runs, refused = await lock_runs(session, {run_id: epoch}, instance=self.instance)
            if run_id not in runs:
                raise refused[run_id]
            seqs, _ = await journal.settle_many(
                await driver_connection(session),
                [
                    journal.Settlement(row.id, dict(result), is_error, epoch)
                    for row, result, is_error in settle
                ],
                replies,
                instance=self.instance,
                runner_id=runner_id,
            )
        return [(seq, numbered(reply, seq)) for seq, reply in zip(seqs, replies, strict=True)]


def _settled_result(decision: ToolRecovery) -> tuple[dict[str, object], bool]:
    """The saved result of a recovered input: its receipt's, or the interruption."""
    if decision.action is ToolRecoveryAction.REPLAY_RECEIPT and decision.receipt is not None:
        receipt = decision.receipt
        return (
            {
                **receipt.result,
                "receipt": {
                    "command_id": receipt.command_id,
                    "outcome": ReceiptStatus.DUPLICATE.value,
                    "state_revision": receipt.state_revision,
                },
            },
            False,
        )
    return (
        {
            "error": {
                "code": decision.error_code or TOOL_CALL_INTERRUPTED_BY_RESTART,
                "message": "a restart interrupted this call; whether it took effect is unknown. "
                "Check the current state before you repeat it.",
                "outcome": "unknown",
                "retryable": decision.retryable,
            }
        },
        True,
    )


async def _receipts_of(session: AsyncSession, pending: list[ToolCall]) -> dict[int, ToolReceipt]:
    """The durable receipt of each pending input that has one (by its command id)."""
    by_command = {journal.CallInput.of(row).command_id: row.id for row in pending}
    if not by_command:
        return {}
    rows = await session.execute(
        select(ReceiptRow).where(ReceiptRow.command_id.in_(list(by_command)))
    )
    found: dict[int, ToolReceipt] = {}
    for receipt in rows.scalars():
        row_id = by_command[receipt.command_id]
        found[row_id] = ToolReceipt(
            command_id=receipt.command_id,
            status=ReceiptStatus.APPLIED,
            result=receipt.result,
            state_revision=receipt.state_revision,
        )
    return found
