"""The agent's Pi settings, and Pi's configuration and command line derived from them.

An agent's config selects and tunes; it never names a program, a path or a
command. What runs is the runner's launch profile; Pi's agent folder
(``PI_CODING_AGENT_DIR``: ``models.json``, ``settings.json``) and its sessions
are the run's own. A model key is named by an environment variable, never
written: Pi's ``apiKey`` would run a ``!command`` or read a variable, and only
the variable form is ever written.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

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

_PROFILE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_MODEL = re.compile(r"^[A-Za-z0-9_.:@+-][A-Za-z0-9_.:/@+-]{0,199}$")
_ENV_NAME = re.compile(r"^[A-Z][A-Z0-9_]{0,63}$")
_URL = re.compile(r"^https?://[^\s/]+(/\S*)?$")

ResumeFallback = Literal["fail", "fresh"]


class ConfigError(ValueError):
    """The agent's provider configuration is not usable; the message says which key and why."""


@dataclass(frozen=True, slots=True)
class PiSettings:
    """The agent's provider configuration, validated. Build it with :meth:`from_config`."""

    launch: str = "default"
    base_url: str | None = None
    api: str = "openai-completions"
    model: str | None = None
    env_key: str = "OPENAI_API_KEY"
    thinking: str | None = None
    resume_fallback: ResumeFallback = "fail"
    request_timeout_seconds: float = 60.0
    turn_timeout_seconds: float | None = None
    close_timeout_seconds: float = 5.0

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> PiSettings:
        """Validate a provider configuration mapping; raise :class:`ConfigError` on bad input."""
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(config) - known)
        if unknown:
            hint = ""
            if "command" in unknown:
                hint = "; the runner host decides the command (an agent selects 'launch')"
            raise ConfigError(
                f"unknown pi config key(s): {', '.join(unknown)}; "
                f"known: {', '.join(sorted(known))}{hint}"
            )
        values: dict[str, Any] = {}
        if "launch" in config:
            values["launch"] = _matching("launch", config["launch"], _PROFILE, "a profile name")
        if config.get("base_url") is not None:
            values["base_url"] = _matching("base_url", config["base_url"], _URL, "an http(s) URL")
            if len(values["base_url"]) > 2000:
                raise ConfigError("base_url must be at most 2000 characters")
        if config.get("model") is not None:
            values["model"] = _matching("model", config["model"], _MODEL, "a model name")
        if "env_key" in config:
            values["env_key"] = env_key(config["env_key"])
        for key, choices in (
            ("api", APIS),
            ("resume_fallback", ("fail", "fresh")),
        ):
            if key in config:
                if config[key] not in choices:
                    raise ConfigError(f"{key} must be one of {', '.join(choices)}")
                values[key] = config[key]
        if config.get("thinking") is not None:
            if config["thinking"] not in THINKING:
                raise ConfigError(f"thinking must be one of {', '.join(THINKING)}")
            values["thinking"] = config["thinking"]
        for key in ("request_timeout_seconds", "close_timeout_seconds"):
            if key in config:
                values[key] = seconds(key, config[key])
        if config.get("turn_timeout_seconds") is not None:
            values["turn_timeout_seconds"] = seconds(
                "turn_timeout_seconds", config["turn_timeout_seconds"]
            )
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


def env_key(value: Any) -> str:
    """The variable Pi reads the model key from: a model key, never the runner's own secrets."""
    if (
        not isinstance(value, str)
        or not _ENV_NAME.match(value)
        or not value.endswith("_API_KEY")
        or value.startswith("PAPERCLIP_")
    ):
        raise ConfigError(
            "env_key must name the variable holding the endpoint's key: upper case, "
            "ending in _API_KEY, not a PAPERCLIP_ variable (e.g. OPENAI_API_KEY)"
        )
    return value


def seconds(key: str, value: Any) -> float:
    low, high = TIMEOUT_BOUNDS[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise ConfigError(f"{key} must be a number of seconds")
    if not low <= value <= high:
        raise ConfigError(f"{key} must be between {low:g} and {high:g} seconds")
    return float(value)


def _matching(key: str, value: Any, pattern: re.Pattern[str], what: str) -> str:
    if not isinstance(value, str) or not pattern.match(value):
        raise ConfigError(f"{key} must be {what} matching {pattern.pattern}")
    return value
