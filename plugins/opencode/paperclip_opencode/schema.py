"""The JSON Schema of the agent's OpenCode provider config (``ProviderKind.config_schema``).

The control plane checks an agent's config against it when the agent is created
or changed; the driver checks the same rules again (``OpenCodeSettings.from_config``)
because a runner may serve an older control plane.
"""

from __future__ import annotations

from typing import Any

from paperclip_provider_kit import schema

from paperclip_opencode.config import BASH_POLICIES, TIMEOUT_BOUNDS

CONFIG_SCHEMA: dict[str, Any] = schema.config_schema(
    "OpenCode provider config",
    {
        "launch": schema.LAUNCH,
        "base_url": schema.base_url(
            "An OpenAI-compatible endpoint (Chat Completions), e.g. .../v1."
        ),
        "model": schema.model("The model: its name at base_url, or OpenCode's 'provider/model'."),
        "env_key": schema.ENV_KEY,
        "bash": {
            "enum": list(BASH_POLICIES),
            "description": "OpenCode's permission for its shell tool.",
        },
        "resume_fallback": schema.RESUME_FALLBACK,
        "request_timeout_seconds": schema.seconds(
            TIMEOUT_BOUNDS, "request_timeout_seconds", "Bound on every request."
        ),
        "startup_timeout_seconds": schema.seconds(
            TIMEOUT_BOUNDS,
            "startup_timeout_seconds",
            "How long `opencode serve` may take to listen.",
        ),
        "turn_timeout_seconds": schema.seconds(
            TIMEOUT_BOUNDS, "turn_timeout_seconds", "Abort a turn that runs longer.", nullable=True
        ),
        "close_timeout_seconds": schema.seconds(
            TIMEOUT_BOUNDS, "close_timeout_seconds", "SIGTERM to SIGKILL grace."
        ),
    },
)
