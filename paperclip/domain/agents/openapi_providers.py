"""The agent bodies of the OpenAPI document, as the installed provider plugins define them.

``provider`` takes only the installed kinds' names, and ``provider_config``
follows the kind's own ``config_schema`` (plus the core's ``launch`` key), so
the document refuses exactly what ``paperclip.domain.agents.provider_configs``
refuses. Each kind's schema becomes a component ``ProviderConfig.<name>``;
references inside it are rewritten to point into that component.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from litestar.openapi.spec import Components, Reference, Schema
from paperclip_hookspecs.providers import LAUNCH_KEY, ProviderKind

from paperclip.domain.agents.provider_configs import PROFILE_NAME

LAUNCH_SCHEMA = {
    "type": "string",
    "pattern": PROFILE_NAME.pattern,
    "description": "A launch profile of the runner (default: `default`); never a command.",
}


def describe_providers(components: Components, kinds: Sequence[ProviderKind]) -> None:
    """Rewrite ``AgentCreate`` and ``AgentUpdate`` for the installed ``kinds``."""
    configs: dict[str, Reference] = {}
    for kind in sorted(kinds, key=lambda k: k.name):
        component = f"ProviderConfig.{kind.name}"
        components.schemas[component] = _as_schema(config_schema_of(kind), component)
        configs[kind.name] = Reference(ref=f"#/components/schemas/{component}")
    create = components.schemas.get("AgentCreate")
    if create is not None:
        components.schemas["AgentCreate"] = _variants(create, configs, require=True)
    update = components.schemas.get("AgentUpdate")
    if update is not None:
        components.schemas["AgentUpdate"] = _variants(update, configs, require=False)


def config_schema_of(kind: ProviderKind) -> dict[str, Any]:
    """The JSON Schema of an agent's config for ``kind``: the plugin's, with the core's
    ``launch`` key (a JSON object of any keys when the plugin declares none)."""
    schema = copy.deepcopy(dict(kind.config_schema or {"type": "object"}))
    schema.pop("$schema", None)
    schema.pop("$id", None)
    properties = schema.setdefault("properties", {})
    properties[LAUNCH_KEY] = LAUNCH_SCHEMA
    return schema


def _as_schema(raw: Mapping[str, Any], component: str) -> Schema:
    """A JSON Schema dict as a Litestar ``Schema`` that renders it unchanged."""
    return _RawSchema(_rebase(raw, f"#/components/schemas/{component}"))


def _rebase(value: Any, base: str) -> Any:
    if isinstance(value, dict):
        return {
            k: (
                base + v[1:]
                if k == "$ref" and isinstance(v, str) and v.startswith("#")
                else _rebase(v, base)
            )
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_rebase(v, base) for v in value]
    return value


def _variants(body: Schema, configs: Mapping[str, Reference], *, require: bool) -> Schema:
    """One variant of ``body`` per provider kind: ``provider`` fixed, its config's schema."""
    if not configs:
        # No provider is installed: no agent can be made, and none changed to one.
        properties = dict(body.properties or {})
        properties["provider"] = Schema(schema_not=Schema())
        return _copy(body, properties=properties)
    variants = []
    for name, config in configs.items():
        properties = dict(body.properties or {})
        properties["provider"] = Schema(const=name)  # type: ignore[arg-type]
        properties["provider_config"] = config
        variants.append(_copy(body, properties=properties, title=f"{body.title} ({name})"))
    if not require:
        # A change that names no provider keeps the agent's: its config fits that kind's schema.
        properties = {k: v for k, v in (body.properties or {}).items() if k != "provider"}
        properties["provider_config"] = Schema(any_of=list(configs.values()))
        variants.append(_copy(body, properties=properties, title=f"{body.title} (same provider)"))
        return Schema(any_of=variants, title=body.title)
    return Schema(one_of=variants, title=body.title)


def _copy(body: Schema, **changes: Any) -> Schema:
    schema = copy.copy(body)
    for key, value in changes.items():
        setattr(schema, key, value)
    return schema


class _RawSchema(Schema):
    """A schema given as JSON (a plugin's ``config_schema``), rendered as it is."""

    def __init__(self, raw: dict[str, Any]) -> None:
        super().__init__()
        self._raw = raw

    def to_schema(self) -> dict[str, Any]:
        return self._raw
