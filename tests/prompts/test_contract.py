"""The prompt-rendering contract: every hook is firstresult, documented and tested."""

from __future__ import annotations

import re
from pathlib import Path

import paperclip_hookspecs.prompts as prompt_specs
import pytest

from paperclip.plugin_host.builtin import prompts as plugin

ROOT = Path(__file__).resolve().parents[2]
HOOKS = sorted(n for n in dir(prompt_specs) if n.startswith("paperclip_"))


def test_the_family_declares_its_hooks() -> None:
    assert HOOKS == [
        "paperclip_build_turn_context",
        "paperclip_render_completion_recovery",
        "paperclip_render_continuation",
        "paperclip_render_task_markdown",
        "paperclip_render_wake_prompt",
        "paperclip_select_prompt_sections",
        "paperclip_validate_completion_references",
    ]


# Deprecated hooks: the core never calls them, so the built-in rendering does not implement them.
DEPRECATED: list[str] = []


@pytest.mark.parametrize("name", HOOKS)
def test_each_prompt_hook_is_firstresult_and_builtin_is_trylast(name: str) -> None:
    spec = getattr(prompt_specs, name).paperclip_spec
    assert spec["firstresult"] is True
    if name in DEPRECATED:
        assert isinstance(spec["warn_on_impl"], DeprecationWarning)
        assert not hasattr(plugin, name)
    else:
        assert getattr(plugin, name).paperclip_impl["trylast"] is True


@pytest.mark.parametrize("name", HOOKS)
def test_each_prompt_hook_is_documented(name: str) -> None:
    page = (ROOT / "docs" / "plugins" / "prompt-rendering.md").read_text()
    assert f"## `{name}`" in page
    assert f"def {name}(" in page


@pytest.mark.parametrize("name", HOOKS)
def test_each_prompt_hook_has_a_test_named_after_it(name: str) -> None:
    sources = "\n".join(p.read_text() for p in Path(__file__).parent.glob("test_*.py"))
    assert re.search(rf"def test_\w*{name}\w*\(", sources)
