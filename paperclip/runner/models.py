"""Model profiles on the runner: what this host lets an agent's provider reach, checked
before any process starts.

The rules are :mod:`paperclip.wire.model_rules` (the control plane checks them too, at
the door, from what this runner's ``hello`` said); the runner is the last word: a run
whose config asks for an endpoint, a key variable, a sandbox mode or an approval answer
its profile does not allow fails with ``model_profile_not_allowed``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from paperclip_hookspecs.providers import ModelAccess, ProviderKind

from paperclip.wire.model_rules import (
    MODEL_PROFILE_NOT_ALLOWED,
    MODELS_SETTING,
    ModelProfile,
    access_of,
    access_problem,
    host_profiles,
    parse_profiles,
    profile_name,
)


class ModelRefused(Exception):
    """The agent asked for model access this runner host does not allow."""

    code = MODEL_PROFILE_NOT_ALLOWED


@dataclass(frozen=True, slots=True)
class ModelGrant:
    """What a run may use: its profile, and what its config asks within it."""

    profile: str
    access: ModelAccess


@dataclass(frozen=True, slots=True)
class ModelPolicy:
    """This host's model profiles (the implicit ``default`` when it defines none)."""

    profiles: dict[str, ModelProfile]

    @classmethod
    def build(cls, configured: Mapping[str, Any] | None = None) -> ModelPolicy:
        """From ``PAPERCLIP_RUNNER_MODELS``; raises ValueError when it is malformed."""
        return cls(host_profiles(parse_profiles(configured)))

    def hello(self) -> dict[str, Any]:
        """What ``hello`` says of them: everything but a key's value (which it never holds)."""
        return {"model_profiles": dict(self.profiles)}

    def resolve(self, kind: ProviderKind | None, config: Mapping[str, Any]) -> ModelGrant:
        """The grant for a run of ``kind`` with this agent config; raises ModelRefused."""
        name = profile_name(config)
        profile = self.profiles.get(name)
        if profile is None:
            offered = ", ".join(sorted(self.profiles)) or "none"
            raise ModelRefused(
                f"this runner does not offer the model profile {name!r} (offered: {offered}); "
                f"the runner host defines profiles with {MODELS_SETTING}"
            )
        try:
            access = access_of(kind, config)
        except ValueError as exc:
            raise ModelRefused(f"the provider config cannot be read: {exc}") from None
        if problem := access_problem(name, profile, access):
            raise ModelRefused(f"{problem[1]}; the runner host decides ({MODELS_SETTING})")
        return ModelGrant(name, access)
