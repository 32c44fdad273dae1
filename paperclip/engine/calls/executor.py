"""Executing server-owned tools inside the controller's fenced transaction.

A write tool's effect, its receipt and the journal's result commit together,
so a pending journal entry of a core tool always means "no effect", and a
replay of a command finds its receipt and gets the saved result as
``duplicate``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from functools import cache
from typing import Any

from jsonschema import Draft202012Validator

from paperclip.common.actor import Actor
from paperclip.domain.costs.budget_ledger import BUDGET_EXCEEDED
from paperclip.domain.issues.issue_numbers import IssueNumbers
from paperclip.engine.logs.journal import CallInput, Receipt
from paperclip.engine.ownership.fence import LockedRun
from paperclip.engine.ownership.fenced_tx import FencedTransaction
from paperclip.engine.tools import HANDLERS, ToolContext, ToolOutcome, error
from paperclip.plugin_host import PluginHost
from paperclip.plugin_host.errors import PluginError
from paperclip.wire.tools import BY_NAME

BUDGET_STOP_MESSAGE = (
    "This run's budget is spent: stop now. Call no more tools (they are refused) and end "
    "your turn with a short note of where you are; the task goes on when a person raises "
    "the budget or a new month begins."
)

RECEIPTS = """
SELECT command_id, company_id, run_id, tool, state_revision, result
FROM tool_receipts WHERE command_id = ANY($1::text[])
"""


@cache
def validator(tool: str) -> Draft202012Validator:
    """The argument validator of a tool, built once."""
    return Draft202012Validator(BY_NAME[tool].input_schema)


def state_revision(result: dict[str, Any]) -> str:
    """A revision of a write's result, for tools that name no state of their own."""
    return hashlib.sha256(json.dumps(result, sort_keys=True, default=str).encode()).hexdigest()


class ToolExecutor:
    """Runs batches of journaled calls; what the model gets back."""

    def __init__(self, plugins: PluginHost, numbers: IssueNumbers | None = None) -> None:
        self.plugins = plugins
        self.numbers = numbers

    async def execute_many(
        self, tx: FencedTransaction, work: Sequence[tuple[LockedRun, CallInput]]
    ) -> list[ToolOutcome]:
        """Run calls in order, in the dispatch transaction (their runs' rows locked).

        The receipts of the whole batch are looked up in one statement. The
        new receipts and the log entries of the effects are returned in the
        outcomes, for the settlement to record with the results.
        """
        # Only a model-chosen command id can have a receipt already: a call's own id
        # is the command of a call that is still pending, so it has no effect yet.
        commands = [
            call.command_id
            for _, call in work
            if (spec := BY_NAME.get(call.tool)) is not None
            and spec.writes
            and call.arguments.get("command_id")
        ]
        receipts: dict[str, Receipt] = {}
        if commands:
            rows = await tx.driver.fetch(RECEIPTS, commands)
            receipts = {row["command_id"]: Receipt(**row) for row in rows}
        return [await self._execute(tx, run, call, receipts) for run, call in work]

    async def _execute(
        self,
        tx: FencedTransaction,
        run: LockedRun,
        call: CallInput,
        receipts: dict[str, Receipt],
    ) -> ToolOutcome:
        if run.budget_stopped:
            return error(BUDGET_EXCEEDED, BUDGET_STOP_MESSAGE)
        spec = BY_NAME.get(call.tool)
        handler = HANDLERS.get(call.tool)
        if spec is None or handler is None:
            return error("unknown_tool", f"there is no tool named {call.tool!r}")
        problems = sorted(validator(spec.name).iter_errors(call.arguments), key=lambda e: e.path)
        if problems:
            return error(
                "invalid_arguments",
                f"the arguments of {call.tool} are not valid: {problems[0].message}",
            )
        actor = Actor(type="agent", id=str(run.agent_id), company_id=run.company_id, run_id=run.id)
        ctx = ToolContext(tx, run, call, actor, self.plugins, self.numbers)
        if not spec.writes:
            return await self._run(handler, ctx)

        receipt = receipts.get(call.command_id)
        if receipt is not None:
            if receipt.run_id != run.id or receipt.company_id != run.company_id:
                return error("foreign_receipt", "this command belongs to another run")
            return ToolOutcome({**receipt.result, "receipt": receipt.body("duplicate")})
        outcome = await self._run(handler, ctx)
        if outcome.is_error:
            return outcome
        result = dict(outcome.result)
        receipt = Receipt(
            command_id=call.command_id,
            company_id=run.company_id,
            run_id=run.id,
            tool=call.tool,
            state_revision=result.pop("_state_revision", None) or state_revision(result),
            result=result,
            named=bool(call.arguments.get("command_id")),
        )
        receipts[call.command_id] = receipt  # a later call of this batch with it is a duplicate
        return ToolOutcome(
            {**result, "receipt": receipt.body("applied")},
            events=outcome.events,
            receipt=receipt,
        )

    @staticmethod
    async def _run(handler: Any, ctx: ToolContext) -> ToolOutcome:
        try:
            outcome: ToolOutcome = await handler(ctx)
        except PluginError as exc:
            # A plugin that fails (or overruns its time budget) while a tool asks it fails
            # the call, never the batch: plugin_failed, or plugin_timeout.
            code = getattr(exc, "code", "plugin_failed")
            return error(code, str(exc), plugin=getattr(exc, "plugin", None))
        return outcome
