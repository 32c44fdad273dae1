"""Executing server-owned tools inside the controller's fenced transaction.

A write tool's effect, its receipt and the journal's result commit together,
so a pending journal entry always means "no effect", and a replay of a command
finds its receipt and gets the saved result as ``duplicate``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from jsonschema import Draft202012Validator
from paperclip_hookspecs.prompts import CompletionReference, SourceKind
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from paperclip.db.driver import driver_connection
from paperclip.engine.events import NewEvent, append_many
from paperclip.engine.journal import CallInput, Receipt
from paperclip.models import Comment, Issue, Run
from paperclip.prompts import read_execution_input, validate_completion
from paperclip.services.actor import Actor
from paperclip.services.comments import add_comment
from paperclip.tools.catalog import BY_NAME


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    result: dict[str, Any]
    is_error: bool = False
    events: tuple[NewEvent, ...] = ()
    """Entries for the run's log: appended with the other effects, for the whole batch at once."""
    receipt: Receipt | None = None
    """A write tool's new receipt: recorded with the call's result (``journal.settle_many``)."""


@cache
def validator(tool: str) -> Draft202012Validator:
    """The argument validator of a tool, built once."""
    return Draft202012Validator(BY_NAME[tool].input_schema)


def error(code: str, message: str, **details: Any) -> ToolOutcome:
    return ToolOutcome({"error": {"code": code, "message": message, **details}}, is_error=True)


def command_id_of(call: CallInput) -> str:
    """The command id of a call, scoped to its run.

    The model's own ``command_id`` when it gave one (so a retry of the same
    action is the same command), else the call's id (stable across replays).
    """
    chosen = call.arguments.get("command_id")
    return f"{call.run_id}:cmd:{chosen}" if chosen else f"{call.run_id}:{call.call_id}"


