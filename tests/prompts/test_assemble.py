"""The run engine's entry point: ``assemble_execution_input`` across lanes and carriers."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import paperclip_hookspecs.prompts as prompt_specs
import pytest
from paperclip_hookspecs import hookimpl
from paperclip_hookspecs.prompts import (
    Lane,
    ProviderCarriers,
    RenderedSection,
    SessionAttempt,
    SourceBlock,
    SourceKind,
    TaskSource,
    WakePromptOptions,
    WakeSource,
)

from paperclip.plugin_host import NoPluginAnswerError, PluginHookError, PluginHost
from paperclip.prompts import (
    AgentBrief,
    AssemblyRequest,
    OwnershipError,
    assemble_execution_input,
)
from paperclip.prompts.rules import DEFAULT_RULES

from .support import BUILTIN, ISSUE, make_comment, make_task

TASK = make_task()
WAKE = WakeSource(
    "comment",
    (make_comment("c-1", "Start with the login form."), make_comment("c-2", "Keep the query.")),
)


def assemble(hooks: PluginHost = BUILTIN, **changes: Any) -> Any:
    base = AssemblyRequest(
        TASK, WAKE, Lane.NATIVE, SessionAttempt.FRESH, run_id="run-1", agent=AgentBrief("Builder")
    )
    return assemble_execution_input(replace(base, **changes), hooks)


def test_each_owned_source_is_rendered_once_on_a_fresh_native_run() -> None:
    result = assemble()
    assert result.prompt.count("They should return to where they were.") == 1
    assert result.prompt.count("Keep the query.") == 1
    assert "Latest wake comment" not in result.prompt
    assert json.loads(json.dumps(result.envelope)) == result.envelope


def test_missing_metadata_falls_back_to_the_legacy_wake_behaviour() -> None:
    result = assemble(ownership=False, lane=Lane.GATEWAY)
    assert "### Latest wake comment" in result.prompt
    assert "Structured wake payload JSON:" in result.prompt
    assert result.execution_input.turn_context is None


def test_gateway_json_is_omitted_only_when_the_wake_prompt_owns_the_event() -> None:
    owned = assemble(lane=Lane.GATEWAY)
    assert "Structured wake payload JSON:" not in owned.prompt
    assert owned.prompt.count("Keep the query.") == 1


def test_pi_user_prompt_carries_no_second_copy_of_the_default_rules() -> None:
    pi = ProviderCarriers(default_rules=True)
    result = assemble(lane=Lane.LEGACY_CLI, provider="pi", carriers=pi)
    assert "## Paperclip rules" not in result.prompt
    assert result.system is not None and DEFAULT_RULES in result.system
    assert "How to read a wake" in result.prompt  # the wake keeps its own rules


def test_a_gateway_contract_carrier_takes_the_wake_copy_but_not_the_event_delta() -> None:
    contract = ProviderCarriers(execution_contract=True)
    result = assemble(lane=Lane.GATEWAY, provider="gateway", carriers=contract)
    assert "How to read a wake" not in result.prompt
    assert "Keep the query." in result.prompt
    assert result.system is not None and "How to read a wake" in result.system


def test_custom_templates_keep_every_variable() -> None:
    template = (
        "TASK={{ taskMarkdown }}\nASSIGNMENT={{taskMarkdownAssignment}}\nWAKE={{ wakePrompt }}\n"
        "JSON={{ wakeJson }}\nTITLE={{ context.issue.title }}\nOWNER={{ turnContext.events.owner }}"
        "\nMISSING=[{{ nothing.here }}]"
    )
    result = assemble(custom_template=template)
    prompt = result.prompt
    assert "TASK=## Paperclip task" in prompt and "### Latest wake comment" in prompt
    assignment = prompt.split("ASSIGNMENT=", 1)[1].split("\nWAKE=", 1)[0]
    assert "Latest wake comment" not in assignment
    assert "WAKE=## Paperclip wake" in prompt
    payload = json.loads(prompt.split("JSON=", 1)[1].split("\nTITLE=", 1)[0])
    assert [c["id"] for c in payload["comments"]] == ["c-1", "c-2"]
    assert "TITLE=Fix the login redirect" in prompt
    assert "OWNER=wake_prompt" in prompt
    assert "MISSING=[]" in prompt
    assert result.execution_input.selection.custom_template


def test_a_plugin_that_renders_a_comment_twice_breaks_ownership(
    paperclip_plugin_host: PluginHost, paperclip_register_plugin: Any
) -> None:
    class Echo:
        @hookimpl
        def paperclip_render_wake_prompt(
            self, wake: WakeSource, task: TaskSource, options: WakePromptOptions
        ) -> RenderedSection:
            blocks = tuple(
                SourceBlock(SourceKind.COMMENT, c.id, None, "wake_prompt") for c in wake.comments
            )
            return RenderedSection("wake_prompt", "echo", blocks + blocks)

    paperclip_register_plugin(Echo())
    with pytest.raises(OwnershipError, match="c-1"):
        assemble(paperclip_plugin_host)


def test_a_host_without_the_builtin_plugin_says_what_is_missing(
    paperclip_bare_plugin_host: PluginHost,
) -> None:
    with pytest.raises(NoPluginAnswerError, match="PAPERCLIP_PLUGINS_DISABLE"):
        assemble(paperclip_bare_plugin_host)


def test_a_plugin_answer_of_the_wrong_type_is_refused(
    paperclip_plugin_host: PluginHost, paperclip_register_plugin: Any
) -> None:
    class Wrong:
        @hookimpl
        def paperclip_render_task_markdown(self, task: TaskSource, options: Any) -> str:
            return "a string"

    paperclip_register_plugin(Wrong())
    with pytest.raises(PluginHookError, match="returned str from paperclip_render_task_markdown"):
        assemble(paperclip_plugin_host)


def test_the_builtin_plugin_module_implements_every_prompt_hook_not_deprecated() -> None:
    from paperclip.plugin_host.builtin import prompts as plugin

    declared = {
        n
        for n in dir(prompt_specs)
        if n.startswith("paperclip_")
        and not getattr(prompt_specs, n).paperclip_spec.get("warn_on_impl")
    }
    implemented = {n for n in dir(plugin) if n.startswith("paperclip_")}
    assert declared == implemented


def test_comments_of_another_issue_never_reach_the_prompt() -> None:
    stray = make_comment("c-9", "Other issue's plan.", issue_id="issue-9")
    result = assemble(wake=WakeSource("comment", (*WAKE.comments, stray)))
    assert "Other issue's plan" not in result.prompt
    assert [c.id for c in result.execution_input.wake.comments] == ["c-1", "c-2"]
    assert result.execution_input.task.id == ISSUE
