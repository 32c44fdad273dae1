"""``request_human_input``: the agent raises a question or confirmation card on its task."""

from __future__ import annotations

from paperclip.domain.holds.interactions import raise_card
from paperclip.engine.tools.base import ToolContext, ToolOutcome, error


async def request_human_input(ctx: ToolContext) -> ToolOutcome:
    run, arguments = await ctx.run(), ctx.arguments
    if run.issue_id is None:
        return error("no_task", "this run has no task to ask about")
    card = await raise_card(
        ctx.session,
        run,
        kind=arguments["kind"],
        title=arguments["title"],
        body=arguments.get("body") or "",
        options=list(arguments.get("options") or []),
    )
    return ToolOutcome(
        {"interaction_id": str(card.id), "status": card.status, "_state_revision": str(card.id)}
    )
