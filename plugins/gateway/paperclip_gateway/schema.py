"""The JSON Schema of the agent's gateway provider config (``ProviderKind.config_schema``)."""

from __future__ import annotations

from typing import Any

from paperclip_provider_kit import schema

from paperclip_gateway.config import STRATEGIES, TIMEOUT_BOUNDS


def _seconds(key: str, description: str, nullable: bool = False) -> dict[str, Any]:
    return schema.seconds(TIMEOUT_BOUNDS, key, description, nullable)


CONFIG_SCHEMA: dict[str, Any] = schema.config_schema(
    "Gateway provider config",
    {
        "launch": {
            **schema.LAUNCH,
            "description": "A gateway profile of the runner, by name (default: 'default').",
        },
        "session_key_strategy": {
            "enum": list(STRATEGIES),
            "description": "One gateway conversation per issue, one for every run, or one per run.",
        },
        "session_key": {
            "type": ["string", "null"],
            "pattern": "^(?!(subagent|cron|acp|agent):)[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$",
            "description": "The conversation of strategy 'fixed'.",
        },
        "agent_id": {
            "type": ["string", "null"],
            "pattern": "^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$",
            "description": "The gateway's agent to run (default: the gateway's default agent).",
        },
        "request_timeout_seconds": _seconds("request_timeout_seconds", "Bound on every request."),
        "turn_timeout_seconds": _seconds(
            "turn_timeout_seconds",
            "Abort a turn that takes longer (default 3600; null is the default).",
            nullable=True,
        ),
        "reconnect_seconds": _seconds(
            "reconnect_seconds", "How long a lost connection is retried before the turn fails."
        ),
    },
)
