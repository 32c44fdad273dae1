"""``paperclipTurnContext`` v1: which section owns each source of a run.

The task markdown owns the description; the wake prompt owns the current
comments, listed in order by id and revision. Two comments with the same body
stay two entries. A deleted comment is no source and has no owner.
"""

from __future__ import annotations

from paperclip_hookspecs.prompts import (
    AssignmentOwnership,
    EventsOwnership,
    SourceRef,
    TaskSource,
    TurnContext,
    WakeSource,
)

from paperclip.prompts.sources import current_comments
from paperclip.revisions import revision, source_text


def build_turn_context(task: TaskSource, wake: WakeSource) -> TurnContext:
    """The turn context of ``task`` and its normalized ``wake``."""
    description = source_text(task.description)
    return TurnContext(
        assignment=AssignmentOwnership(
            description=SourceRef(task.id, revision(description)) if description else None
        ),
        events=EventsOwnership(
            comments=tuple(SourceRef(c.id, revision(c.body)) for c in current_comments(wake))
        ),
    )
