"""The agent's Codex settings, and the Codex configuration derived from them.

Static settings (model provider, approval policy, update checks, feature
switches) go to ``$CODEX_HOME/config.toml``. An agent's config selects and
tunes; it never names a program or a path (see :data:`ALLOWED_OVERRIDES`). Everything that belongs to one run
(the MCP endpoint of the run's tools, the variable holding its bearer token)
goes on the command line as ``-c key=value`` overrides, so concurrent runs that
share a home never race on one file.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from paperclip_hookspecs.providers import McpEndpoint
from paperclip_provider_kit.config import (
    ConfigError,
    EndpointSettings,
    checked_values,
    write_atomic,
)

DEFAULT_COMMAND: tuple[str, ...] = ("codex", "app-server")
"""The ``default`` launch profile: the runner host may replace it (PAPERCLIP_RUNNER_LAUNCH)."""
SUPPORTED_CLI = "0.171.0"
"""The Codex CLI version this plugin is tested against (tox env ``codex-cli``)."""
MODEL_PROVIDER_NAME = "paperclip"
"""The ``[model_providers.<name>]`` entry written when ``base_url`` is set."""
MCP_TOKEN_ENV_VAR = "PAPERCLIP_MCP_BEARER_TOKEN"
"""The variable that carries the run's MCP bearer token to the provider process."""
CONFIG_MARKER = "# Written by paperclip-codex."
"""First line of a config.toml we own; a file without it is never overwritten."""

# What codex-cli 0.171 accepts: "untrusted" is refused at config load and
# "on-failure" at thread/start; "granular" is a table, not a name.
APPROVAL_POLICIES = ("never", "on-request")
SANDBOX_MODES = ("read-only", "workspace-write", "danger-full-access")
TOOL_APPROVAL_MODES = ("approve", "auto")
"""``default_tools_approval_mode`` of the run's MCP server: ``approve`` runs Paperclip's tools
without asking (they are guarded by the control plane), ``auto`` lets Codex judge each tool by
its MCP annotations."""

# Features that make Codex look up hosts outside the run, or offer the model
# tools a Paperclip run has no use for (goals); all off by default.
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
    "browser_use",
    "browser_use_external",
    "computer_use",
)

ALLOWED_OVERRIDES = frozenset(
    {
        "model_reasoning_effort",
        "model_reasoning_summary",
        "model_verbosity",
        "model_context_window",
        "model_auto_compact_token_limit",
        "tool_output_token_limit",
        "project_doc_max_bytes",
        f"model_providers.{MODEL_PROVIDER_NAME}.request_max_retries",
        f"model_providers.{MODEL_PROVIDER_NAME}.stream_max_retries",
        f"model_providers.{MODEL_PROVIDER_NAME}.stream_idle_timeout_ms",
    }
)
"""The Codex settings an agent may override. Anything else could start a program
(``notify``, ``mcp_servers.*.command``), read a file (``model_instructions_file``) or
undo the switches above, so it is refused."""

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")
_MODEL = re.compile(r"^[A-Za-z0-9_.:/@+-]{1,200}$")

Approvals = Literal["decline", "approve"]

# Bounds of the numeric settings: (minimum, maximum).
TIMEOUT_BOUNDS = {
    "request_timeout_seconds": (1.0, 3600.0),
    "turn_timeout_seconds": (1.0, 86400.0),
    "close_timeout_seconds": (0.1, 120.0),
    "mcp_tool_timeout_seconds": (1.0, 86400.0),
}

OPTIONAL_TIMEOUTS = ("turn_timeout_seconds", "mcp_tool_timeout_seconds")
"""Timeouts an agent may set to null: no bound."""


