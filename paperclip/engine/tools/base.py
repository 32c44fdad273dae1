"""What a tool handler gets and returns."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from paperclip.common.actor import Actor
from paperclip.domain.issues.issue_numbers import IssueNumbers
from paperclip.engine.logs.events import NewEvent
from paperclip.engine.logs.journal import CallInput, Receipt
from paperclip.engine.ownership.fence import LockedRun
from paperclip.engine.ownership.fenced_tx import FencedTransaction
from paperclip.models import Run
from paperclip.plugin_host import PluginHost


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    result: dict[str, Any]
    is_error: bool = False
    events: tuple[NewEvent, ...] = ()
    """Entries for the run's log: appended with the other effects, for the whole batch at once."""
    receipt: Receipt | None = None
    """A write tool's new receipt: recorded with the call's result (``journal.settle_many``)."""


@dataclass(frozen=True, slots=True)
class ToolContext:
    """One call's execution: in the dispatch transaction, with its run's row locked."""

    tx: FencedTransaction
    locked: LockedRun
    """The call's run as the lock read it (ids and fence); ``run()`` gives the whole row."""
    call: CallInput
    actor: Actor
    plugins: PluginHost
    """The plugin facade: guards and reference checks are asked through it."""
    numbers: IssueNumbers | None = None
    """Where a new issue's number comes from (a statement committed on its own)."""

    @property
    def arguments(self) -> dict[str, Any]:
        return self.call.arguments

    @property
    def session(self) -> AsyncSession:
        """An ORM session in the dispatch transaction (opened for the first tool that asks)."""
        return self.tx.session()

    async def run(self) -> Run:
        """The run's row as an ORM object, to read more of it or change it (written at commit)."""
        return await self.tx.run(self.locked.id)


ToolHandler = Callable[[ToolContext], Awaitable[ToolOutcome]]
"""A write handler returns its result without the receipt; ``_state_revision`` in the
result names the state it made (popped before the result is saved)."""


def error(code: str, message: str, **details: Any) -> ToolOutcome:
    return ToolOutcome({"error": {"code": code, "message": message, **details}}, is_error=True)
