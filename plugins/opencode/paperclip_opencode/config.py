"""The agent's OpenCode settings, and the ``opencode.json`` derived from them.

An agent's config selects and tunes; it never names a program, a path or a
command. What OpenCode runs is the runner's launch profile; its home and
configuration are the run's own (``XDG_*`` folders under the run's state
dir). The run's tools reach OpenCode as a remote MCP server whose bearer token
travels only in an environment variable (``{env:...}`` in the config file).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from paperclip_hookspecs.providers import McpEndpoint
from paperclip_provider_kit.config import (
    ConfigError,
    EndpointSettings,
    checked_values,
    write_atomic,
)

DEFAULT_COMMAND: tuple[str, ...] = ("opencode", "serve")
"""The ``default`` launch profile; the driver appends ``--port P --hostname 127.0.0.1``."""
SUPPORTED_CLI = "1.18.33"
"""The OpenCode version this plugin is tested against (tox env ``opencode-cli``)."""
PROVIDER_ID = "paperclip"
"""The provider entry written into ``opencode.json`` when ``base_url`` is set."""
MCP_TOKEN_ENV_VAR = "PAPERCLIP_MCP_BEARER_TOKEN"
"""The variable that carries the run's MCP bearer token to the OpenCode process."""

OFFLINE_ENV = {
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_MODELS_FETCH": "1",
    "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
    "OPENCODE_DISABLE_SHARE": "1",
    "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
    "OPENCODE_DISABLE_CLAUDE_CODE": "1",
}
"""OpenCode's switches for what would reach outside hosts (updates, model lists, LSP
downloads, sharing, default plugins) or read another tool's files (Claude Code's)."""

DISABLED_TOOLS = ("webfetch", "websearch", "task", "question", "todowrite", "todoread", "skill")
"""Built-in tools a run does not offer the model: the web, sub-agents, asking a person
(nobody answers a headless run: the platform's way to ask is a comment), todo lists."""

BASH_POLICIES = ("allow", "deny")
"""``ask`` is not offered: a headless run has nobody to ask, so the turn would hang."""

TIMEOUT_BOUNDS = {
    "request_timeout_seconds": (1.0, 3600.0),
    "startup_timeout_seconds": (1.0, 600.0),
    "turn_timeout_seconds": (1.0, 86400.0),
    "close_timeout_seconds": (0.1, 120.0),
}


__all__ = ["ConfigError", "OpenCodeSettings", "write_config"]


@dataclass(frozen=True, slots=True)
class OpenCodeSettings(EndpointSettings):
    """The agent's provider configuration, validated. Build it with :meth:`from_config`."""

    bash: str = "allow"
    startup_timeout_seconds: float = 60.0

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> OpenCodeSettings:
        """Validate a provider configuration mapping; raise :class:`ConfigError` on bad input."""
        hint = "; the runner host decides the command (an agent selects 'launch')"
        values = checked_values(
            "opencode",
            config,
            cls.__dataclass_fields__,
            choices={"bash": BASH_POLICIES, "resume_fallback": ("fail", "fresh")},
            bounds=TIMEOUT_BOUNDS,
            hint=hint if "command" in config else "",
        )
        return cls(**values)

    @property
    def model_ref(self) -> tuple[str, str] | None:
        """``(providerID, modelID)`` for a prompt, or None for OpenCode's own default."""
        if self.model is None:
            return None
        if self.base_url is not None:
            return PROVIDER_ID, self.model
        provider, sep, model = self.model.partition("/")
        return (provider, model) if sep else None

    def config_document(self, mcp: McpEndpoint | None) -> dict[str, Any]:
        """The ``opencode.json`` for this agent and run."""
        doc: dict[str, Any] = {
            "$schema": "https://opencode.ai/config.json",
            "autoupdate": False,
            "share": "disabled",
            "permission": {"bash": self.bash, "edit": "allow", "webfetch": "deny"},
            "tools": dict.fromkeys(DISABLED_TOOLS, False),
        }
        ref = self.model_ref
        if ref is not None:
            doc["model"] = doc["small_model"] = f"{ref[0]}/{ref[1]}"
        if self.base_url is not None:
            models = {self.model: {"name": self.model}} if self.model else {}
            doc["provider"] = {
                PROVIDER_ID: {
                    "npm": "@ai-sdk/openai-compatible",
                    "name": "Paperclip model endpoint",
                    # OpenCode reads the key from the variable when it starts.
                    "options": {"baseURL": self.base_url, "apiKey": f"{{env:{self.env_key}}}"},
                    "models": models,
                }
            }
        if mcp is not None:
            doc["mcp"] = {
                mcp.name: {
                    "type": "remote",
                    "url": mcp.url,
                    "enabled": True,
                    # The token stays in the process environment, never in the file.
                    "headers": {"Authorization": f"Bearer {{env:{MCP_TOKEN_ENV_VAR}}}"},
                }
            }
        return doc


def write_config(folder: Path, doc: Mapping[str, Any]) -> Path:
    """Write ``opencode.json`` into ``folder`` atomically; returns its path."""
    return write_atomic(folder / "opencode.json", json.dumps(doc, indent=1))