@dataclass(frozen=True, slots=True)
class CodexSettings(EndpointSettings):
    """The agent's provider configuration, validated. Build it with :meth:`from_config`.

    It selects and tunes; it never names a program or a path. The command comes
    from the runner's launch profile (``launch``), the home is the run's own.
    """

    approval_policy: str = "never"
    sandbox: str = "workspace-write"
    approvals: Approvals = "decline"
    tool_approval: str = "approve"
    mcp_tool_timeout_seconds: float | None = None
    config_overrides: tuple[tuple[str, Any], ...] = field(default=())

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> CodexSettings:
        """Validate a provider configuration mapping; raise :class:`ConfigError` on bad input."""
        hint = ""
        if "command" in config:
            hint = (
                "; an agent selects a launch profile of the runner by name "
                "('launch'), the runner host decides the command"
            )
        if "codex_home" in config:
            hint += "; each run has its own CODEX_HOME"
        values = checked_values(
            "codex",
            config,
            cls.__dataclass_fields__,
            choices={
                "approval_policy": APPROVAL_POLICIES,
                "sandbox": SANDBOX_MODES,
                "approvals": ("decline", "approve"),
                "tool_approval": TOOL_APPROVAL_MODES,
                "resume_fallback": ("fail", "fresh"),
            },
            bounds=TIMEOUT_BOUNDS,
            optional=OPTIONAL_TIMEOUTS,
            model=_MODEL,
            hint=hint,
        )
        if "config_overrides" in config:
            values["config_overrides"] = _overrides(config["config_overrides"])
        return cls(**values)

    def config_document(self) -> dict[str, Any]:
        """The static Codex configuration for this agent, as a nested mapping."""
        doc: dict[str, Any] = {
            "approval_policy": self.approval_policy,
            "sandbox_mode": self.sandbox,
            "check_for_update_on_startup": False,
            # The model searches nothing outside the run (Codex's default is a cached index).
            "web_search": "disabled",
        }
        if self.model is not None:
            doc["model"] = self.model
        if self.base_url is not None:
            doc["model_provider"] = MODEL_PROVIDER_NAME
        doc["analytics"] = {"enabled": False}
        # No sub-agents: a run is one agent on one task, reporting through one thread.
        doc["agents"] = {"enabled": False}
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
    endpoint: McpEndpoint, tool_timeout_seconds: float | None, tool_approval: str = "approve"
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
        # Codex's default ("auto") asks before any tool whose annotations do not say it
        # is harmless, and under approval policy "never" asking means refusing.
        (f"{prefix}.default_tools_approval_mode", tool_approval),
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
    if os.path.lexists(path) and _first_line(path) != CONFIG_MARKER:
        return False
    # Atomic replace: another run sharing this home may be reading the file.
    write_atomic(path, CONFIG_MARKER + "\n" + render_toml(doc))
    return True


def _first_line(path: Path) -> str | None:
    """The file's first line, read without following a link or waiting on a pipe (the home may
    be the provider's user's, who could have put either there); None for anything but a file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as file:
        if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
            return None
        return file.readline(len(CONFIG_MARKER) + 2).decode(errors="replace").rstrip("\n")


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


def _overrides(value: Any) -> tuple[tuple[str, Any], ...]:
    if not isinstance(value, Mapping):
        raise ConfigError(
            "config_overrides must be a mapping of dotted Codex config keys to values"
        )
    if len(value) > len(ALLOWED_OVERRIDES):
        raise ConfigError("config_overrides has more keys than are allowed")
    pairs: list[tuple[str, Any]] = []
    for key, item in value.items():
        if key not in ALLOWED_OVERRIDES:
            raise ConfigError(
                f"config_overrides key {key!r} is not allowed; allowed: "
                f"{', '.join(sorted(ALLOWED_OVERRIDES))}"
            )
        scalar = isinstance(item, (bool, int, float)) or (
            isinstance(item, str) and len(item) <= 200
        )
        if not scalar or (isinstance(item, float) and not math.isfinite(item)):
            raise ConfigError(
                f"config_overrides[{key!r}] must be a string (at most 200 characters), "
                "a finite number or a boolean"
            )
        pairs.append((key, item))
    return tuple(pairs)
