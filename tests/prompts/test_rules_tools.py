"""The rules send the model only to tools that exist (issue 9: no attachment or related-task tools)."""

from __future__ import annotations

import re

from paperclip.prompts.rules import DEFAULT_RULES, WAKE_RULES
from paperclip.wire.tools import TOOLS


def test_the_rules_name_every_catalog_tool_and_nothing_else() -> None:
    named = set(re.findall(r"`([a-z_]+)`", DEFAULT_RULES + WAKE_RULES))
    assert named == {tool.name for tool in TOOLS}


def test_the_rules_promise_no_tool_for_attachments_or_related_tasks() -> None:
    text = (DEFAULT_RULES + WAKE_RULES).lower()
    assert "related task" not in text
    assert "no paperclip tool opens them" in text
    assert "through the paperclip tools" not in text
