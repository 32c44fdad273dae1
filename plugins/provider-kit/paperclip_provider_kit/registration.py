"""A provider kind, registered with what the running hook API knows.

Hook API 1.9 added ``ProviderKind.model_access`` (what an agent's config asks
of the runner host's model profile); a plugin that declares an older floor
passes it here, and it is left out where the running contract has none.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from paperclip_hookspecs.providers import (
    DriverContext,
    ProviderCapabilities,
    ProviderDriver,
    ProviderKind,
    ProviderProbe,
)

try:
    from paperclip_hookspecs.providers import BUILTIN_ENDPOINT, ModelAccess
except ImportError:  # a hook API older than 1.9: the runner reads no model access
    ModelAccess = None  # type: ignore[assignment, misc, unused-ignore]
    BUILTIN_ENDPOINT = "builtin"


def endpoint_access(base_url: str | None, env_key: str, **more: Any) -> Any:
    """The model access of a config with a ``base_url`` (``builtin`` without) and a key variable."""
    if ModelAccess is None:
        return None
    return ModelAccess(endpoints=(base_url or BUILTIN_ENDPOINT,), keys=(env_key,), **more)


def provider_kind(
    *,
    name: str,
    capabilities: ProviderCapabilities,
    create_driver: Callable[[DriverContext], ProviderDriver],
    description: str,
    config_schema: Mapping[str, Any],
    launch: Mapping[str, Sequence[str]],
    probe: Callable[[Sequence[str]], ProviderProbe],
    model_access: Callable[[Mapping[str, Any]], Any] | None = None,
) -> ProviderKind:
    """A :class:`ProviderKind`; ``model_access`` only where the hook API has it (1.9)."""
    extra = {"model_access": model_access} if model_access and ModelAccess is not None else {}
    return ProviderKind(
        name=name,
        capabilities=capabilities,
        create_driver=create_driver,
        description=description,
        config_schema=config_schema,
        launch=launch,
        probe=probe,
        **extra,
    )
