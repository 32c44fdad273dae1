"""The structured wake JSON appended by lanes whose legacy contract carries it.

It is a copy of the wake for machines and old harnesses: it renders no owned
source, so it cannot make a completion reference valid.
"""

from __future__ import annotations

import json
from typing import Any

from paperclip_hookspecs.prompts import RenderedSection

from paperclip.prompts.markdown import fence


def render_wake_json(payload: dict[str, Any]) -> RenderedSection:
    """``payload`` (``paperclipWake``) as a fenced JSON section."""
    text = json.dumps(payload, ensure_ascii=False, sort_keys=True, indent=2)
    return RenderedSection("wake_json", f"Structured wake payload JSON:\n{fence(text, 'json')}")
