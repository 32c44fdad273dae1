"""The agent's Pi settings, and Pi's configuration and command line derived from them.

An agent's config selects and tunes; it never names a program, a path or a
command. What runs is the runner's launch profile; Pi's agent folder
(``PI_CODING_AGENT_DIR``: ``models.json``, ``settings.json``) and its sessions
are the run's own. A model key is named by an environment variable, never
written: Pi's ``apiKey`` would run a ``!command`` or read a variable, and only
the variable form is ever written.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from paperclip_provider_kit.config import ConfigError, EndpointSettings, checked_values, choice

DEFAULT_COMMAND: tuple[str, ...] = ("pi",)
"""The ``default`` launch profile; the driver appends ``--mode rpc`` and the run's flags."""
SUPPORTED_CLI = "0.73.1"
"""The Pi version this plugin is tested against (tox env ``pi-cli``); 0.73 runs on Node 20."""
PROVIDER_NAME = "paperclip"
"""The provider entry written into ``models.json`` when ``base_url`` is set."""
MCP_URL_ENV_VAR = "PAPERCLIP_MCP_URL"
MCP_TOKEN_ENV_VAR = "PAPERCLIP_MCP_BEARER_TOKEN"
"""Where the bundled extension finds the run's tools and their token."""
EXTENSION = Path(__file__).with_name("extension") / "paperclip-tools.js"
"""The Pi extension that gives the model the run's tools (Pi has no MCP client)."""

OFFLINE_ENV = {"PI_OFFLINE": "1", "PI_SKIP_VERSION_CHECK": "1", "PI_TELEMETRY": "0"}
"""Pi's switches for its startup network operations (update checks, install telemetry)."""
FIXED_FLAGS = (
    "--mode",
    "rpc",
    # Only the bundled extension: no extension, skill, prompt template or theme of
    # the runner's user or of the work tree is loaded into a run.
    "--no-extensions",
    "--no-skills",
    "--no-prompt-templates",
    "--no-themes",
    "--no-context-files",
)

TIMEOUT_BOUNDS = {
    "request_timeout_seconds": (1.0, 3600.0),
    "turn_timeout_seconds": (1.0, 86400.0),
    "close_timeout_seconds": (0.1, 120.0),
}
APIS = ("openai-completions", "openai-responses")
THINKING = ("off", "minimal", "low", "medium", "high")


__all__ = ["ConfigError", "PiSettings"]


@dataclass(frozen=True, slots=True)
class PiSettings(EndpointSettings):
    """The agent's provider configuration, validated. Build it with :meth:`from_config`."""

    api: str = "openai-completions"
    thinking: str | None = None

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> PiSettings:
        """Validate a provider configuration mapping; raise :class:`ConfigError` on bad input."""
        values = checked_values(
            "pi",
            config,
            cls.__dataclass_fields__,
            choices={"api": APIS, "resume_fallback": ("fail", "fresh")},
            bounds=TIMEOUT_BOUNDS,
            hint="; the runner host decides the command (an agent selects 'launch')"
            if "command" in config
            else "",
        )
        if config.get("thinking") is not None:
            values["thinking"] = choice("thinking", config["thinking"], THINKING)
        return cls(**values)

    def models_document(self) -> dict[str, Any]:
        """``models.json``: the model endpoint, its key named by a variable."""
        if self.base_url is None:
            return {"providers": {}}
        models = [{"id": self.model}] if self.model else []
        provider = {
            "baseUrl": self.base_url,
            "api": self.api,
            "apiKey": self.env_key,
            "models": models,
        }
        return {"providers": {PROVIDER_NAME: provider}}

    def settings_document(self) -> dict[str, Any]:
        """``settings.json``: the default model, no install telemetry."""
        doc: dict[str, Any] = {"enableInstallTelemetry": False, "quietStartup": True}
        if self.model is not None:
            if self.base_url is not None:
                doc["defaultProvider"] = PROVIDER_NAME
                doc["defaultModel"] = self.model
            else:
                provider, sep, model = self.model.partition("/")
                if sep:
                    doc["defaultProvider"], doc["defaultModel"] = provider, model
        if self.thinking is not None:
            doc["defaultThinkingLevel"] = self.thinking
        return doc
