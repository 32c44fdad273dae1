"""Properties over generated issues and comment sets (duplicates, edits, deletions, equal bodies).

Every current source has exactly one owner in the rendered prompt, and a
completion reference validates only for a source whose block was rendered.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from paperclip_hookspecs.prompts import (
    CommentSource,
    CommentTrust,
    CompletionReference,
    ContinuationMessage,
    Lane,
    ProviderCarriers,
    RenderLimits,
    SessionAttempt,
    SourceKind,
    TaskMarkdownMode,
    WakeSource,
)

from paperclip.prompts import AssemblyRequest, assemble_execution_input, validate_completion
from paperclip.revisions import revision, source_text
from tests.prompts.support import BUILTIN

from .support import ADA, BUILDER, ISSUE, make_comment, make_task

OTHER_ISSUE = "issue-9"
BODIES = ["LGTM", "  LGTM ", "Please keep the query string.", "", "```\nx\n```", "a\r\nb"]

bodies = st.one_of(st.sampled_from(BODIES), st.text(max_size=40))
comment_ids = st.sampled_from([f"c-{n}" for n in range(8)])


@st.composite
def comments(draw: st.DrawFn) -> CommentSource:
    return make_comment(
        draw(comment_ids),
        draw(bodies),
        issue_id=draw(st.sampled_from([ISSUE, ISSUE, ISSUE, OTHER_ISSUE])),
        author=draw(st.sampled_from([ADA, BUILDER])),
        trust=draw(st.sampled_from(list(CommentTrust))),
        edited=draw(st.booleans()),
        deleted=draw(st.integers(0, 4)) == 0,
    )


@st.composite
def resume_deltas(draw: st.DrawFn, wake: tuple[CommentSource, ...]) -> Any:
    """Messages derived from the wake: same body, edited, deleted, other issue, other id."""
    messages = []
    for comment in draw(st.lists(st.sampled_from(wake), max_size=6)) if wake else []:
        change = draw(st.sampled_from(["same", "edited", "deleted", "other_issue", "other_id"]))
        messages.append(
            ContinuationMessage(
                id=f"{comment.id}-x" if change == "other_id" else comment.id,
                issue_id=OTHER_ISSUE if change == "other_issue" else comment.issue_id,
                body=comment.body + " (edited)" if change == "edited" else comment.body,
                author=comment.author,
                trust=comment.trust,
                deleted=change == "deleted",
            )
        )
    return tuple(messages)


@dataclass(frozen=True)
class Scenario:
    request: AssemblyRequest
    history: tuple[CommentSource, ...]


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    wake = tuple(draw(st.lists(comments(), max_size=10)))
    history = tuple(draw(st.lists(comments(), max_size=4)))
    attempt = draw(st.sampled_from(list(SessionAttempt)))
    task = make_task(description=draw(bodies), title=draw(st.sampled_from(["Fix it", " "])))
    limits = RenderLimits(
        max_inline_comments=draw(st.integers(1, 10)),
        max_comment_chars=draw(st.sampled_from([5, 8_000])),
        max_description_chars=draw(st.sampled_from([5, 20_000])),
        max_continuation_messages=draw(st.integers(0, 6)),
    )
    request = AssemblyRequest(
        task=task,
        wake=WakeSource("comment", wake, draw(st.integers(0, 3))),
        lane=draw(st.sampled_from(list(Lane))),
        attempt=attempt,
        carriers=ProviderCarriers(draw(st.booleans()), draw(st.booleans())),
        history=history,
        resume_delta=draw(resume_deltas(wake)) if draw(st.booleans()) else None,
        limits=limits,
    )
    if attempt is SessionAttempt.RESUMED and draw(st.booleans()):
        # A session whose previous brief may or may not match the current description.
        earlier = make_task(description=draw(st.sampled_from([task.description, "older"])))
        previous = assemble_execution_input(
            AssemblyRequest(earlier, WakeSource("comment"), request.lane, SessionAttempt.FRESH),
            BUILTIN,
        ).execution_input
        request = AssemblyRequest(**{**_fields(request), "previous": previous})
    return Scenario(request, history)


def _fields(request: AssemblyRequest) -> dict[str, Any]:
    return {name: getattr(request, name) for name in AssemblyRequest.__dataclass_fields__}


PROPERTY_SETTINGS = settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@PROPERTY_SETTINGS
@given(scenarios())
def test_every_current_source_has_exactly_one_owner_in_the_rendered_prompt(
    scenario: Scenario,
) -> None:
    result = assemble_execution_input(scenario.request, BUILTIN)
    value = result.execution_input
    context = value.turn_context
    assert context is not None

    current = [c for c in value.wake.comments if not c.deleted]
    assert [(r.id, r.revision) for r in context.events.comments] == [
        (c.id, revision(c.body)) for c in current
    ]
    assert len({r.id for r in context.events.comments}) == len(context.events.comments)

    rendered = value.model.rendered_sources
    counts = Counter((b.kind, b.id) for b in rendered)
    for ref in context.events.comments:
        assert counts[(SourceKind.COMMENT, ref.id)] == 1, ref.id
    owned_ids = {r.id for r in context.events.comments}
    for block in rendered:
        if block.kind is SourceKind.COMMENT:
            assert block.id in owned_ids
            assert block.section in {"wake_prompt", "continuation"}
            assert block.revision == revision(next(c.body for c in current if c.id == block.id))

    description = source_text(scenario.request.task.description)
    expected = 0 if not description else None
    if description and value.selection.task_markdown is TaskMarkdownMode.FULL:
        expected = 1
    n = counts[(SourceKind.DESCRIPTION, ISSUE)]
    assert n == expected if expected is not None else n <= 1

    # The blocks are evidence of real text: each owned body (as cut) is in the prompt.
    limit = scenario.request.limits.max_comment_chars
    for comment in current:
        if comment.body:
            assert comment.body[:limit] in result.prompt


@PROPERTY_SETTINGS
@given(scenarios(), st.data())
def test_references_validate_only_for_rendered_sources(scenario: Scenario, data: Any) -> None:
    value = assemble_execution_input(scenario.request, BUILTIN).execution_input
    rendered = {(b.kind, b.id): b.revision for b in value.model.rendered_sources}

    candidates = [
        CompletionReference(SourceKind.TASK, ISSUE),
        CompletionReference(SourceKind.TASK, OTHER_ISSUE),
    ]
    candidates.append(
        CompletionReference(
            SourceKind.DESCRIPTION, ISSUE, revision(scenario.request.task.description)
        )
    )
    for comment in (*scenario.request.wake.comments, *scenario.history):
        candidates.append(
            CompletionReference(SourceKind.COMMENT, comment.id, revision(comment.body))
        )
        candidates.append(CompletionReference(SourceKind.COMMENT, comment.id, revision("stale")))
    references = tuple(data.draw(st.lists(st.sampled_from(candidates), max_size=8)))

    check = validate_completion(value, references, BUILTIN)
    for ref in references:
        key = (ref.kind, ref.id)
        valid = key in rendered and (ref.kind is SourceKind.TASK or rendered[key] == ref.revision)
        assert (ref in check.accepted) is valid, ref
