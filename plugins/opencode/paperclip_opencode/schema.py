"""The JSON Schema of the agent's OpenCode provider config (``ProviderKind.config_schema``).

The control plane checks an agent's config against it when the agent is created
or changed; the driver checks the same rules again (``OpenCodeSettings.from_config``)
because a runner may serve an older control plane.
"""

from __future__ import annotations

from typing import Any

from paperclip_opencode.config import BASH_POLICIES, TIMEOUT_BOUNDS


def _seconds(key: str, description: str, nullable: bool = False) -> dict[str, Any]:
    low, high = TIMEOUT_BOUNDS[key]
    return {
        "type": ["number", "null"] if nullable else "number",
        "minimum": low,
        "maximum": high,
        "description": description,
    }


CONFIG_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "OpenCode provider config",
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "launch": {
            "type": "string",
            "pattern": "^[A-Za-z0-9_.-]{1,64}$",
            "description": "A launch profile of the runner, by name (default: 'default').",
        },
        "base_url": {
            "type": ["string", "null"],
            "maxLength": 2000,
            "pattern": "^https?://[^\\s/]+(/\\S*)?$",
            "description": "An OpenAI-compatible endpoint (Chat Completions), e.g. .../v1.",
        },
        "model": {
            "type": ["string", "null"],
            "pattern": "^[A-Za-z0-9_.:@+-][A-Za-z0-9_.:/@+-]{0,199}$",
            "description": "The model: its name at base_url, or OpenCode's 'provider/model'.",
        },
        "env_key": {
            "type": "string",
            "pattern": "^(?!PAPERCLIP_)[A-Z][A-Z0-9_]{0,55}_API_KEY$",
            "description": "The runner's environment variable holding the endpoint's key.",
        },
        "bash": {
            "enum": list(BASH_POLICIES),
            "description": "OpenCode's permission for its shell tool.",
        },
        "resume_fallback": {
            "enum": ["fail", "fresh"],
            "description": "When the session to resume is gone: fail the turn, or start afresh.",
        },
        "request_timeout_seconds": _seconds("request_timeout_seconds", "Bound on every request."),
        "startup_timeout_seconds": _seconds(
            "startup_timeout_seconds", "How long `opencode serve` may take to listen."
        ),
        "turn_timeout_seconds": _seconds(
            "turn_timeout_seconds", "Abort a turn that runs longer.", nullable=True
        ),
        "close_timeout_seconds": _seconds("close_timeout_seconds", "SIGTERM to SIGKILL grace."),
    },
}
