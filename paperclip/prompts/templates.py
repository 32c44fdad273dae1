"""Custom prompt templates: ``{{ name }}`` and ``{{ name.key.key }}`` placeholders.

A template keeps every variable it had: ``taskMarkdown`` (the historical
brief, with the latest wake comment), ``wakePrompt``, ``wakeJson`` and
``context``; ``taskMarkdownAssignment`` and ``turnContext`` are added. Unknown
names render as nothing, as they always did.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)*)\s*\}\}")


def render_template(template: str, variables: Mapping[str, Any]) -> tuple[str, frozenset[str]]:
    """Fill ``template``; return the text and the placeholders it filled."""
    used: set[str] = set()

    def fill(match: re.Match[str]) -> str:
        path = match.group(1).split(".")
        value: Any = variables
        for key in path:
            if not isinstance(value, Mapping) or key not in value:
                return ""
            value = value[key]
        used.add(match.group(1))
        if value is None:
            return ""
        if isinstance(value, str):
            return value
        return json.dumps(value, ensure_ascii=False, sort_keys=True)

    # One pass: a value that itself contains ``{{ ... }}`` is not expanded again.
    return _PLACEHOLDER.sub(fill, template), frozenset(used)
