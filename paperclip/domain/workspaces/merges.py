"""A person's merge of an issue's branch, as the routes see it: what the runner made
(``MergeOutcome``) and the merges they are handed (``Merges``).

The merge itself is the engine's (``paperclip/engine/workspaces/merges.py``: the checks,
the exactly-once request, the runner's outbox, the wait for its answer); the
composition root hands its ``WorkspaceMerges`` to the routes as ``Merges``.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from paperclip.common.actor import Actor


@dataclass(frozen=True, slots=True)
class MergeOutcome:
    """A merge the runner made: what the API answers."""

    strategy: str
    branch: str
    base_ref: str
    commit: str
    merged_commits: int
    issue_status: str


@runtime_checkable
class Merges(Protocol):
    """Merging as the routes use it (the engine's ``WorkspaceMerges``)."""

    async def merge(
        self, actor: Actor, company_id: uuid.UUID, issue_id: uuid.UUID, *, close_issue: bool
    ) -> MergeOutcome:
        """Merge the issue's branch into its base branch and wait for the runner's answer."""
        ...
