"""The report tools: ``finish`` (completion, guarded) and ``block``."""

from __future__ import annotations

from typing import Any

from paperclip_hookspecs.completion import CompletionReport, CompletionStage
from paperclip_hookspecs.prompts import CompletionReference, SourceKind
from sqlalchemy import select

from paperclip.engine.context.completion import check_completion, refusal_body
from paperclip.engine.context.snapshot import SnapshotBindingError
from paperclip.engine.tools.base import ToolContext, ToolOutcome, error
from paperclip.models import Run
from paperclip.prompts import read_execution_input, validate_completion


async def finish(ctx: ToolContext) -> ToolOutcome:
    run, arguments = await ctx.run(), ctx.arguments
    if run.result is not None:
        return error("already_finished", "this run already reported its result", result=run.result)
    references = arguments.get("references") or []
    refused = await refused_references(ctx, references) if references else []
    if refused:
        # A correction the model can act on in the same turn.
        return error(
            "completion_reference_not_rendered",
            "some references point to sources your prompt did not show; cite only the task, "
            "description and comments rendered to you, with the revision shown, then call finish again",
            refused=refused,
        )
    report = CompletionReport(status=arguments["outcome"], summary=arguments["summary"])
    try:
        # The binding first, then the read receipt: the validator the terminal guard runs too.
        refusal = await check_completion(
            ctx.session, run, CompletionStage.FEEDBACK, report, ctx.plugins
        )
    except SnapshotBindingError as exc:
        return error(exc.code, str(exc))
    if refusal is not None:
        # A bounded correction the model can act on in the same turn.
        body = refusal_body(refusal)
        return error(body.pop("code"), body.pop("message"), **body)
    run.result = {
        "outcome": arguments["outcome"],
        "summary": arguments["summary"],
        "details": arguments.get("details") or {},
        "references": references,
        "command_id": ctx.call.command_id,
    }
    return ToolOutcome({"accepted": True, "outcome": arguments["outcome"]})


async def block(ctx: ToolContext) -> ToolOutcome:
    run = await ctx.run()
    if run.result is not None:
        return error("already_finished", "this run already reported its result", result=run.result)
    run.result = {
        "outcome": "blocked",
        "summary": ctx.arguments["reason"],
        "details": {},
        "command_id": ctx.call.command_id,
    }
    return ToolOutcome({"accepted": True, "outcome": "blocked"})


async def refused_references(
    ctx: ToolContext, references: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The references that the run's persisted execution input (v5 or v4) did not render."""
    # The dispatch loads runs without their execution input: it is the whole prompt.
    stored = (
        await ctx.session.execute(select(Run.execution_input).where(Run.id == ctx.locked.id))
    ).scalar_one()
    if stored is None:
        return [dict(r, reason="not_rendered") for r in references]
    wanted = tuple(
        CompletionReference(SourceKind(r["kind"]), r["id"], r.get("revision")) for r in references
    )
    check = validate_completion(read_execution_input(stored), wanted, ctx.plugins)
    return [
        {
            "kind": item.reference.kind.value,
            "id": item.reference.id,
            "revision": item.reference.revision,
            "reason": item.reason,
        }
        for item in check.refused
    ]
