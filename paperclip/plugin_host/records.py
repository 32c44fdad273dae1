"""What the host knows about each plugin it found: loaded, or skipped and why."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any


class PluginStatus(StrEnum):
    LOADED = "loaded"
    SKIPPED = "skipped"


class SkipCode(StrEnum):
    """Why a plugin was not loaded; the first two are an operator's choice, the rest failures."""

    DISABLED = "disabled"
    NOT_ALLOWED = "not_allowed"
    NO_HOOK_API_REQUIREMENT = "no_hook_api_requirement"
    INCOMPATIBLE_HOOK_API = "incompatible_hook_api"
    IMPORT_ERROR = "import_error"
    INVALID = "invalid"
    """Its hooks do not fit the contract, or its name is taken."""


CHOSEN = frozenset({SkipCode.DISABLED, SkipCode.NOT_ALLOWED})


@dataclass(frozen=True, slots=True)
class PluginRecord:
    """One plugin as ``paperclip plugins`` and ``GET /api/plugins`` show it."""

    name: str
    """The entry point's name (an installed plugin) or the built-in's name."""
    distribution: str
    """The distribution that ships it (``paperclip`` for built-ins); empty when registered in process."""
    version: str
    entry_point: str
    """What was loaded: ``module`` or ``module:attribute``."""
    builtin: bool
    status: PluginStatus
    hooks: tuple[str, ...] = ()
    hook_api: str | None = None
    """The declared requirement on ``paperclip-hookspecs`` (``>=1.0,<2``); None for built-ins."""
    code: SkipCode | None = None
    reason: str | None = None

    @property
    def label(self) -> str:
        """How log lines and errors name the plugin."""
        if self.builtin:
            return f"built-in plugin {self.name!r} ({self.distribution} {self.version})"
        if not self.distribution:
            return f"plugin {self.name!r} (registered in process)"
        return f"plugin {self.name!r} ({self.distribution} {self.version})"

    @property
    def failed(self) -> bool:
        """Skipped for a reason other than the operator's choice."""
        return self.code is not None and self.code not in CHOSEN

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class PluginReport:
    """The running hook API, every plugin found, and what would stop startup."""

    hook_api: str
    plugins: tuple[PluginRecord, ...]
    problems: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        return {
            "hook_api": self.hook_api,
            "plugins": [p.as_dict() for p in self.plugins],
            "problems": list(self.problems),
        }
