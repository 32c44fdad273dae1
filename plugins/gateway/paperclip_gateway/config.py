"""The agent's gateway settings: which conversation a run continues, and the bounds of a turn.

An agent's config selects and tunes; which gateway is reached and with which
secrets is the runner host's launch profile (:mod:`paperclip_gateway.profile`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from paperclip_provider_kit.config import (
    PROFILE,
    ConfigError,
    choice,
    matching,
    refuse_unknown,
    timeouts,
)

SUPPORTED_GATEWAY = "2026.9.6"
"""The OpenClaw version this plugin is tested against (tox env ``gateway-cli``)."""
SESSION_PREFIX = "paperclip"
RESERVED_NAMESPACES = ("subagent:", "cron:", "acp:", "agent:")
"""Session keys OpenClaw keeps for itself."""

TIMEOUT_BOUNDS = {
    "request_timeout_seconds": (1.0, 3600.0),
    "turn_timeout_seconds": (1.0, 86400.0),
    "reconnect_seconds": (1.0, 3600.0),
}
DEFAULT_TURN_TIMEOUT_SECONDS = 3600.0
"""An hour: far above an agent turn's usual minutes, yet a run the gateway lost or never
ends (its restart without the run, a run stuck in its queue) fails within the hour
instead of holding the issue ``running``. An agent sets its own; null is this default."""
_SESSION_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")
_AGENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")

SessionStrategy = Literal["issue", "fixed", "run"]
STRATEGIES = ("issue", "fixed", "run")


__all__ = ["ConfigError", "GatewaySettings"]


@dataclass(frozen=True, slots=True)
class GatewaySettings:
    """The agent's provider configuration, validated. Build it with :meth:`from_config`."""

    launch: str = "default"
    session_key_strategy: SessionStrategy = "issue"
    session_key: str | None = None
    agent_id: str | None = None
    request_timeout_seconds: float = 60.0
    turn_timeout_seconds: float = DEFAULT_TURN_TIMEOUT_SECONDS
    """A turn's gateway runs (follow-ups included) past this are aborted: nothing on the
    runner ends with a lost gateway run, so without a bound its turn could wait forever."""
    reconnect_seconds: float = 120.0
    """How long a lost connection is retried before the turn fails."""

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> GatewaySettings:
        hint = "; the gateway and its secrets are the runner host's launch profile"
        secrets = {"url", "token", "password", "command"} & set(config)
        refuse_unknown("gateway", config, cls.__dataclass_fields__, hint if secrets else "")
        values: dict[str, Any] = {}
        if "launch" in config:
            values["launch"] = matching("launch", config["launch"], PROFILE, "a profile name")
        if "session_key_strategy" in config:
            strategy = config["session_key_strategy"]
            values["session_key_strategy"] = choice("session_key_strategy", strategy, STRATEGIES)
        if config.get("session_key") is not None:
            key = matching("session_key", config["session_key"], _SESSION_KEY, "a session key")
            if key.startswith(RESERVED_NAMESPACES):
                raise ConfigError(
                    f"session_key must not start with {', '.join(RESERVED_NAMESPACES)}"
                )
            values["session_key"] = key
        if config.get("agent_id") is not None:
            values["agent_id"] = matching("agent_id", config["agent_id"], _AGENT, "an agent id")
        values.update(timeouts(config, TIMEOUT_BOUNDS))
        settings = cls(**values)
        if settings.session_key_strategy == "fixed" and settings.session_key is None:
            raise ConfigError("session_key_strategy 'fixed' needs session_key")
        return settings

    def session_key_for(self, run_id: str, issue_id: str | None) -> str:
        """The gateway conversation this run continues."""
        if self.session_key_strategy == "fixed" and self.session_key is not None:
            return self.session_key
        if self.session_key_strategy == "issue" and issue_id is not None:
            return f"{SESSION_PREFIX}:issue:{issue_id}"
        return f"{SESSION_PREFIX}:run:{run_id}"
