"""What each runner said it offers, kept on its row for any replica to read.

``hello`` says which providers the runner hosts, their launch profiles (by
name), its model profiles (what each allows) and the protocol features it
speaks (``workspace_merge``); ``provider_report`` follows
with whether each launch profile's CLI is installed. A new runner process starts over: its earlier process's probes are
dropped at its ``hello``. ``POST …/agents/{id}/check`` reads them.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import msgspec
from sqlalchemy.ext.asyncio import AsyncSession

from paperclip.models import Runner
from paperclip.wire.messages import Hello, ProviderReport


def offers_of(hello: Hello, earlier: dict[str, Any] | None, same_process: bool) -> dict[str, Any]:
    """The row's ``offers`` after ``hello``: the probes kept only for the same process."""
    offers: dict[str, Any] = {
        "providers": sorted(hello.providers),
        # What it speaks beyond the base protocol: a merge is asked only of a runner that says so.
        "features": sorted(hello.features),
    }
    # An older runner says nothing of its profiles: absent, not "none".
    if hello.launch_profiles or not hello.providers:
        offers["launch_profiles"] = {p: sorted(n) for p, n in hello.launch_profiles.items()}
    if hello.model_profiles is not None:
        offers["model_profiles"] = msgspec.to_builtins(hello.model_profiles)
    if same_process and earlier and "probes" in earlier:
        offers["probes"], offers["probed_at"] = earlier["probes"], earlier.get("probed_at")
    return offers


async def record_provider_report(
    session: AsyncSession, runner_id: uuid.UUID, instance: str, report: ProviderReport
) -> None:
    """Keep the probes of the runner process that is connected (a late one of an earlier
    process changes nothing)."""
    row = await session.get(Runner, runner_id, with_for_update=True)
    if row is None or row.instance != instance:
        return
    row.offers = {
        **(row.offers or {}),
        "probes": msgspec.to_builtins(report.probes),
        "probed_at": datetime.now(UTC).isoformat(),
    }
