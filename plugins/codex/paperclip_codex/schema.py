"""The JSON Schema of the agent's Codex provider config (``ProviderKind.config_schema``).

The control plane checks an agent's config against it when the agent is created
or changed; the driver checks the same rules again (``CodexSettings.from_config``)
because a runner may serve an older control plane.
"""

from __future__ import annotations

from typing import Any

from paperclip_provider_kit import schema

from paperclip_codex.config import (
    ALLOWED_OVERRIDES,
    APPROVAL_POLICIES,
    SANDBOX_MODES,
    TIMEOUT_BOUNDS,
    TOOL_APPROVAL_MODES,
)


def _seconds(key: str, description: str, nullable: bool = False) -> dict[str, Any]:
    return schema.seconds(TIMEOUT_BOUNDS, key, description, nullable)


OVERRIDE_VALUE = {
    "oneOf": [
        {"type": "string", "maxLength": 200},
        {"type": "number"},
        {"type": "boolean"},
    ]
}

CONFIG_SCHEMA: dict[str, Any] = schema.config_schema(
    "Codex provider config",
    {
        "launch": schema.LAUNCH,
        "base_url": schema.base_url("An OpenAI-compatible endpoint (Responses API), e.g. .../v1."),
        "model": {
            "type": ["string", "null"],
            "pattern": "^[A-Za-z0-9_.:/@+-]{1,200}$",
            "description": "The model name.",
        },
        "env_key": schema.ENV_KEY,
        "approval_policy": {"enum": list(APPROVAL_POLICIES)},
        "sandbox": {"enum": list(SANDBOX_MODES)},
        "approvals": {
            "enum": ["decline", "approve"],
            "description": "How command and file-change approval requests are answered.",
        },
        "tool_approval": {
            "enum": list(TOOL_APPROVAL_MODES),
            "description": "default_tools_approval_mode of the run's MCP server.",
        },
        "resume_fallback": {"enum": ["fail", "fresh"]},
        "request_timeout_seconds": _seconds(
            "request_timeout_seconds", "Bound on every JSON-RPC request."
        ),
        "turn_timeout_seconds": _seconds(
            "turn_timeout_seconds", "Interrupt a turn that runs longer.", nullable=True
        ),
        "close_timeout_seconds": _seconds("close_timeout_seconds", "SIGTERM to SIGKILL grace."),
        "mcp_tool_timeout_seconds": _seconds(
            "mcp_tool_timeout_seconds", "tool_timeout_sec of the run's MCP server.", nullable=True
        ),
        "config_overrides": {
            "type": "object",
            "description": "More Codex settings, from an allowlist.",
            "propertyNames": {"enum": sorted(ALLOWED_OVERRIDES)},
            "additionalProperties": OVERRIDE_VALUE,
        },
    },
)
