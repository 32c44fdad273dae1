"""Check one agent as ``paperclip doctor`` checks a machine: would a run of it start?

Answered by the control plane alone, from its plugin host (the provider is
installed here, the agent's config fits its schema) and from what the
connected runners said (``runners.offers``: the providers they host, the
launch profiles they offer, whether each profile's CLI was found). It reads
only; nothing is started.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import msgspec
from paperclip_hookspecs.providers import DEFAULT_LAUNCH, LAUNCH_KEY, ProviderKind
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from paperclip.common.queries import get_scoped
from paperclip.domain.agents.provider_configs import ProviderConfigs
from paperclip.errors import InvalidInputError
from paperclip.models import Agent, AgentStatus, Runner
from paperclip.wire.model_rules import (
    MODEL_PROFILE_NOT_ALLOWED,
    ModelProfile,
    access_of,
    access_problem,
    profile_name,
)

Verdict = Literal["ok", "warning", "failed", "unknown"]


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    """``provider_installed``, ``config_valid``, ``agent_active``, ``runner_connected``,
    ``launch_profile_offered``, ``cli_installed``, ``model_profile_allowed``."""
    status: Verdict
    message: str
    code: str | None = None
    """The error code a run or a write would get (``invalid_provider_config``, ...)."""


@dataclass(frozen=True, slots=True)
class RunnerOffer:
    """What one connected runner offers this agent."""

    runner: str
    hosts_provider: bool
    launch_profiles: list[str] | None
    """The provider's profiles it offers (names); None: it did not say (an older runner)."""
    cli_found: bool | None = None
    cli_version: str | None = None
    hint: str = ""


