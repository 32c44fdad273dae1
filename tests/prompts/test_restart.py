"""The restart continuation of a resumed session, assembled through the resumed lane."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from paperclip_hookspecs import hookimpl
from paperclip_hookspecs.prompts import (
    CommentTrust,
    ContinuationMessage,
    Lane,
    ProviderCarriers,
    SectionRequest,
    SectionSelection,
    SessionAttempt,
    WakeSource,
)

from paperclip.prompts import (
    EXECUTION_INPUT_V4,
    EXECUTION_INPUT_V5,
    AssemblyRequest,
    ExecutionInput,
    assemble_execution_input,
    read_execution_input,
)
from paperclip.prompts.restart import (
    NATIVE_CONTINUATION_V1,
    RESTART_INSTRUCTION,
    STEERED_INSTRUCTION,
    restart_continuation,
)
from paperclip.prompts.rules import DEFAULT_RULES
from paperclip.prompts.sections import select_prompt_sections
from tests.prompts.support import ADA, BUILTIN, ISSUE, make_comment, make_task

TASK = make_task()
ASK = make_comment("c-3", "Please also keep the query string.")
WAKE = WakeSource("comment", (ASK,))
STEER = ContinuationMessage("c-6", ISSUE, "Also cover the logout redirect.", ADA)


def first_input(*, ownership: bool = True) -> ExecutionInput:
    """A Codex run's first input: its rules travel in the provider's system carrier."""
    request = AssemblyRequest(
        TASK,
        WAKE,
        Lane.NATIVE,
        SessionAttempt.FRESH,
        run_id="run-42",
        provider="codex",
        carriers=ProviderCarriers(default_rules=True),
        ownership=ownership,
    )
    return assemble_execution_input(request, BUILTIN).execution_input


def trusted(message: ContinuationMessage) -> ContinuationMessage:
    return replace(message, trust=CommentTrust.TRUSTED)


def test_a_restart_continuation_is_the_resumed_lane_with_the_restart_instruction() -> None:
    restart = restart_continuation(first_input(), BUILTIN, turn=2, steered=(trusted(STEER),))
    stored = read_execution_input(restart.envelope["executionInput"])
    assert stored.schema == EXECUTION_INPUT_V5
    assert (stored.attempt, stored.lane) == (SessionAttempt.RESUMED, Lane.NATIVE)
    assert stored.model.prompt == restart.prompt == restart.envelope["prompt"]
    # The envelope the turn persists keeps its shape.
    assert restart.envelope["schema"] == NATIVE_CONTINUATION_V1
    assert (restart.envelope["reason"], restart.envelope["turn"]) == ("restart", 2)
    assert restart.envelope["steeredMessages"] == [
        {"id": "c-6", "issueId": ISSUE, "body": STEER.body}
    ]
    # The carrier stays; the compact brief names the description the session holds.
    assert restart.envelope["system"] == DEFAULT_RULES.strip("\n")
    assert "## Paperclip rules" not in restart.prompt
    assert "## Paperclip task (resumed session)" in restart.prompt
    assert "Description: unchanged since your brief" in restart.prompt
    assert restart.prompt.index("## Paperclip continuation") < restart.prompt.index(
        RESTART_INSTRUCTION
    )
    assert restart.prompt.endswith(STEERED_INSTRUCTION)
    assert restart.prompt.count(STEER.body) == 1


def test_a_steered_current_comment_is_suppressed_from_the_wake_copy_on_restart() -> None:
    # The steered message is the wake's own current comment, unchanged.
    same = trusted(ContinuationMessage("c-3", ISSUE, ASK.body, ADA))
    restart = restart_continuation(first_input(), BUILTIN, turn=2, steered=(same,))
    assert restart.prompt.count(ASK.body) == 1
    assert "Its text is shown unchanged in the continuation above." in restart.prompt
    assert "Continue with comment c-3 shown above" in restart.prompt
    stored = read_execution_input(restart.envelope["executionInput"])
    [comment] = [b for b in stored.completion_sources if b.kind.value == "comment"]
    assert (comment.id, comment.section) == ("c-3", "continuation")


def test_a_steered_comment_is_a_current_comment_of_the_restart_shown_once() -> None:
    """As the runtime passes it: the steer is a comment of the issue, so the continuation
    shows it, the wake delta points there, and the objective names it."""
    comment = make_comment("c-6", STEER.body, author=ADA, trust=CommentTrust.TRUSTED)
    restart = restart_continuation(
        first_input(), BUILTIN, turn=2, steered=(trusted(STEER),), steered_comments=(comment,)
    )
    assert restart.prompt.count(STEER.body) == 1
    assert "### Comment 2 of 2: c-6" in restart.prompt
    assert "Its text is shown unchanged in the continuation above." in restart.prompt
    assert "Continue with comment c-6 shown above" in restart.prompt
    assert restart.prompt.count(ASK.body) == 1  # the wake's own comment, in the wake delta
    stored = read_execution_input(restart.envelope["executionInput"])
    assert stored.turn_context is not None
    assert [c.id for c in stored.turn_context.events.comments] == ["c-3", "c-6"]
    assert {(b.id, b.section) for b in stored.completion_sources if b.kind.value == "comment"} == {
        ("c-3", "wake_prompt"),
        ("c-6", "continuation"),
    }


def test_an_edited_steered_comment_stays_visible_in_the_wake_copy_on_restart() -> None:
    edited = trusted(ContinuationMessage("c-3", ISSUE, "Keep the fragment too.", ADA))
    restart = restart_continuation(first_input(), BUILTIN, turn=2, steered=(edited,))
    assert "Its text is shown unchanged" not in restart.prompt
    assert restart.prompt.count(ASK.body) >= 1 and "Keep the fragment too." in restart.prompt


def test_a_v4_run_restarts_on_v4_with_the_full_objective() -> None:
    restart = restart_continuation(
        first_input(ownership=False), BUILTIN, turn=2, steered=(trusted(STEER),)
    )
    data = restart.envelope["executionInput"]
    assert data["schema"] == EXECUTION_INPUT_V4
    assert "paperclipTurnContext" not in data
    assert "objectiveSource" not in data["executionContinuation"]
    assert "Continue with comment" not in restart.prompt
    assert restart.envelope["system"] == DEFAULT_RULES.strip("\n")


def test_a_restart_without_steers_says_the_thread_has_nothing_new() -> None:
    restart = restart_continuation(first_input(), BUILTIN, turn=3)
    assert "The thread has no new messages since then." in restart.prompt
    assert STEERED_INSTRUCTION not in restart.prompt
    assert restart.envelope["steeredMessages"] == []


def test_without_a_selected_continuation_each_steer_still_reaches_the_model_once(
    hooks: Any, paperclip_register_plugin: Any
) -> None:
    """A plugin's selection may leave the continuation out: the steered comment is then in
    the wake delta (owned there), and a steer that is no comment (an answered card) follows."""

    class NoContinuation:
        @hookimpl
        def paperclip_select_prompt_sections(self, request: SectionRequest) -> SectionSelection:
            return replace(select_prompt_sections(request), continuation=False)

    paperclip_register_plugin(NoContinuation())
    comment = make_comment("c-6", STEER.body, author=ADA, trust=CommentTrust.TRUSTED)
    card = trusted(ContinuationMessage("card-1", ISSUE, "Answer: use the staging host.", ADA))
    restart = restart_continuation(
        first_input(), hooks, turn=2, steered=(trusted(STEER), card), steered_comments=(comment,)
    )
    assert restart.prompt.count(STEER.body) == 1
    assert restart.prompt.count(card.body) == 1
    stored = read_execution_input(restart.envelope["executionInput"])
    assert stored.continuation is None
    assert ("c-6", "wake_prompt") in {(b.id, b.section) for b in stored.completion_sources}
