"""The agent's Codex settings, and the Codex configuration derived from them.

Static settings (model provider, approval policy, update checks, feature
switches) go to ``$CODEX_HOME/config.toml``. Everything that belongs to one run
(the MCP endpoint of the run's tools, the variable holding its bearer token)
goes on the command line as ``-c key=value`` overrides, so concurrent runs that
share a home never race on one file.
"""

from __future__ import annotations

import json
import math
import os
import re
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from paperclip_hookspecs.providers import McpEndpoint

DEFAULT_COMMAND: tuple[str, ...] = ("codex", "app-server")
MODEL_PROVIDER_NAME = "paperclip"
"""The ``[model_providers.<name>]`` entry written when ``base_url`` is set."""
MCP_TOKEN_ENV_VAR = "PAPERCLIP_MCP_BEARER_TOKEN"
"""The variable that carries the run's MCP bearer token to the provider process."""
CONFIG_MARKER = "# Written by paperclip-codex."
"""First line of a config.toml we own; a file without it is never overwritten."""

APPROVAL_POLICIES = ("never", "on-request", "on-failure", "untrusted")
SANDBOX_MODES = ("read-only", "workspace-write", "danger-full-access")

# Features that make Codex look up hosts outside the run (PROVIDERS.md); a
# control plane's agent has no use for them, so they are off by default.
DISABLED_FEATURES = (
    "plugins",
    "apps",
    "remote_plugin",
    "plugin_sharing",
    "tool_suggest",
    "api_key_model_discovery",
    "skill_mcp_dependency_install",
    "goals",
    "image_generation",
)

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

Approvals = Literal["decline", "approve"]
ResumeFallback = Literal["fail", "fresh"]


class ConfigError(ValueError):
    """The agent's provider configuration is not usable; the message says which key and why."""


@dataclass(frozen=True, slots=True)
class CodexSettings:
    """The agent's provider configuration, validated. Build it with :meth:`from_config`."""

    command: tuple[str, ...] = DEFAULT_COMMAND
    base_url: str | None = None
    model: str | None = None
    env_key: str = "OPENAI_API_KEY"
    approval_policy: str = "never"
    sandbox: str = "workspace-write"
    approvals: Approvals = "decline"
    resume_fallback: ResumeFallback = "fail"
    codex_home: str | None = None
    request_timeout_seconds: float = 60.0
    turn_timeout_seconds: float | None = None
    close_timeout_seconds: float = 5.0
    mcp_tool_timeout_seconds: float | None = None
    config_overrides: tuple[tuple[str, Any], ...] = field(default=())

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> CodexSettings:
        """Validate a provider configuration mapping; raise :class:`ConfigError` on bad input."""
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(config) - known)
        if unknown:
            raise ConfigError(
                f"unknown codex config key(s): {', '.join(unknown)}; known: {', '.join(sorted(known))}"
            )
        values: dict[str, Any] = {}
        if "command" in config:
            values["command"] = _argv(config["command"])
        for key in ("base_url", "model", "codex_home"):
            if key in config and config[key] is not None:
                values[key] = _text(key, config[key])
        if "env_key" in config:
            values["env_key"] = _env_name("env_key", config["env_key"])
        if "approval_policy" in config:
            values["approval_policy"] = _choice(
                "approval_policy", config["approval_policy"], APPROVAL_POLICIES
            )
        if "sandbox" in config:
            values["sandbox"] = _choice("sandbox", config["sandbox"], SANDBOX_MODES)
        if "approvals" in config:
            values["approvals"] = _choice("approvals", config["approvals"], ("decline", "approve"))
        if "resume_fallback" in config:
            values["resume_fallback"] = _choice(
                "resume_fallback", config["resume_fallback"], ("fail", "fresh")
            )
        for key in ("request_timeout_seconds", "close_timeout_seconds"):
            if key in config:
                values[key] = _seconds(key, config[key])
        for key in ("turn_timeout_seconds", "mcp_tool_timeout_seconds"):
            if key in config and config[key] is not None:
                values[key] = _seconds(key, config[key])
        if "config_overrides" in config:
            values["config_overrides"] = _overrides(config["config_overrides"])
        return cls(**values)

    def config_document(self) -> dict[str, Any]:
        """The static Codex configuration for this agent, as a nested mapping."""
        doc: dict[str, Any] = {
            "approval_policy": self.approval_policy,
            "sandbox_mode": self.sandbox,
            "check_for_update_on_startup": False,
        }
        if self.model is not None:
            doc["model"] = self.model
        if self.base_url is not None:
            doc["model_provider"] = MODEL_PROVIDER_NAME
        doc["analytics"] = {"enabled": False}
        doc["features"] = dict.fromkeys(DISABLED_FEATURES, False)
        if self.base_url is not None:
            doc["model_providers"] = {
                MODEL_PROVIDER_NAME: {
                    "name": "Paperclip model endpoint",
                    "base_url": self.base_url,
                    "env_key": self.env_key,
                    "wire_api": "responses",
                }
            }
        return doc


