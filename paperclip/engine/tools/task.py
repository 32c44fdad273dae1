"""The task tools: read the task, comment on it, note progress."""

from __future__ import annotations

from paperclip.domain.issues.comments import add_comment, issue_comments
from paperclip.domain.issues.issue_parts import parts_of
from paperclip.engine.logs.events import NewEvent
from paperclip.engine.tools.base import ToolContext, ToolOutcome, error
from paperclip.models import Comment, Issue


async def get_task_context(ctx: ToolContext) -> ToolOutcome:
    run = ctx.locked
    if run.issue_id is None:
        return ToolOutcome({"issue": None, "comments": []})
    # The run's row is locked and its issue's deletion cascades to it: the issue exists.
    issue = await ctx.session.get_one(Issue, run.issue_id)
    comments = await issue_comments(ctx.session, issue.id)
    parts = await parts_of(ctx.session, issue.id)
    parent = await ctx.session.get(Issue, issue.parent_id) if issue.parent_id else None
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
            # The whole this task is a part of: its goal in full (the brief cuts it).
            "parent": None
            if parent is None
            else {
                "identifier": parent.identifier,
                "title": parent.title,
                "description": parent.description,
                "status": parent.status,
            },
            "comments": [_comment(c) for c in comments],
            "parts": [
                {"identifier": p.identifier, "title": p.title, "status": p.status} for p in parts
            ],
        }
    )


def _comment(comment: Comment) -> dict[str, object]:
    return {
        "id": str(comment.id),
        "author": (
            {"agent_id": str(comment.author_agent_id)}
            if comment.author_agent_id
            else {"user_id": comment.author_user_id}
        ),
        "body": comment.body,
        "revision": comment.revision,
        "created_at": comment.created_at.isoformat(),
        "edited": comment.edited_at is not None,
    }


async def post_comment(ctx: ToolContext) -> ToolOutcome:
    run = ctx.locked
    if run.issue_id is None:
        return error("no_task", "this run has no task to comment on")
    comment = await add_comment(
        ctx.session, ctx.actor, run.company_id, run.issue_id, body=ctx.arguments["body"]
    )
    return ToolOutcome({"comment_id": str(comment.id), "_state_revision": comment.revision})


def progress(arguments: dict[str, object], source_seq: int = 0) -> ToolOutcome:
    """``report_progress``'s outcome, which follows from its arguments alone."""
    return ToolOutcome(
        {"recorded": True},
        events=(NewEvent(source_seq, "progress", {"summary": arguments["summary"]}),),
    )


async def report_progress(ctx: ToolContext) -> ToolOutcome:
    # The journal row's id is unique, so it is the event's replay key.
    return progress(ctx.arguments, ctx.call.id)
