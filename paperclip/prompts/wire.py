"""The JSON shapes of prompt values, as persisted and as given to custom templates.

Keys are camelCase and stable: they are read back from runs and sessions
persisted by earlier versions. Readers raise :class:`WireError` on a shape they
cannot read, naming the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from paperclip_hookspecs.org_chart import ChainOfCommand, Colleague
from paperclip_hookspecs.prompts import (
    TASK_MARKDOWN_OWNER,
    TURN_CONTEXT_VERSION,
    WAKE_PROMPT_OWNER,
    AssignmentOwnership,
    Attachment,
    AuthorKind,
    CommentAuthor,
    CommentSource,
    CommentTrust,
    Continuation,
    ContinuationMessage,
    EventsOwnership,
    ExecutionWorkspace,
    ObjectiveSource,
    ParentTask,
    Placement,
    SectionSelection,
    SourceBlock,
    SourceKind,
    SourceRef,
    TaskMarkdownMode,
    TaskSource,
    TurnContext,
    WakeSource,
)

Wire = dict[str, Any]


class WireError(ValueError):
    """A persisted value does not have the shape its schema promises."""


def _get(data: Mapping[str, Any], key: str, kind: type, where: str) -> Any:
    value = data.get(key)
    if not isinstance(value, kind):
        raise WireError(f"{where}.{key}: expected {kind.__name__}, got {type(value).__name__}")
    return value


def _opt_str(data: Mapping[str, Any], key: str) -> str:
    value = data.get(key)
    return value if isinstance(value, str) else ""


# -- task --------------------------------------------------------------------------------


def task_to_wire(task: TaskSource) -> Wire:
    parent = task.parent
    wire: Wire = {
        "id": task.id,
        "identifier": task.identifier,
        "title": task.title,
        "description": task.description,
        "status": task.status,
        "priority": task.priority,
        "parent": None if parent is None else _parent_to_wire(parent),
        "acceptanceCriteria": list(task.acceptance_criteria),
    }
    if task.workspace is not None:
        # Only when there is one: envelopes of tasks without a project stay as they were.
        wire["workspace"] = workspace_to_wire(task.workspace)
    if task.chain is not None:
        wire["chain"] = chain_to_wire(task.chain)
    return wire


def _parent_to_wire(parent: ParentTask) -> Wire:
    wire: Wire = {"id": parent.id, "identifier": parent.identifier, "title": parent.title}
    if parent.goal:
        wire["goal"] = parent.goal
    return wire


def _colleague_to_wire(colleague: Colleague) -> Wire:
    return {
        "id": colleague.id,
        "name": colleague.name,
        "role": colleague.role,
        "status": colleague.status,
    }


def _colleague_from_wire(data: Any) -> Colleague | None:
    if not isinstance(data, Mapping) or not isinstance(data.get("id"), str):
        return None
    return Colleague(
        id=data["id"],
        name=_opt_str(data, "name"),
        role=_opt_str(data, "role"),
        status=_opt_str(data, "status"),
    )


def chain_to_wire(chain: ChainOfCommand) -> Wire:
    return {
        "manager": None if chain.manager is None else _colleague_to_wire(chain.manager),
        "reports": [_colleague_to_wire(r) for r in chain.reports],
        "moreReports": chain.more_reports,
    }


def chain_from_wire(data: Any) -> ChainOfCommand | None:
    if not isinstance(data, Mapping):
        return None
    reports = data.get("reports")
    more = data.get("moreReports")
    return ChainOfCommand(
        manager=_colleague_from_wire(data.get("manager")),
        reports=tuple(
            c for c in map(_colleague_from_wire, reports if isinstance(reports, list) else ()) if c
        ),
        more_reports=more if isinstance(more, int) and not isinstance(more, bool) else 0,
    )


def workspace_to_wire(workspace: ExecutionWorkspace) -> Wire:
    return {
        "path": workspace.path,
        "branch": workspace.branch,
        "baseRef": workspace.base_ref,
        "baseCommit": workspace.base_commit,
        "project": workspace.project,
        "repository": workspace.repository,
    }


def workspace_from_wire(data: Any) -> ExecutionWorkspace | None:
    if not isinstance(data, Mapping):
        return None
    return ExecutionWorkspace(
        path=_opt_str(data, "path"),
        branch=_opt_str(data, "branch"),
        base_ref=_opt_str(data, "baseRef"),
        base_commit=_opt_str(data, "baseCommit"),
        project=_opt_str(data, "project"),
        repository=_opt_str(data, "repository"),
    )


def task_from_wire(data: Mapping[str, Any]) -> TaskSource:
    parent = data.get("parent")
    return TaskSource(
        id=_get(data, "id", str, "issue"),
        identifier=_opt_str(data, "identifier"),
        title=_opt_str(data, "title"),
        description=_opt_str(data, "description"),
        status=_opt_str(data, "status"),
        priority=_opt_str(data, "priority"),
        parent=None
        if not isinstance(parent, Mapping)
        else ParentTask(
            id=_get(parent, "id", str, "issue.parent"),
            identifier=_opt_str(parent, "identifier"),
            title=_opt_str(parent, "title"),
            goal=_opt_str(parent, "goal"),
        ),
        acceptance_criteria=tuple(
            c for c in data.get("acceptanceCriteria") or () if isinstance(c, str)
        ),
        workspace=workspace_from_wire(data.get("workspace")),
        chain=chain_from_wire(data.get("chain")),
    )


# -- comments and the wake payload (``paperclipWake``) ------------------------------------


def author_to_wire(author: CommentAuthor) -> Wire:
    return {"kind": author.kind.value, "id": author.id, "name": author.name}


def author_from_wire(data: Mapping[str, Any]) -> CommentAuthor:
    return CommentAuthor(
        kind=AuthorKind(_get(data, "kind", str, "author")),
        id=_opt_str(data, "id"),
        name=_opt_str(data, "name"),
    )


def comment_to_wire(comment: CommentSource) -> Wire:
    return {
        "id": comment.id,
        "issueId": comment.issue_id,
        "body": comment.body,
        "author": author_to_wire(comment.author),
        "trust": comment.trust.value,
        "createdAt": comment.created_at,
        "edited": comment.edited,
        "deleted": comment.deleted,
        "attachments": [
            {"id": a.id, "name": a.name, "contentType": a.content_type, "sizeBytes": a.size_bytes}
            for a in comment.attachments
        ],
    }


def comment_from_wire(data: Mapping[str, Any]) -> CommentSource:
    return CommentSource(
        id=_get(data, "id", str, "comment"),
        issue_id=_get(data, "issueId", str, "comment"),
        body=_opt_str(data, "body"),
        author=author_from_wire(_get(data, "author", Mapping, "comment")),
        trust=CommentTrust(data.get("trust") or CommentTrust.UNTRUSTED.value),
        created_at=_opt_str(data, "createdAt"),
        edited=bool(data.get("edited")),
        deleted=bool(data.get("deleted")),
        attachments=tuple(
            Attachment(
                id=_get(a, "id", str, "attachment"),
                name=_opt_str(a, "name"),
                content_type=_opt_str(a, "contentType"),
                size_bytes=a.get("sizeBytes") if isinstance(a.get("sizeBytes"), int) else None,
            )
            for a in data.get("attachments") or ()
            if isinstance(a, Mapping)
        ),
    )


def wake_to_wire(wake: WakeSource, task: TaskSource) -> Wire:
    """``paperclipWake``: the structured wake JSON, complete (bodies are not cut here)."""
    included = len(wake.comments)
    return {
        "reason": wake.reason,
        "issue": {
            "id": task.id,
            "identifier": task.identifier,
            "title": task.title,
            "status": task.status,
        },
        "comments": [comment_to_wire(c) for c in wake.comments],
        "commentWindow": {
            "requestedCount": included + wake.omitted_count,
            "includedCount": included,
            "missingCount": wake.omitted_count,
        },
        "latestCommentId": wake.comments[-1].id if wake.comments else None,
        "fallbackFetchNeeded": wake.omitted_count > 0,
    }


def wake_from_wire(data: Mapping[str, Any]) -> WakeSource:
    window = data.get("commentWindow")
    missing = window.get("missingCount") if isinstance(window, Mapping) else 0
    return WakeSource(
        reason=_opt_str(data, "reason"),
        comments=tuple(
            comment_from_wire(c) for c in data.get("comments") or () if isinstance(c, Mapping)
        ),
        omitted_count=missing if isinstance(missing, int) else 0,
    )


# -- ownership (``paperclipTurnContext``) --------------------------------------------------


def _ref_to_wire(ref: SourceRef) -> Wire:
    return {"id": ref.id, "revision": ref.revision}


def _ref_from_wire(data: Any) -> SourceRef | None:
    if not isinstance(data, Mapping):
        return None
    ref_id, rev = data.get("id"), data.get("revision")
    if isinstance(ref_id, str) and isinstance(rev, str):
        return SourceRef(ref_id, rev)
    return None


def turn_context_to_wire(context: TurnContext) -> Wire:
    assignment: Wire = {"owner": context.assignment.owner}
    if context.assignment.description is not None:
        assignment["description"] = _ref_to_wire(context.assignment.description)
    return {
        "version": context.version,
        "assignment": assignment,
        "events": {
            "owner": context.events.owner,
            "comments": [_ref_to_wire(r) for r in context.events.comments],
        },
    }


def turn_context_from_wire(data: Any) -> TurnContext | None:
    """The v1 turn context, or None when it is missing or not one this reader knows.

    None means "no ownership metadata": the caller falls back to legacy wake rendering.
    """
    if not isinstance(data, Mapping) or data.get("version") != TURN_CONTEXT_VERSION:
        return None
    assignment, events = data.get("assignment"), data.get("events")
    if not isinstance(events, Mapping) or events.get("owner") != WAKE_PROMPT_OWNER:
        return None
    if not isinstance(assignment, Mapping) or assignment.get("owner") != TASK_MARKDOWN_OWNER:
        return None
    comments = tuple(_ref_from_wire(c) for c in events.get("comments") or ())
    if any(c is None for c in comments):
        return None
    return TurnContext(
        assignment=AssignmentOwnership(description=_ref_from_wire(assignment.get("description"))),
        events=EventsOwnership(comments=tuple(c for c in comments if c is not None)),
    )


# -- continuation (``executionContinuation``) ----------------------------------------------


def objective_source_to_wire(source: ObjectiveSource) -> Wire:
    return {"kind": source.kind, "id": source.id, "revision": source.revision}


def objective_source_from_wire(data: Any) -> ObjectiveSource | None:
    """The recorded objective source, or None when absent or unreadable (then: full objective)."""
    if not isinstance(data, Mapping):
        return None
    kind, source_id, rev = data.get("kind"), data.get("id"), data.get("revision")
    if kind not in ("comment", "description", "title"):
        return None
    if not isinstance(source_id, str) or not isinstance(rev, str):
        return None
    return ObjectiveSource(kind=kind, id=source_id, revision=rev)


def continuation_to_wire(continuation: Continuation, *, objective_source: bool) -> Wire:
    data: Wire = {
        "issueId": continuation.issue_id,
        "messages": [
            {
                "id": m.id,
                "issueId": m.issue_id,
                "body": m.body,
                "author": None if m.author is None else author_to_wire(m.author),
                "trust": m.trust.value,
                "deleted": m.deleted,
            }
            for m in continuation.messages
        ],
        "objective": continuation.objective,
    }
    if objective_source and continuation.objective_source is not None:
        data["objectiveSource"] = objective_source_to_wire(continuation.objective_source)
    return data


def continuation_from_wire(data: Any, *, objective_source: bool) -> Continuation | None:
    if not isinstance(data, Mapping):
        return None
    messages = []
    for m in data.get("messages") or ():
        if not isinstance(m, Mapping):
            continue
        author = m.get("author")
        messages.append(
            ContinuationMessage(
                id=_get(m, "id", str, "executionContinuation.messages"),
                issue_id=_opt_str(m, "issueId"),
                body=_opt_str(m, "body"),
                author=author_from_wire(author) if isinstance(author, Mapping) else None,
                trust=CommentTrust(m.get("trust") or CommentTrust.UNTRUSTED.value),
                deleted=bool(m.get("deleted")),
            )
        )
    return Continuation(
        issue_id=_get(data, "issueId", str, "executionContinuation"),
        messages=tuple(messages),
        objective=_opt_str(data, "objective"),
        objective_source=objective_source_from_wire(data.get("objectiveSource"))
        if objective_source
        else None,
    )


# -- section selection and rendered sources -------------------------------------------------


def selection_to_wire(selection: SectionSelection) -> Wire:
    return {
        "bootstrap": selection.bootstrap,
        "defaultRules": selection.default_rules.value,
        "instructions": selection.instructions,
        "taskMarkdown": selection.task_markdown.value,
        "assignmentOnly": selection.assignment_only,
        "history": selection.history,
        "continuation": selection.continuation,
        "wakePrompt": selection.wake_prompt,
        "wakeRules": selection.wake_rules.value,
        "wakeJson": selection.wake_json,
        "customTemplate": selection.custom_template,
    }


def selection_from_wire(data: Mapping[str, Any]) -> SectionSelection:
    return SectionSelection(
        bootstrap=bool(data.get("bootstrap")),
        default_rules=Placement(_get(data, "defaultRules", str, "sections")),
        instructions=bool(data.get("instructions")),
        task_markdown=TaskMarkdownMode(_get(data, "taskMarkdown", str, "sections")),
        assignment_only=bool(data.get("assignmentOnly")),
        history=bool(data.get("history")),
        continuation=bool(data.get("continuation")),
        wake_prompt=bool(data.get("wakePrompt")),
        wake_rules=Placement(_get(data, "wakeRules", str, "sections")),
        wake_json=bool(data.get("wakeJson")),
        custom_template=bool(data.get("customTemplate")),
    )


def source_block_to_wire(block: SourceBlock) -> Wire:
    return {
        "kind": block.kind.value,
        "id": block.id,
        "revision": block.revision,
        "section": block.section,
        "truncated": block.truncated,
    }


def source_block_from_wire(data: Mapping[str, Any]) -> SourceBlock:
    rev = data.get("revision")
    return SourceBlock(
        kind=SourceKind(_get(data, "kind", str, "renderedSources")),
        id=_get(data, "id", str, "renderedSources"),
        revision=rev if isinstance(rev, str) else None,
        section=_opt_str(data, "section"),
        truncated=bool(data.get("truncated")),
    )
