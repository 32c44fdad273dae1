"""The read-only view of a run that completion guards and presentation decisions are given.

Read in the caller's transaction, so a guard sees exactly what the check
sees: the comments the run posted, its journaled tool calls with their saved
results, and its wake snapshot as it is now. Bounded by the contract's limits
(``paperclip_hookspecs.runs``): the newest comments and calls, and no result
longer than the limit, with counts of what was left out.
"""

from __future__ import annotations

from typing import Any

from paperclip_hookspecs.runs import (
    MAX_VIEW_COMMENTS,
    MAX_VIEW_RESULT_CHARS,
    MAX_VIEW_TOOL_CALLS,
    RunBinding,
    RunComment,
    RunToolCall,
    RunView,
    ToolCallStatus,
    WakeSnapshot,
    frozen_json,
)
from sqlalchemy import Text, case, cast, func, select, type_coerce
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.ext.asyncio import AsyncSession

from paperclip.models import Comment, Run, ToolCall


def binding_of(run: Run) -> RunBinding:
    """The run as hooks name it: its id, company, task and agent."""
    return RunBinding(
        run_id=str(run.id),
        company_id=str(run.company_id),
        issue_id=str(run.issue_id or ""),
        agent_id=str(run.agent_id),
    )


async def run_view(session: AsyncSession, run: Run, snapshot: WakeSnapshot | None) -> RunView:
    """What ``run`` did so far, for a hook: its comments and tool calls (two bounded queries)."""
    comments, comments_total = await _comments(session, run)
    calls, calls_total = await _tool_calls(session, run)
    return RunView(
        binding=binding_of(run),
        comments=comments,
        tool_calls=calls,
        snapshot=snapshot,
        comments_omitted=comments_total - len(comments),
        tool_calls_omitted=calls_total - len(calls),
    )


async def _comments(session: AsyncSession, run: Run) -> tuple[tuple[RunComment, ...], int]:
    if run.issue_id is None:
        return (), 0
    rows = (
        await session.execute(
            select(
                Comment.id,
                Comment.body,
                Comment.revision,
                Comment.created_at,
                Comment.edited_at,
                func.count().over(),
            )
            .where(
                Comment.company_id == run.company_id,
                Comment.issue_id == run.issue_id,
                Comment.created_by_run_id == run.id,
                Comment.deleted_at.is_(None),
            )
            .order_by(Comment.created_at.desc(), Comment.id.desc())
            .limit(MAX_VIEW_COMMENTS)
        )
    ).all()
    comments = tuple(
        RunComment(
            id=str(row[0]),
            body=row[1],
            revision=row[2],
            created_at=row[3],
            edited=row[4] is not None,
        )
        for row in reversed(rows)
    )
    return comments, rows[0][5] if rows else 0


async def _tool_calls(session: AsyncSession, run: Run) -> tuple[tuple[RunToolCall, ...], int]:
    # A result over the limit is left out by the database: it never crosses to this process.
    too_long = func.length(cast(ToolCall.result, Text)) > MAX_VIEW_RESULT_CHARS
    rows = (
        await session.execute(
            select(
                ToolCall.call_id,
                ToolCall.tool,
                ToolCall.arguments,
                ToolCall.status,
                ToolCall.is_error,
                type_coerce(case((too_long, None), else_=ToolCall.result), JSONB),
                ToolCall.created_at,
                ToolCall.settled_at,
                func.coalesce(too_long, False),
                func.count().over(),
            )
            .where(ToolCall.company_id == run.company_id, ToolCall.run_id == run.id)
            .order_by(ToolCall.id.desc())
            .limit(MAX_VIEW_TOOL_CALLS)
        )
    ).all()
    calls = tuple(_call(row) for row in reversed(rows))
    return calls, rows[0][9] if rows else 0


def _call(row: Any) -> RunToolCall:
    result = frozen_json(row[5]) if row[5] is not None else None
    return RunToolCall(
        call_id=row[0],
        tool=row[1],
        arguments=frozen_json(row[2] or {}),  # type: ignore[arg-type]
        status=ToolCallStatus(row[3]),
        is_error=bool(row[4]),
        result=result,  # type: ignore[arg-type]
        created_at=row[6],
        settled_at=row[7],
        result_omitted=bool(row[8]),
    )
