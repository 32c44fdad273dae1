"""Checks every provider's config shares: an agent's config selects and tunes, and each value
is checked here the same way whichever provider reads it.

:class:`ConfigError` carries a message naming the key and why; the control
plane answers it as a 4xx, and the driver fails the turn with it.
"""

from __future__ import annotations

import math
import os
import re
import tempfile
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

PROFILE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
"""A launch profile's name."""
MODEL = re.compile(r"^[A-Za-z0-9_.:@+-][A-Za-z0-9_.:/@+-]{0,199}$")
ENV_NAME = re.compile(r"^[A-Z][A-Z0-9_]{0,63}$")
URL = re.compile(r"^https?://[^\s/]+(/\S*)?$")
MAX_URL = 2000


ResumeFallback = Literal["fail", "fresh"]


@dataclass(frozen=True, slots=True)
class EndpointSettings:
    """What the config of every CLI provider sets: the launch profile, the model endpoint and
    its key variable, what to do when a session cannot be resumed, and the common bounds.
    A provider's settings class extends it with its own keys."""

    launch: str = "default"
    base_url: str | None = None
    model: str | None = None
    env_key: str = "OPENAI_API_KEY"
    resume_fallback: ResumeFallback = "fail"
    request_timeout_seconds: float = 60.0
    turn_timeout_seconds: float | None = None
    close_timeout_seconds: float = 5.0


class ConfigError(ValueError):
    """The agent's provider configuration is not usable; the message says which key and why."""


def refuse_unknown(
    provider: str, config: Mapping[str, Any], known: Collection[str], hint: str = ""
) -> None:
    """Raise when ``config`` has a key the provider does not know, listing the known ones."""
    unknown = sorted(set(config) - set(known))
    if unknown:
        raise ConfigError(
            f"unknown {provider} config key(s): {', '.join(unknown)}; "
            f"known: {', '.join(sorted(known))}{hint}"
        )


def matching(key: str, value: Any, pattern: re.Pattern[str], what: str) -> str:
    """``value`` when it is a string matching ``pattern``; else a ConfigError naming ``what``."""
    if not isinstance(value, str) or not pattern.match(value):
        raise ConfigError(f"{key} must be {what} matching {pattern.pattern}")
    return value


def url(key: str, value: Any) -> str:
    """An http(s) URL of at most 2,000 characters."""
    if not isinstance(value, str) or len(value) > MAX_URL or not URL.match(value):
        raise ConfigError(f"{key} must be an http(s) URL, e.g. http://127.0.0.1:8000/v1")
    return value


def env_key(value: Any) -> str:
    """The variable whose value is sent to ``base_url`` as the key: a model key, never the
    runner's own secrets (upper case, ``*_API_KEY``, no ``PAPERCLIP_`` variable)."""
    if (
        not isinstance(value, str)
        or not ENV_NAME.match(value)
        or not value.endswith("_API_KEY")
        or value.startswith("PAPERCLIP_")
    ):
        raise ConfigError(
            "env_key must name the variable holding the endpoint's key: upper case, "
            "ending in _API_KEY, not a PAPERCLIP_ variable (e.g. OPENAI_API_KEY)"
        )
    return value


def choice(key: str, value: Any, choices: Sequence[Any]) -> Any:
    """``value`` when it is one of ``choices``."""
    if value not in choices:
        raise ConfigError(f"{key} must be one of {', '.join(map(str, choices))}; got {value!r}")
    return value


def seconds(key: str, value: Any, bounds: Mapping[str, tuple[float, float]]) -> float:
    """A number of seconds within ``bounds[key]`` (low, high)."""
    low, high = bounds[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise ConfigError(f"{key} must be a number of seconds")
    if not low <= value <= high:
        raise ConfigError(f"{key} must be between {low:g} and {high:g} seconds")
    return float(value)


def timeouts(
    config: Mapping[str, Any],
    bounds: Mapping[str, tuple[float, float]],
    optional: Collection[str] = ("turn_timeout_seconds",),
) -> dict[str, float]:
    """The ``*_seconds`` keys of ``bounds`` that ``config`` sets; an ``optional`` one may be null."""
    values: dict[str, float] = {}
    for key in bounds:
        if key in config and not (key in optional and config[key] is None):
            values[key] = seconds(key, config[key], bounds)
    return values


def model_endpoint(config: Mapping[str, Any], model: re.Pattern[str] = MODEL) -> dict[str, Any]:
    """``launch``, ``base_url``, ``model`` (matching ``model``) and ``env_key`` where ``config``
    sets them, checked."""
    values: dict[str, Any] = {}
    if "launch" in config:
        values["launch"] = matching("launch", config["launch"], PROFILE, "a profile name")
    if config.get("base_url") is not None:
        values["base_url"] = url("base_url", config["base_url"])
    if config.get("model") is not None:
        values["model"] = matching("model", config["model"], model, "a model name")
    if "env_key" in config:
        values["env_key"] = env_key(config["env_key"])
    return values


def write_atomic(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` by an atomic rename: a process reading it sees old or new."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=path.suffix, dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def checked_values(
    provider: str,
    config: Mapping[str, Any],
    known: Collection[str],
    *,
    choices: Mapping[str, Sequence[Any]],
    bounds: Mapping[str, tuple[float, float]],
    optional: Collection[str] = ("turn_timeout_seconds",),
    model: re.Pattern[str] = MODEL,
    hint: str = "",
) -> dict[str, Any]:
    """The values of an agent's config, checked: no key outside ``known`` (``hint`` added to
    the refusal), the model endpoint (:func:`model_endpoint`), each key of ``choices`` one of
    its values, and the timeouts of ``bounds`` (:func:`timeouts`). A provider checks its own
    keys after."""
    refuse_unknown(provider, config, known, hint)
    values = model_endpoint(config, model)
    for key, allowed in choices.items():
        if key in config:
            values[key] = choice(key, config[key], allowed)
    values.update(timeouts(config, bounds, optional))
    return values
