"""Model profiles at the door: an agent's config refused when no runner would run it.

Which endpoints, key variables, sandbox modes and approval answers an agent may use is
each runner host's decision (:mod:`paperclip.wire.model_rules`); a runner says its
profiles in ``hello`` and they are kept on its row. When an agent is made or changed,
its config must fit the profile it names on at least one runner that hosts its provider
and said its profiles; otherwise ``422 model_profile_not_allowed``, naming the profile and
what it allows. When no such runner has said anything (none registered yet, or older
runners), the door cannot know: the runner refuses the run instead.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import msgspec
from paperclip_hookspecs.providers import MODEL_PROFILE_KEY, ModelAccess
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from paperclip.errors import InvalidInputError
from paperclip.models import Runner
from paperclip.wire.model_rules import (
    MODEL_PROFILE_NOT_ALLOWED,
    MODELS_SETTING,
    ModelProfile,
    access_problem,
    profile_name,
)

AccessReader = Callable[[str, Mapping[str, Any]], ModelAccess]
"""What a provider config asks of the host (``ProviderConfigs.access``)."""


async def refuse_unoffered_access(
    session: AsyncSession, provider: str, config: Mapping[str, Any], read: AccessReader
) -> None:
    """Raise ``InvalidInputError`` (422) unless some runner's profile allows ``config``."""
    said = [
        offers["model_profiles"]
        for offers in (
            await session.execute(select(Runner.offers).where(Runner.revoked_at.is_(None)))
        ).scalars()
        if offers
        and isinstance(offers.get("model_profiles"), dict)
        and provider in (offers.get("providers") or [])
    ]
    if not said:
        return
    name = profile_name(config)
    access = read(provider, config)
    problems: list[tuple[str, str]] = []
    for profiles in said:
        raw = profiles.get(name)
        if raw is None:
            continue
        try:
            profile = msgspec.convert(raw, ModelProfile)
        except msgspec.ValidationError:
            continue  # a row this version cannot read decides nothing
        problem = access_problem(name, profile, access)
        if problem is None:
            return
        problems.append(problem)
    if problems:
        key, message = problems[0]
        raise InvalidInputError(
            f"{message}; the runner host decides ({MODELS_SETTING})",
            code=MODEL_PROFILE_NOT_ALLOWED,
            field=f"provider_config.{key}",
        )
    offered = sorted({n for profiles in said for n in profiles})
    raise InvalidInputError(
        f"no runner offers the model profile {name!r} for {provider} "
        f"(offered: {', '.join(offered) or 'none'}); the runner host defines profiles "
        f"with {MODELS_SETTING}",
        code=MODEL_PROFILE_NOT_ALLOWED,
        field=f"provider_config.{MODEL_PROFILE_KEY}",
    )