def mcp_overrides(
    endpoint: McpEndpoint, tool_timeout_seconds: float | None
) -> list[tuple[str, Any]]:
    """The ``-c`` overrides that configure the run's tools as a streamable-HTTP MCP server."""
    name = endpoint.name
    if not _BARE_KEY.match(name):
        raise ConfigError(f"MCP server name {name!r} must match [A-Za-z0-9_-]+")
    prefix = f"mcp_servers.{name}"
    pairs: list[tuple[str, Any]] = [
        (f"{prefix}.url", endpoint.url),
        # Codex rejects an inline bearer token; it reads the token from this variable.
        (f"{prefix}.bearer_token_env_var", MCP_TOKEN_ENV_VAR),
    ]
    if tool_timeout_seconds is not None:
        pairs.append((f"{prefix}.tool_timeout_sec", tool_timeout_seconds))
    return pairs


def override_args(pairs: Sequence[tuple[str, Any]]) -> list[str]:
    """Render ``(dotted key, value)`` pairs as Codex command-line ``-c key=value`` arguments."""
    args: list[str] = []
    for key, value in pairs:
        args += ["-c", f"{key}={toml_value(value)}"]
    return args


def flatten(doc: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """Flatten nested tables into dotted ``(key, value)`` pairs (lists stay values)."""
    pairs: list[tuple[str, Any]] = []
    for key, value in doc.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping):
            pairs += flatten(value, dotted + ".")
        else:
            pairs.append((dotted, value))
    return pairs


def write_config(home: Path, doc: Mapping[str, Any]) -> bool:
    """Write ``config.toml`` into ``home`` unless a config.toml we do not own is there.

    Returns False when the file belongs to someone else: the caller then passes
    the same settings as ``-c`` overrides, which take precedence over the file.
    """
    home.mkdir(parents=True, exist_ok=True)
    path = home / "config.toml"
    if path.exists():
        with path.open(encoding="utf-8") as existing:
            if existing.readline().rstrip("\n") != CONFIG_MARKER:
                return False
    text = CONFIG_MARKER + "\n" + render_toml(doc)
    # Atomic replace: another run sharing this home may be reading the file.
    fd, tmp = tempfile.mkstemp(prefix=".config.", suffix=".toml", dir=home)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return True


def render_toml(doc: Mapping[str, Any]) -> str:
    """Render a nested mapping as a TOML document (scalars first, then tables)."""
    lines: list[str] = []
    _render_table(doc, [], lines)
    return "\n".join(lines) + "\n"


def _render_table(table: Mapping[str, Any], path: list[str], lines: list[str]) -> None:
    scalars = [(k, v) for k, v in table.items() if not isinstance(v, Mapping)]
    tables = [(k, v) for k, v in table.items() if isinstance(v, Mapping)]
    if path and (scalars or not tables):
        if lines:
            lines.append("")
        lines.append("[" + ".".join(toml_key(p) for p in path) + "]")
    for key, value in scalars:
        lines.append(f"{toml_key(key)} = {toml_value(value)}")
    for key, value in tables:
        _render_table(value, [*path, key], lines)


def toml_key(key: str) -> str:
    """A TOML key: bare when possible, quoted otherwise."""
    return key if _BARE_KEY.match(key) else _toml_string(key)


def toml_value(value: Any) -> str:
    """Encode a Python value as a TOML value (inline tables for mappings)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return _toml_string(value)
    if isinstance(value, Mapping):
        inner = ", ".join(f"{toml_key(str(k))} = {toml_value(v)}" for k, v in value.items())
        return "{ " + inner + " }" if inner else "{}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    raise ConfigError(f"cannot encode {type(value).__name__} as a TOML value")


def _toml_string(text: str) -> str:
    # JSON string escapes are all valid TOML basic-string escapes; TOML also
    # forbids a raw DEL, which JSON leaves alone.
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def _argv(value: Any) -> tuple[str, ...]:
    if (
        not isinstance(value, (list, tuple))
        or not value
        or not all(isinstance(part, str) and part for part in value)
    ):
        raise ConfigError("command must be a non-empty list of non-empty strings (an argv)")
    return tuple(value)


def _text(key: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{key} must be a non-empty string")
    return value


def _env_name(key: str, value: Any) -> str:
    if not isinstance(value, str) or not _ENV_NAME.match(value):
        raise ConfigError(f"{key} must be an environment variable name")
    return value


def _choice(key: str, value: Any, choices: Sequence[str]) -> Any:
    if value not in choices:
        raise ConfigError(f"{key} must be one of {', '.join(choices)}; got {value!r}")
    return value


def _seconds(key: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ConfigError(f"{key} must be a positive number of seconds")
    if math.isinf(value):
        raise ConfigError(f"{key} must be finite")
    return float(value)


def _overrides(value: Any) -> tuple[tuple[str, Any], ...]:
    if not isinstance(value, Mapping):
        raise ConfigError(
            "config_overrides must be a mapping of dotted Codex config keys to values"
        )
    pairs: list[tuple[str, Any]] = []
    for key, item in value.items():
        if not isinstance(key, str) or not all(_BARE_KEY.match(p) for p in key.split(".")):
            raise ConfigError(f"config_overrides key {key!r} must be a dotted path of bare keys")
        try:
            toml_value(item)  # fail now, with the key in hand, rather than at spawn time
        except ConfigError as exc:
            raise ConfigError(f"config_overrides[{key!r}]: {exc}") from None
        pairs.append((key, item))
    return tuple(pairs)
