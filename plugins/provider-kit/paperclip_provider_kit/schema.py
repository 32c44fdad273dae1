"""Pieces of a provider's config JSON Schema (``ProviderKind.config_schema``) every provider shares.

The control plane checks an agent's config against the schema when the agent
is created or changed; the driver checks the same rules again (the
:mod:`paperclip_provider_kit.config` checks) because a runner may serve an
older control plane. The patterns here are those checks' patterns.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

LAUNCH = {
    "type": "string",
    "pattern": "^[A-Za-z0-9_.-]{1,64}$",
    "description": "A launch profile of the runner, by name (default: 'default').",
}
ENV_KEY = {
    "type": "string",
    "pattern": "^(?!PAPERCLIP_)[A-Z][A-Z0-9_]{0,55}_API_KEY$",
    "description": "The runner's environment variable holding the endpoint's key.",
}
RESUME_FALLBACK = {
    "enum": ["fail", "fresh"],
    "description": "When the session to resume is gone: fail the turn, or start afresh.",
}


def base_url(description: str) -> dict[str, Any]:
    """An optional http(s) URL of a model endpoint."""
    return {
        "type": ["string", "null"],
        "maxLength": 2000,
        "pattern": "^https?://[^\\s/]+(/\\S*)?$",
        "description": description,
    }


def model(description: str) -> dict[str, Any]:
    """An optional model name."""
    return {
        "type": ["string", "null"],
        "pattern": "^[A-Za-z0-9_.:@+-][A-Za-z0-9_.:/@+-]{0,199}$",
        "description": description,
    }


def seconds(
    bounds: Mapping[str, tuple[float, float]], key: str, description: str, nullable: bool = False
) -> dict[str, Any]:
    """A number of seconds within ``bounds[key]``; ``nullable``: null means no bound."""
    low, high = bounds[key]
    return {
        "type": ["number", "null"] if nullable else "number",
        "minimum": low,
        "maximum": high,
        "description": description,
    }


def config_schema(title: str, properties: Mapping[str, Any]) -> dict[str, Any]:
    """A provider config: an object of exactly these properties."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": title,
        "type": "object",
        "additionalProperties": False,
        "properties": dict(properties),
    }
