"""Section selection: which sections a session attempt receives, for every lane.

The selection is made for the attempt that is dispatched. A resumed session
gets the delta (compact brief, continuation, wake delta); a fresh session, and
a fresh retry that recovery permitted after a failed resume, get the full
brief, history, bootstrap and instructions. Deciding whether a retry is allowed
is not done here.
"""

from __future__ import annotations

from paperclip_hookspecs.prompts import (
    Lane,
    Placement,
    SectionRequest,
    SectionSelection,
    SessionAttempt,
    TaskMarkdownMode,
)

# Lanes whose legacy contract appends the structured wake JSON after the prompt.
_WAKE_JSON_LANES = frozenset({Lane.GATEWAY})
# Lanes with a verified continuation carrier for resumed sessions.
_CONTINUATION_LANES = frozenset({Lane.NATIVE})


def select_prompt_sections(request: SectionRequest) -> SectionSelection:
    """The default selection for ``request``."""
    fresh = request.attempt is not SessionAttempt.RESUMED
    carriers = request.carriers
    in_prompt = Placement.USER_PROMPT if fresh else Placement.OMIT

    if carriers.default_rules or carriers.execution_contract:
        # The carrier travels with every request, so it carries the rules on resumes too.
        default_rules = Placement.SYSTEM_CARRIER
    else:
        default_rules = in_prompt
    # An execution-contract carrier takes the wake copy; the current event delta stays.
    wake_rules = Placement.SYSTEM_CARRIER if carriers.execution_contract else in_prompt

    return SectionSelection(
        bootstrap=fresh,
        default_rules=default_rules,
        instructions=fresh,
        task_markdown=TaskMarkdownMode.FULL if fresh else TaskMarkdownMode.COMPACT,
        assignment_only=request.owned,
        history=fresh,
        continuation=(
            not fresh and request.has_continuation and request.lane in _CONTINUATION_LANES
        ),
        wake_prompt=True,
        wake_rules=wake_rules,
        # Automatic JSON only while nothing owns the events; templates always get it as a variable.
        wake_json=request.lane in _WAKE_JSON_LANES and not request.owned,
        custom_template=request.custom_template,
    )
