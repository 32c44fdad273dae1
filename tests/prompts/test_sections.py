"""Section selection for every lane (``paperclip_select_prompt_sections``)."""

from __future__ import annotations

from typing import Any

import pytest
from paperclip_hookspecs import hookimpl
from paperclip_hookspecs.prompts import (
    Lane,
    Placement,
    ProviderCarriers,
    SectionRequest,
    SectionSelection,
    SessionAttempt,
    TaskMarkdownMode,
    WakeSource,
)

from paperclip.prompts import AssemblyRequest, assemble_execution_input
from tests.prompts.support import BUILTIN

from .support import make_comment, make_task

FRESH, RESUMED, RETRY = SessionAttempt.FRESH, SessionAttempt.RESUMED, SessionAttempt.FRESH_RETRY
USER, SYSTEM, OMIT = Placement.USER_PROMPT, Placement.SYSTEM_CARRIER, Placement.OMIT
FULL, COMPACT = TaskMarkdownMode.FULL, TaskMarkdownMode.COMPACT


def full(**changes: Any) -> dict[str, Any]:
    expected = dict(
        bootstrap=True, default_rules=USER, instructions=True, task_markdown=FULL,
        assignment_only=True, history=True, continuation=False, wake_prompt=True,
        wake_rules=USER, wake_json=False,
    )  # fmt: skip
    return expected | changes


def delta(**changes: Any) -> dict[str, Any]:
    expected = dict(
        bootstrap=False, default_rules=OMIT, instructions=False, task_markdown=COMPACT,
        assignment_only=True, history=False, continuation=False, wake_prompt=True,
        wake_rules=OMIT, wake_json=False,
    )  # fmt: skip
    return expected | changes


def rows() -> list[tuple[str, SectionRequest, dict[str, Any]]]:
    table = []
    for lane in Lane:
        table.append(
            (f"{lane} fresh gets the full brief", SectionRequest(lane, FRESH, True), full())
        )
        table.append(
            (
                f"{lane} fresh retry gets the full brief again",
                SectionRequest(lane, RETRY, True, has_continuation=True),
                full(),
            )
        )
        table.append(
            (
                f"{lane} resumed gets the delta",
                SectionRequest(lane, RESUMED, True, has_continuation=True),
                delta(continuation=lane is Lane.NATIVE),
            )
        )
    table += [
        ("native resumed without a continuation gets the wake delta only",
         SectionRequest(Lane.NATIVE, RESUMED, True), delta()),
        ("missing metadata: full markdown renders comments itself",
         SectionRequest(Lane.LEGACY_CLI, FRESH, False), full(assignment_only=False)),
        ("missing metadata: gateway appends the wake JSON",
         SectionRequest(Lane.GATEWAY, FRESH, False), full(assignment_only=False, wake_json=True)),
        ("missing metadata: a resumed gateway appends it too",
         SectionRequest(Lane.GATEWAY, RESUMED, False), delta(assignment_only=False, wake_json=True)),
        ("Pi carries the default rules in its system extension",
         SectionRequest(Lane.LEGACY_CLI, FRESH, True, "pi", ProviderCarriers(default_rules=True)),
         full(default_rules=SYSTEM)),
        ("Pi resumed: the carrier still holds the rules",
         SectionRequest(Lane.LEGACY_CLI, RESUMED, True, "pi", ProviderCarriers(default_rules=True)),
         delta(default_rules=SYSTEM)),
        ("a gateway contract carrier takes the wake copy, the event delta stays",
         SectionRequest(Lane.GATEWAY, FRESH, True, "gateway", ProviderCarriers(execution_contract=True)),
         full(default_rules=SYSTEM, wake_rules=SYSTEM)),
        ("a custom template is recorded in the selection",
         SectionRequest(Lane.CLOUD, FRESH, True, custom_template=True), full(custom_template=True)),
    ]  # fmt: skip
    return table


SECTION_SELECTION_RULES = rows()


@pytest.mark.parametrize(
    ("request_", "expected"),
    [r[1:] for r in SECTION_SELECTION_RULES],
    ids=[r[0] for r in SECTION_SELECTION_RULES],
)
def test_paperclip_select_prompt_sections_section_selection_rules(
    request_: SectionRequest, expected: dict[str, Any], hooks: Any
) -> None:
    assert hooks.select_prompt_sections(request_) == SectionSelection(**expected)


def test_paperclip_select_prompt_sections_follows_the_dispatched_attempt() -> None:
    """A failed resume followed by a permitted fresh retry selects the full brief again."""
    task = make_task()
    wake = WakeSource("comment", (make_comment("c-1", "Please continue."),))
    base = dict(task=task, wake=wake, lane=Lane.ACP, run_id="run-1")
    resumed = assemble_execution_input(AssemblyRequest(**base, attempt=RESUMED), BUILTIN)
    retry = assemble_execution_input(
        AssemblyRequest(**base, attempt=RETRY, previous=resumed.execution_input), BUILTIN
    )
    assert resumed.execution_input.attempt is RESUMED
    assert "## Paperclip run" not in resumed.prompt
    assert retry.execution_input.attempt is RETRY
    assert retry.execution_input.selection == SectionSelection(**full())
    for heading in (
        "## Paperclip run",
        "## Paperclip rules",
        "## Paperclip task\n",
        "previous session",
    ):
        assert heading in retry.prompt
    assert "Please continue." in retry.prompt


def test_paperclip_select_prompt_sections_a_provider_plugin_answers_for_its_own_provider(
    hooks: Any, paperclip_register_plugin: Any
) -> None:
    class KimiSections:
        @hookimpl
        def paperclip_select_prompt_sections(
            self, request: SectionRequest
        ) -> SectionSelection | None:
            if request.provider != "kimi":
                return None
            return SectionSelection(**full(instructions=False))

    paperclip_register_plugin(KimiSections())
    kimi = hooks.select_prompt_sections(SectionRequest(Lane.CLOUD, FRESH, True, "kimi"))
    other = hooks.select_prompt_sections(SectionRequest(Lane.CLOUD, FRESH, True, "codex"))
    assert kimi.instructions is False
    assert other.instructions is True