@dataclass(frozen=True, slots=True)
class AgentCheck:
    agent: Agent
    launch_profile: str
    checks: list[Check]
    runners: list[RunnerOffer] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No check failed (a warning or an unknown does not stop a run)."""
        return all(c.status != "failed" for c in self.checks)


class AgentChecks:
    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self.sessions = sessions

    async def check(
        self, company_id: uuid.UUID, agent_id: uuid.UUID, kinds: Sequence[ProviderKind]
    ) -> AgentCheck:
        """Every check of the agent, in the order a run meets them."""
        async with self.sessions() as session:
            agent = await get_scoped(session, Agent, company_id, agent_id, "agent", source="path")
            runners = list(
                (
                    await session.execute(
                        select(Runner)
                        .where(Runner.revoked_at.is_(None), Runner.replica.is_not(None))
                        .order_by(Runner.name)
                    )
                ).scalars()
            )
        config = agent.provider_config or {}
        profile = config.get(LAUNCH_KEY, DEFAULT_LAUNCH)
        profile = profile if isinstance(profile, str) else DEFAULT_LAUNCH
        checks = [_installed(agent, kinds), _config(agent, kinds), _active(agent)]
        offers = [_offer(r, agent.provider, profile) for r in runners]
        checks += _runner_checks(agent.provider, profile, offers)
        checks += _model_checks(agent, kinds, runners)
        return AgentCheck(agent, profile, checks, offers)


def _installed(agent: Agent, kinds: Sequence[ProviderKind]) -> Check:
    if any(k.name == agent.provider for k in kinds):
        return Check("provider_installed", "ok", f"the {agent.provider} plugin is installed here")
    offered = ", ".join(sorted(k.name for k in kinds)) or "none"
    return Check(
        "provider_installed",
        "failed",
        f"no plugin on the server offers {agent.provider!r} (installed: {offered}); install "
        f"paperclip-{agent.provider} where the control plane runs",
        "unknown_provider",
    )


def _config(agent: Agent, kinds: Sequence[ProviderKind]) -> Check:
    try:
        ProviderConfigs(kinds).check(agent.provider, agent.provider_config or {})
    except InvalidInputError as exc:
        return Check("config_valid", "failed", exc.message, exc.code)
    return Check("config_valid", "ok", "the provider config fits the provider's schema")


def _active(agent: Agent) -> Check:
    if agent.status == AgentStatus.PAUSED:
        return Check("agent_active", "warning", "the agent is paused: its wakes start no run")
    return Check("agent_active", "ok", "the agent is active")


def _offer(runner: Runner, provider: str, profile: str) -> RunnerOffer:
    offers: dict[str, Any] = runner.offers or {}
    hosts = provider in (offers.get("providers") or [])
    said = offers.get("launch_profiles")
    profiles = None if said is None else list(said.get(provider) or [])
    probe = next(
        (
            p
            for p in offers.get("probes") or []
            if p.get("provider") == provider and p.get("profile") == profile
        ),
        {},
    )
    return RunnerOffer(
        runner=runner.name,
        hosts_provider=hosts,
        launch_profiles=profiles,
        cli_found=probe.get("found"),
        cli_version=probe.get("version"),
        hint=probe.get("hint") or "",
    )


def _runner_checks(provider: str, profile: str, offers: list[RunnerOffer]) -> list[Check]:
    if not offers:
        return [
            Check(
                "runner_connected",
                "failed",
                "no runner is connected: start one (`paperclip serve` starts a local one, "
                "`paperclip runner` another machine's)",
                "no_runner",
            )
        ]
    hosting = [o for o in offers if o.hosts_provider]
    if not hosting:
        return [
            Check(
                "runner_connected",
                "failed",
                f"no connected runner hosts the {provider} provider (connected: "
                f"{', '.join(o.runner for o in offers)}); install paperclip-{provider} there",
                "provider_not_installed",
            )
        ]
    names = ", ".join(o.runner for o in hosting)
    checks = [Check("runner_connected", "ok", f"runners hosting {provider}: {names}")]
    said = [o for o in hosting if o.launch_profiles is not None]
    offering = [o for o in said if profile in (o.launch_profiles or [])]
    if not said:
        checks.append(
            Check(
                "launch_profile_offered",
                "unknown",
                "the runners did not say which launch profiles they offer (older runners)",
            )
        )
        return checks
    if not offering:
        offered = sorted({p for o in said for p in o.launch_profiles or []})
        checks.append(
            Check(
                "launch_profile_offered",
                "failed",
                f"no connected runner offers the launch profile {profile!r} for {provider} "
                f"(offered: {', '.join(offered) or 'none'}); the runner host adds profiles "
                "with PAPERCLIP_RUNNER_LAUNCH",
                "launch_not_allowed",
            )
        )
        return checks
    checks.append(
        Check(
            "launch_profile_offered",
            "ok",
            f"{profile!r} is offered by {', '.join(o.runner for o in offering)}",
        )
    )
    checks.append(_cli(provider, profile, offering))
    return checks


def _model_checks(
    agent: Agent, kinds: Sequence[ProviderKind], runners: list[Runner]
) -> list[Check]:
    """Whether a connected runner's model profile allows the config (``model_profile_allowed``)."""
    config = agent.provider_config or {}
    name = profile_name(config)
    said = [
        r.offers["model_profiles"]
        for r in runners
        if r.offers
        and isinstance(r.offers.get("model_profiles"), dict)
        and agent.provider in (r.offers.get("providers") or [])
    ]
    if not said:
        return []
    try:
        access = access_of(next((k for k in kinds if k.name == agent.provider), None), config)
    except ValueError:
        return []  # config_valid says why
    problems = []
    for profiles in said:
        if name not in profiles:
            problems.append(f"no connected runner offers the model profile {name!r}")
            continue
        problem = access_problem(name, msgspec.convert(profiles[name], ModelProfile), access)
        if problem is None:
            return [Check("model_profile_allowed", "ok", f"the model profile {name!r} allows it")]
        problems.append(problem[1])
    return [Check("model_profile_allowed", "failed", problems[0], MODEL_PROFILE_NOT_ALLOWED)]


def _cli(provider: str, profile: str, offering: list[RunnerOffer]) -> Check:
    found = [o for o in offering if o.cli_found]
    missing = [o for o in offering if o.cli_found is False]
    if found:
        where = ", ".join(f"{o.runner} ({o.cli_version or 'version unknown'})" for o in found)
        if not missing:
            return Check("cli_installed", "ok", f"the {provider}/{profile} CLI is on {where}")
        # A run goes to any runner hosting the provider: some would fail to start it.
        return Check(
            "cli_installed",
            "warning",
            f"the {provider}/{profile} CLI is on {where}, and missing on "
            + ", ".join(o.runner for o in missing),
        )
    if missing:
        hint = missing[0].hint
        return Check(
            "cli_installed",
            "failed",
            f"the {provider}/{profile} CLI is missing on {', '.join(o.runner for o in missing)}"
            + (f": {hint}" if hint else ""),
            "provider_spawn_failed",
        )
    hint = next((o.hint for o in offering if o.hint), "")
    return Check(
        "cli_installed",
        "unknown",
        "the runners have not said whether the CLI is installed yet"
        + (f" ({hint})" if hint else ""),
    )
