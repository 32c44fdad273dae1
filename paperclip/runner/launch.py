"""Launch profiles: which provider commands this runner host allows, by name.

A provider kind offers default profiles (``ProviderKind.launch``); the host's
``PAPERCLIP_RUNNER_LAUNCH`` adds profiles, replaces them, or removes one (an
empty command). An agent's provider config names a profile (``"launch"``,
``"default"`` when absent) and can never name an executable: a run whose
profile this runner does not offer fails with ``launch_not_allowed`` before
any process starts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from paperclip_hookspecs.providers import DEFAULT_LAUNCH, LAUNCH_KEY, ProviderKind

LAUNCH_NOT_ALLOWED = "launch_not_allowed"

Profiles = dict[str, dict[str, tuple[str, ...]]]
"""Provider name -> profile name -> command line."""


class LaunchRefused(Exception):
    """The agent asked for a launch profile this runner does not offer."""

    code = LAUNCH_NOT_ALLOWED


@dataclass(frozen=True, slots=True)
class LaunchPolicy:
    """The commands this runner starts, per provider and profile name."""

    profiles: Profiles

    @classmethod
    def build(
        cls,
        kinds: Mapping[str, ProviderKind],
        configured: Mapping[str, Mapping[str, Sequence[str]]] | None = None,
    ) -> LaunchPolicy:
        """The kinds' default profiles, with the host's configuration laid over them."""
        profiles: Profiles = {
            name: {p: tuple(argv) for p, argv in kind.launch.items() if argv}
            for name, kind in kinds.items()
        }
        for provider, named in (configured or {}).items():
            target = profiles.setdefault(provider, {})
            for profile, argv in named.items():
                if argv:
                    target[profile] = tuple(str(part) for part in argv)
                else:
                    target.pop(profile, None)
        return cls(profiles)

    def offered(self, provider: str) -> list[str]:
        return sorted(self.profiles.get(provider, {}))

    def resolve(self, provider: str, config: Mapping[str, Any]) -> tuple[str, ...]:
        """The command line for a run of ``provider`` with this agent config; raises LaunchRefused."""
        name = config.get(LAUNCH_KEY, DEFAULT_LAUNCH)
        if not isinstance(name, str):
            raise LaunchRefused(
                f"the provider config's {LAUNCH_KEY!r} names a launch profile of the runner "
                f"(a string), not {type(name).__name__}"
            )
        argv = self.profiles.get(provider, {}).get(name)
        if argv is None:
            offered = ", ".join(self.offered(provider)) or "none"
            raise LaunchRefused(
                f"this runner does not offer the launch profile {name!r} for {provider!r} "
                f"(offered: {offered}); the runner host adds profiles with PAPERCLIP_RUNNER_LAUNCH"
            )
        return argv
