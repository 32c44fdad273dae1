"""Calls of plugin tools: their effect happens outside our database, so they run outside its transactions.

A core tool's effect commits with its saved result. A plugin tool's cannot:
it calls a webhook, writes a file, talks to another system. So the call runs
on its own (no run row locked while it waits on the world), this process
remembers that it runs it (``CallbackMemory``), and its result is saved
afterwards, under the epoch fence it was dispatched with. A call whose
result could not be saved stays pending: it may have had its effect, so
recovery decides it (a receipt, or an unknown outcome), never a second run.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable
from functools import cached_property
from typing import Any

from jsonschema import Draft202012Validator
from paperclip_hookspecs.plugin_tools import PluginTool, ToolCall
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from paperclip.db.driver import driver_connection
from paperclip.domain.costs.budget_ledger import BUDGET_EXCEEDED
from paperclip.engine.calls.callbacks import CallbackMemory
from paperclip.engine.calls.executor import BUDGET_STOP_MESSAGE
from paperclip.engine.logs import journal
from paperclip.engine.ownership.fence import StaleEpochError, lock_runs
from paperclip.engine.ownership.owned_runs import RunOwnership
from paperclip.failpoints import failpoint
from paperclip.models import Run
from paperclip.plugin_host import PluginHost
from paperclip.wire.messages import ToolResult

log = logging.getLogger(__name__)

Deliver = Callable[[int, ToolResult], Awaitable[None]]


def _error(code: str, message: str, **details: Any) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, **details}}


class PluginCalls:
    """Runs calls of plugin tools and saves their results, fenced."""

    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        ownership: RunOwnership,
        plugins: PluginHost,
        memory: CallbackMemory,
        *,
        instance: str,
    ) -> None:
        self.sessions = sessions
        self.ownership = ownership
        self.plugins = plugins
        self.memory = memory
        self.instance = instance
        self._tasks: set[asyncio.Task[None]] = set()

    @cached_property
    def tools(self) -> dict[str, PluginTool]:
        return {tool.name: tool for tool in self.plugins.tools()}

    @cached_property
    def _validators(self) -> dict[str, Draft202012Validator]:
        return {name: Draft202012Validator(dict(t.input_schema)) for name, t in self.tools.items()}

    def owns(self, tool: str) -> bool:
        return tool in self.tools

    def start(self, runner_id: uuid.UUID, call: journal.CallInput, deliver: Deliver) -> None:
        """Run a freshly admitted call in the background; its reply goes out through ``deliver``."""
        epoch = self.ownership.epoch(call.run_id)
        self.memory.started(call.id)  # before the task starts: recovery may look at once
        task = asyncio.create_task(self._run(runner_id, call, epoch, deliver))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def drain(self, grace: float) -> None:
        """On stop: let running calls save their results for ``grace`` seconds, then cancel the rest.

        A call cancelled here stays pending in the journal; its outcome is
        recovery's to decide (a receipt, or unknown), as after a crash. No task
        may outlive the engine: one holding a transaction would hold its locks.
        """
        if not self._tasks:
            return
        _, late = await asyncio.wait(set(self._tasks), timeout=grace)
        for task in late:
            task.cancel()
        await asyncio.gather(*late, return_exceptions=True)

    async def _run(
        self, runner_id: uuid.UUID, call: journal.CallInput, epoch: int, deliver: Deliver
    ) -> None:
        try:
            result, is_error = await self._answer(call)
            sent = await self._settle(runner_id, call, epoch, result, is_error)
        except (StaleEpochError, journal.AlreadySettledError) as exc:
            # The run was adopted (here or elsewhere) while the tool ran: this dispatch may
            # not save its result. The input is now an earlier controller's, no longer
            # running here: the next recovery pass settles it.
            self.memory.finished(call.id)
            log.warning("plugin tool call %s of run %s not saved: %s", call.id, call.run_id, exc)
            return
        except Exception as exc:
            self.memory.failed(call.id)
            log.warning(
                "plugin tool call %s of run %s failed to save: %s", call.id, call.run_id, exc
            )
            return
        self.memory.finished(call.id)
        # The same moment as a core tool's: the effect and its result are committed.
        failpoint("engine.tool.settled.before_reply")
        if sent is not None:
            await deliver(*sent)

    async def _answer(self, call: journal.CallInput) -> tuple[dict[str, Any], bool]:
        tool = self.tools[call.tool]
        problems = sorted(self._validators[call.tool].iter_errors(call.arguments), key=str)
        if problems:
            message = f"the arguments of {call.tool} are not valid: {problems[0].message}"
            return _error("invalid_arguments", message), True
        async with self.sessions() as session:
            run = await session.get(Run, call.run_id)
        if run is None:
            return _error("run_not_found", "the run no longer exists"), True
        if run.budget_stop_at is not None:
            return _error(BUDGET_EXCEEDED, BUDGET_STOP_MESSAGE), True
        request = ToolCall(
            run_id=str(run.id),
            company_id=str(run.company_id),
            agent_id=str(run.agent_id),
            issue_id=str(run.issue_id) if run.issue_id else None,
            call_id=call.call_id,
            command_id=call.command_id,
            arguments=call.arguments,
        )
        try:
            answer = await tool.handler.call(request)
        except Exception as exc:
            # The plugin's failure is the call's answer, never the control plane's.
            log.warning("plugin tool %s failed: %s", call.tool, exc)
            plugin = self.plugins.owner_of_tool(call.tool)
            return _error(
                "plugin_failed", f"the tool {call.tool} failed: {exc}", plugin=plugin
            ), True
        return dict(answer.result), answer.is_error

    async def _settle(
        self,
        runner_id: uuid.UUID,
        call: journal.CallInput,
        epoch: int,
        result: dict[str, Any],
        is_error: bool,
    ) -> tuple[int, ToolResult] | None:
        reply = ToolResult(
            seq=0, run_id=call.run_id, call_id=call.call_id, content=result, is_error=is_error
        )
        async with self.sessions.begin() as session:
            runs, refused = await lock_runs(session, {call.run_id: epoch}, instance=self.instance)
            if call.run_id not in runs:
                raise refused.get(call.run_id) or StaleEpochError(f"run {call.run_id} moved on")
            [seq], _ = await journal.settle_many(
                await driver_connection(session),
                [journal.Settlement(call.id, result, is_error, epoch)],
                [reply],
                instance=self.instance,
                runner_id=runner_id,
            )
        return seq, ToolResult(
            seq=seq, run_id=call.run_id, call_id=call.call_id, content=result, is_error=is_error
        )