def revision(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


async def execute_many(
    session: AsyncSession, work: Sequence[tuple[Run, CallInput]]
) -> list[ToolOutcome]:
    """Run calls in order, in the caller's transaction (their runs' rows locked): what the model gets.

    The receipts of the whole batch are looked up in one statement and the
    log entries of all its effects appended in one; the new receipts are
    returned in the outcomes, for the settlement to record with the results.
    """
    # Only a model-chosen command id can have a receipt already: a call's own id
    # is the command of a call that is still pending, so it has no effect yet.
    commands = [
        command_id_of(call)
        for _, call in work
        if (spec := BY_NAME.get(call.tool)) is not None
        and spec.writes
        and call.arguments.get("command_id")
    ]
    receipts: dict[str, Receipt] = {}
    connection = await driver_connection(session)  # the runs are locked: the transaction has begun
    if commands:
        rows = await connection.fetch(RECEIPTS, commands)
        receipts = {row["command_id"]: Receipt(**row) for row in rows}
    outcomes = [await _execute(session, run, call, receipts) for run, call in work]
    await append_many(
        session,
        [(run, "tool", outcome.events) for (run, _), outcome in zip(work, outcomes, strict=True)],
        may_repeat=False,  # the calls are pending, so none of their effects was committed
    )
    return outcomes


RECEIPTS = """
SELECT command_id, company_id, run_id, tool, state_revision, result
FROM tool_receipts WHERE command_id = ANY($1::text[])
"""


async def _execute(
    session: AsyncSession,
    run: Run,
    call: CallInput,
    receipts: dict[str, Receipt],
) -> ToolOutcome:
    spec = BY_NAME.get(call.tool)
    if spec is None:
        return error("unknown_tool", f"there is no tool named {call.tool!r}")
    problems = sorted(validator(spec.name).iter_errors(call.arguments), key=lambda e: e.path)
    if problems:
        return error(
            "invalid_arguments",
            f"the arguments of {call.tool} are not valid: {problems[0].message}",
        )
    actor = Actor(type="agent", id=str(run.agent_id), company_id=run.company_id, run_id=run.id)
    if not spec.writes:
        return await READS[call.tool](session, run, call.arguments)

    command_id = command_id_of(call)
    receipt = receipts.get(command_id)
    if receipt is not None:
        if receipt.run_id != run.id or receipt.company_id != run.company_id:
            return error("foreign_receipt", "this command belongs to another run")
        return ToolOutcome({**receipt.result, "receipt": receipt.body("duplicate")})
    outcome = await WRITES[call.tool](session, run, call, actor)
    if outcome.is_error:
        return outcome
    receipt = Receipt(
        command_id=command_id,
        company_id=run.company_id,
        run_id=run.id,
        tool=call.tool,
        state_revision=outcome.result.pop("_state_revision", revision(outcome.result)),
        result=outcome.result,
    )
    receipts[command_id] = receipt  # a later call of this batch with this command is a duplicate
    return ToolOutcome(
        {**outcome.result, "receipt": receipt.body("applied")},
        events=outcome.events,
        receipt=receipt,
    )


# Read tools


async def get_task_context(session: AsyncSession, run: Run, _: dict[str, Any]) -> ToolOutcome:
    if run.issue_id is None:
        return ToolOutcome({"issue": None, "comments": []})
    issue = await session.get(Issue, run.issue_id)
    if issue is None:
        return error("issue_not_found", "the task of this run no longer exists")
    comments = (
        await session.execute(
            select(Comment)
            .where(Comment.issue_id == issue.id, Comment.deleted_at.is_(None))
            .order_by(Comment.created_at, Comment.id)
        )
    ).scalars()
    return ToolOutcome(
        {
            "issue": {
                "id": str(issue.id),
                "identifier": issue.identifier,
                "title": issue.title,
                "description": issue.description,
                "status": issue.status,
                "priority": issue.priority,
                "parent_id": str(issue.parent_id) if issue.parent_id else None,
            },
            "comments": [
                {
                    "id": str(c.id),
                    "author": (
                        {"agent_id": str(c.author_agent_id)}
                        if c.author_agent_id
                        else {"user_id": c.author_user_id}
                    ),
                    "body": c.body,
                    "revision": c.revision,
                    "created_at": c.created_at.isoformat(),
                    "edited": c.edited_at is not None,
                }
                for c in comments
            ],
        }
    )


# Write tools: return the result without the receipt; "_state_revision" names the state made.


async def post_comment(
    session: AsyncSession, run: Run, call: CallInput, actor: Actor
) -> ToolOutcome:
    if run.issue_id is None:
        return error("no_task", "this run has no task to comment on")
    comment = await add_comment(
        session, actor, run.company_id, run.issue_id, body=call.arguments["body"]
    )
    return ToolOutcome({"comment_id": str(comment.id), "_state_revision": comment.revision})


async def report_progress(
    session: AsyncSession, run: Run, call: CallInput, actor: Actor
) -> ToolOutcome:
    summary = call.arguments["summary"]
    # The journal row's id is unique, so it is the event's replay key.
    return ToolOutcome(
        {"recorded": True}, events=(NewEvent(call.id, "progress", {"summary": summary}),)
    )


async def finish(session: AsyncSession, run: Run, call: CallInput, actor: Actor) -> ToolOutcome:
    if run.result is not None:
        return error(
            "already_finished",
            "this run already reported its result",
            result=run.result,
        )
    references = call.arguments.get("references") or []
    refused = refused_references(
        await execution_input_of(session, run) if references else None, references
    )
    if refused:
        # A correction the model can act on in the same turn.
        return error(
            "completion_reference_not_rendered",
            "some references point to sources your prompt did not show; cite only the task, "
            "description and comments rendered to you, with the revision shown, then call finish again",
            refused=refused,
        )
    run.result = {
        "outcome": call.arguments["outcome"],
        "summary": call.arguments["summary"],
        "details": call.arguments.get("details") or {},
        "references": call.arguments.get("references") or [],
        "command_id": command_id_of(call),
    }
    return ToolOutcome({"accepted": True, "outcome": call.arguments["outcome"]})


async def execution_input_of(session: AsyncSession, run: Run) -> dict[str, Any] | None:
    """The run's persisted execution input (the dispatch loads runs without it: it is the whole prompt)."""
    return (await session.execute(select(Run.execution_input).where(Run.id == run.id))).scalar_one()


def refused_references(
    execution_input: dict[str, Any] | None, references: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The references that the run's persisted execution input (v5 or v4) did not render."""
    if not references:
        return []
    wanted = tuple(
        CompletionReference(SourceKind(r["kind"]), r["id"], r.get("revision")) for r in references
    )
    if execution_input is None:
        return [dict(r, reason="not_rendered") for r in references]
    check = validate_completion(read_execution_input(execution_input), wanted)
    return [
        {
            "kind": item.reference.kind.value,
            "id": item.reference.id,
            "revision": item.reference.revision,
            "reason": item.reason,
        }
        for item in check.refused
    ]


async def block(session: AsyncSession, run: Run, call: CallInput, actor: Actor) -> ToolOutcome:
    if run.result is not None:
        return error("already_finished", "this run already reported its result", result=run.result)
    run.result = {
        "outcome": "blocked",
        "summary": call.arguments["reason"],
        "details": {},
        "command_id": command_id_of(call),
    }
    return ToolOutcome({"accepted": True, "outcome": "blocked"})


READS = {"get_task_context": get_task_context}
WRITES = {
    "post_comment": post_comment,
    "report_progress": report_progress,
    "finish": finish,
    "block": block,
}
