"""An agent's provider and config, checked when the agent is created or changed.

The provider must be offered by an installed plugin (``unknown_provider``).
The config's ``launch`` key, which the core owns for every provider, names a
launch profile of the runner: a short name, never a command
(``invalid_launch_profile``); which profiles exist is the runner host's
decision, checked again there before any process starts. So does its
``model_profile`` key, which names a model profile of the runner
(``invalid_model_profile`` unless a short name; what the profile allows is
checked against the runners' offers, :mod:`paperclip.domain.agents.model_access`).
The rest of the config must match the kind's own JSON Schema
(``invalid_provider_config``, naming each field).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from paperclip_hookspecs.providers import LAUNCH_KEY, MODEL_PROFILE_KEY, ModelAccess, ProviderKind

from paperclip.errors import InvalidInputError, field_details
from paperclip.wire.model_rules import access_of

PROFILE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
MAX_ERRORS = 20

ConfigCheck = Callable[[str, Mapping[str, Any]], None]


class ProviderConfigs:
    """The provider kinds the control plane's plugins offer, and their config schemas."""

    def __init__(self, kinds: Iterable[ProviderKind]) -> None:
        self.kinds = {kind.name: kind for kind in kinds}
        self._validators: dict[str, Draft202012Validator] = {}

    def check(self, provider: str, config: Mapping[str, Any]) -> None:
        """Raise ``InvalidInputError`` (422) naming the field, unless ``config`` fits ``provider``."""
        kind = self.kinds.get(provider)
        if kind is None:
            offered = ", ".join(sorted(self.kinds)) or "none"
            raise InvalidInputError(
                f"no installed plugin offers the provider {provider!r} (installed: {offered}); "
                f"install its distribution (paperclip-{provider}) on the server",
                code="unknown_provider",
                field="provider",
            )
        launch = config.get(LAUNCH_KEY)
        if LAUNCH_KEY in config and not (isinstance(launch, str) and PROFILE_NAME.match(launch)):
            raise InvalidInputError(
                f"{LAUNCH_KEY!r} names one of the runner's launch profiles (a short name such as "
                "'default'); the command it starts is the runner host's to configure",
                code="invalid_launch_profile",
                field=f"provider_config.{LAUNCH_KEY}",
            )
        model = config.get(MODEL_PROFILE_KEY)
        if MODEL_PROFILE_KEY in config and not (
            isinstance(model, str) and PROFILE_NAME.match(model)
        ):
            raise InvalidInputError(
                f"{MODEL_PROFILE_KEY!r} names one of the runner's model profiles (a short name "
                "such as 'default'); what it allows is the runner host's to configure",
                code="invalid_model_profile",
                field=f"provider_config.{MODEL_PROFILE_KEY}",
            )
        validator = self._validator(kind)
        if validator is None:
            return
        rest = {k: v for k, v in config.items() if k not in (LAUNCH_KEY, MODEL_PROFILE_KEY)}
        errors = sorted(validator.iter_errors(rest), key=lambda e: list(map(str, e.path)))
        if errors:
            details = [
                field_details(_field(e.absolute_path), e.message)[0] for e in errors[:MAX_ERRORS]
            ]
            raise InvalidInputError(
                f"provider_config does not fit the {provider!r} provider: "
                f"{details[0]['field']}: {details[0]['message']}",
                code="invalid_provider_config",
                details=details,
            )

    def access(self, provider: str, config: Mapping[str, Any]) -> ModelAccess:
        """What a checked ``config`` asks of the runner host's model profile."""
        try:
            return access_of(self.kinds.get(provider), config)
        except ValueError as exc:
            raise InvalidInputError(
                f"provider_config does not fit the {provider!r} provider: {exc}",
                code="invalid_provider_config",
                field="provider_config",
            ) from None

    def _validator(self, kind: ProviderKind) -> Draft202012Validator | None:
        if kind.config_schema is None:
            return None
        if kind.name not in self._validators:
            try:
                Draft202012Validator.check_schema(kind.config_schema)
            except SchemaError as exc:  # the plugin's mistake: no config can be checked
                raise InvalidInputError(
                    f"the {kind.name!r} provider plugin declares an invalid config_schema, so no "
                    "config can be accepted for it; upgrade or report the plugin",
                    code="provider_schema_invalid",
                    field="provider",
                ) from exc
            self._validators[kind.name] = Draft202012Validator(kind.config_schema)
        return self._validators[kind.name]


def _field(path: Iterable[Any]) -> str:
    parts = "provider_config"
    for part in path:
        parts += f"[{part}]" if isinstance(part, int) else f".{part}"
    return parts
