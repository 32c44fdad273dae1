"""The compatibility gate: a plugin's declared range on ``paperclip-hookspecs`` against ``HOOK_API``."""

from __future__ import annotations

from importlib.metadata import Distribution

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

HOOKSPECS_DISTRIBUTION = "paperclip-hookspecs"


def declared_hook_api(dist: Distribution) -> SpecifierSet | None:
    """The distribution's requirement on ``paperclip-hookspecs``, or None when it declares none.

    Requirements behind an extra or a marker that does not hold here are not
    the plugin's runtime requirement and are ignored.
    """
    found: SpecifierSet | None = None
    for line in dist.requires or ():
        try:
            requirement = Requirement(line)
        except InvalidRequirement:
            continue  # someone else's broken metadata is not our gate's business
        if canonicalize_name(requirement.name) != HOOKSPECS_DISTRIBUTION:
            continue
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
            continue
        found = requirement.specifier if found is None else found & requirement.specifier
    return found


def describe(declared: SpecifierSet) -> str:
    """The range as people write it: lower bounds first (``>=1.0,<2``, not ``<2,>=1.0``)."""
    parts = sorted((str(s) for s in declared), key=lambda s: (not s.startswith((">", "~", "=")), s))
    return ",".join(parts) or "(any version)"


def refusal(declared: SpecifierSet | None, hook_api: str) -> str | None:
    """Why a plugin with this declared range may not load on ``hook_api``; None when it may."""
    if declared is None:
        return (
            f"declares no requirement on {HOOKSPECS_DISTRIBUTION}; "
            f"a plugin states the hook API it needs, e.g. {HOOKSPECS_DISTRIBUTION}>=1.0,<2"
        )
    # A pre-release core still satisfies a plugin's range: plugins are tested against it.
    if not declared.contains(Version(hook_api), prereleases=True):
        return (
            f"requires {HOOKSPECS_DISTRIBUTION}{describe(declared)}, "
            f"but the running hook API is {hook_api}"
        )
    return None
