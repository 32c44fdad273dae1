"""Reading the JSON a provider CLI sends, where any level may be missing or of another type."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def dig(value: Any, *keys: str) -> Any:
    """``value[k1][k2]…``, or None where a level is missing or not a mapping."""
    for key in keys:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value
