"""The agent's OpenCode settings, and the ``opencode.json`` derived from them.

An agent's config selects and tunes; it never names a program, a path or a
command. What OpenCode runs is the runner's launch profile; its home and
configuration are the run's own (``XDG_*`` folders under the run's state
dir). The run's tools reach OpenCode as a remote MCP server whose bearer token
travels only in an environment variable (``{env:...}`` in the config file).
"""

from __future__ import annotations

import json
import math
import os
import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from paperclip_hookspecs.providers import McpEndpoint

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

_PROFILE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_MODEL = re.compile(r"^[A-Za-z0-9_.:@+-][A-Za-z0-9_.:/@+-]{0,199}$")
_ENV_NAME = re.compile(r"^[A-Z][A-Z0-9_]{0,63}$")
_URL = re.compile(r"^https?://[^\s/]+(/\S*)?$")

ResumeFallback = Literal["fail", "fresh"]


class ConfigError(ValueError):
    """The agent's provider configuration is not usable; the message says which key and why."""


@dataclass(frozen=True, slots=True)
class OpenCodeSettings:
    """The agent's provider configuration, validated. Build it with :meth:`from_config`."""

    launch: str = "default"
    base_url: str | None = None
    model: str | None = None
    env_key: str = "OPENAI_API_KEY"
    bash: str = "allow"
    resume_fallback: ResumeFallback = "fail"
    request_timeout_seconds: float = 60.0
    startup_timeout_seconds: float = 60.0
    turn_timeout_seconds: float | None = None
    close_timeout_seconds: float = 5.0

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> OpenCodeSettings:
        """Validate a provider configuration mapping; raise :class:`ConfigError` on bad input."""
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(config) - known)
        if unknown:
            hint = ""
            if "command" in unknown:
                hint = "; the runner host decides the command (an agent selects 'launch')"
            raise ConfigError(
                f"unknown opencode config key(s): {', '.join(unknown)}; "
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
        for key, choices in (("bash", BASH_POLICIES), ("resume_fallback", ("fail", "fresh"))):
            if key in config:
                if config[key] not in choices:
                    raise ConfigError(f"{key} must be one of {', '.join(choices)}")
                values[key] = config[key]
        for key in ("request_timeout_seconds", "startup_timeout_seconds", "close_timeout_seconds"):
            if key in config:
                values[key] = seconds(key, config[key])
        if config.get("turn_timeout_seconds") is not None:
            values["turn_timeout_seconds"] = seconds(
                "turn_timeout_seconds", config["turn_timeout_seconds"]
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
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "opencode.json"
    fd, tmp = tempfile.mkstemp(prefix=".opencode.", suffix=".json", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(doc, out, indent=1)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def env_key(value: Any) -> str:
    """The variable whose value is sent to ``base_url`` as the key: a model key, never the
    runner's own secrets."""
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
