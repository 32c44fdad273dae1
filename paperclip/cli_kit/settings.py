"""The settings a command reads: from ``PAPERCLIP_*``, or one line naming the variable that
is wrong, what it expects and what to do (nothing is wrong with the code: no traceback)."""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import ValidationError
from pydantic_settings import SettingsError

from paperclip.cli_kit.output import fail
from paperclip.settings import Settings

SETTINGS_HINT = "Fix or unset it; docs/configuration.md lists every setting."
JSON_SETTINGS = {
    "runner_launch": 'JSON such as {"codex": {"default": ["codex", "app-server"]}}: '
    "provider, then profile name, then command line",
    "runner_models": 'JSON such as {"local": {"endpoints": ["http://127.0.0.1:8765/v1"], '
    '"keys": ["MODEL_API_KEY"]}}: profile name, then what it allows',
}
"""What a setting whose value is JSON looks like, for the message when it does not parse."""


def load_settings(**overrides: Any) -> Settings:
    """The settings from ``PAPERCLIP_*`` (and ``overrides``), or one line saying which is wrong."""
    try:
        return Settings(**{k: v for k, v in overrides.items() if v is not None})
    except ValidationError as exc:
        fail("; ".join(_problem(error) for error in exc.errors()), hint=SETTINGS_HINT)
    except SettingsError as exc:
        fail(_unparsed(exc), hint=SETTINGS_HINT)


def variable(field: str) -> str:
    """The environment variable of a setting."""
    return f"{Settings.model_config.get('env_prefix', '')}{field}".upper()


def _problem(error: Any) -> str:
    field, *inside = (str(part) for part in error["loc"])
    message = re.sub(r"^(Value error|Assertion failed), ", "", error["msg"])
    where = f" at {'.'.join(inside)}" if inside else ""
    expects = f" (expected: {JSON_SETTINGS[field]})" if field in JSON_SETTINGS else ""
    return f"{variable(field)}{where}: {message}{expects}"


def _unparsed(exc: SettingsError) -> str:
    # pydantic-settings says 'error parsing value for field "runner_launch" ...', the JSON
    # decoder's own error being its cause.
    found = re.search(r'field "(\w+)"', str(exc))
    if found is None:
        return f"invalid settings: {exc}"
    field = found.group(1)
    cause = exc.__cause__
    detail = f": {cause}" if isinstance(cause, json.JSONDecodeError) else ""
    expected = JSON_SETTINGS.get(field, "JSON")
    return f"{variable(field)} is not valid JSON{detail}; expected {expected}"
