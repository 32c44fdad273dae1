"""The JSON Schema of the agent's Pi provider config (``ProviderKind.config_schema``).

The control plane checks an agent's config against it when the agent is created
or changed; the driver checks the same rules again (``PiSettings.from_config``)
because a runner may serve an older control plane.
"""

from __future__ import annotations

from typing import Any

from paperclip_provider_kit import schema

from paperclip_pi.config import APIS, THINKING, TIMEOUT_BOUNDS

CONFIG_SCHEMA: dict[str, Any] = schema.config_schema(
    "Pi provider config",
    {
        "launch": schema.LAUNCH,
        "base_url": schema.base_url("An OpenAI-compatible endpoint, e.g. .../v1."),
        "api": {"enum": list(APIS), "description": "Which OpenAI wire base_url speaks."},
        "model": schema.model("The model: its name at base_url, or Pi's 'provider/model'."),
        "env_key": schema.ENV_KEY,
        "thinking": {"enum": [*THINKING, None], "description": "Pi's thinking level."},
        "resume_fallback": schema.RESUME_FALLBACK,
        "request_timeout_seconds": schema.seconds(
            TIMEOUT_BOUNDS, "request_timeout_seconds", "Bound on every command."
        ),
        "turn_timeout_seconds": schema.seconds(
            TIMEOUT_BOUNDS, "turn_timeout_seconds", "Abort a turn that runs longer.", nullable=True
        ),
        "close_timeout_seconds": schema.seconds(
            TIMEOUT_BOUNDS, "close_timeout_seconds", "SIGTERM to SIGKILL grace."
        ),
    },
)
