"""What this runner host offers each provider, as it tells the control plane.

``hello`` names the launch profiles (never their commands). Whether each
profile's executable is installed is probed once, in the background, after
the process starts (the kind's own probe, as ``paperclip doctor`` calls it),
and sent as ``provider_report`` after each ``welcome`` of a control plane that
keeps it: a connection never waits for a probe.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from paperclip.runner.launch import LaunchPolicy
from paperclip.wire import messages as wire

log = logging.getLogger(__name__)

PROBE_WORKERS = 4


def probe_profile(
    kind: Any, provider: str, profile: str, command: tuple[str, ...]
) -> wire.ProviderProbe:
    """One launch profile's probe; a plugin's failure is reported, never raised."""
    if kind is None or kind.probe is None:
        return wire.ProviderProbe(
            provider=provider,
            profile=profile,
            found=None,
            hint="this provider plugin cannot check its CLI",
        )
    try:
        found = kind.probe(command)
    except Exception as exc:
        return wire.ProviderProbe(
            provider=provider,
            profile=profile,
            found=None,
            hint=f"its probe failed: {type(exc).__name__}: {exc}",
        )
    return wire.ProviderProbe(
        provider=provider,
        profile=profile,
        found=found.found,
        version=found.version,
        hint=found.hint,
    )


def probe_all(kinds: Mapping[str, Any], policy: LaunchPolicy) -> list[wire.ProviderProbe]:
    """Every launch profile of every provider, probed side by side (each probe is bounded)."""
    jobs = [
        (kinds.get(provider), provider, profile, command)
        for provider, named in sorted(policy.profiles.items())
        for profile, command in sorted(named.items())
    ]
    if not jobs:
        return []
    with ThreadPoolExecutor(min(PROBE_WORKERS, len(jobs)), "provider-probe") as pool:
        return list(pool.map(lambda job: probe_profile(*job), jobs))


class ProviderOffers:
    """The launch profiles this host offers and, once probed, whether their CLIs are there."""

    def __init__(self, kinds: Mapping[str, Any], policy: LaunchPolicy) -> None:
        self.kinds = kinds
        self.policy = policy
        self._probes: asyncio.Task[list[wire.ProviderProbe]] | None = None
        self._reporting: asyncio.Task[None] | None = None

    def hello(self) -> dict[str, Any]:
        """What ``hello`` says of the profiles: their names by provider."""
        return {"launch_profiles": {p: sorted(named) for p, named in self.policy.profiles.items()}}

    def connected(
        self, features: list[str], send: Callable[[wire.Message], Awaitable[None]]
    ) -> None:
        """Connected: report the probes (started now if not yet) to a control plane that keeps
        them, as soon as they are done."""
        if self._probes is None:
            self._probes = asyncio.ensure_future(
                asyncio.to_thread(probe_all, self.kinds, self.policy)
            )
        if wire.FEATURE_PROVIDER_REPORT not in features:
            return
        if self._reporting is not None:
            self._reporting.cancel()
        self._reporting = asyncio.ensure_future(self._report(send))

    async def _report(self, send: Callable[[wire.Message], Awaitable[None]]) -> None:
        assert self._probes is not None
        try:
            probes = await asyncio.shield(self._probes)
        except Exception:
            log.exception("probing the launch profiles failed")
            return
        with contextlib.suppress(Exception):  # a lost connection sends it after the next welcome
            await send(wire.ProviderReport(probes=probes))
