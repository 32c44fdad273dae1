"""The recovery policies the seeds' rules stand on, and which of them this installation lacks.

Each policy ships as its own distribution. The core runs without any of them,
but then a rule of a seed silently stops holding after a restart (a held chat
answer is never presented, an unread steer is lost, ...): ``paperclip doctor``
and the engine say so, naming the distribution to install.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from paperclip.plugin_host.records import PluginStatus


@dataclass(frozen=True, slots=True)
class SeedPolicy:
    """One recovery policy: found by the hook it answers, or the policy name it registers."""

    distribution: str
    seed: str
    without: str
    """What goes wrong after a restart without it, in a few words."""
    hook: str | None = None
    policy: str | None = None


SEED_POLICIES: tuple[SeedPolicy, ...] = (
    SeedPolicy(
        "paperclip-lost-runs",
        "runs",
        "a run whose runner or provider was lost is not continued",
        policy="lost_runs",
    ),
    SeedPolicy(
        "paperclip-unpresented-answers",
        "002",
        "a chat answer committed just before a restart is never presented",
        hook="paperclip_accept_unpresented_turn",
    ),
    SeedPolicy(
        "paperclip-orphaned-callbacks",
        "003",
        "a tool call interrupted by a restart stays pending and its session is quarantined",
        policy="orphaned_tool_callbacks",
    ),
    SeedPolicy(
        "paperclip-cleanup-holds",
        "003",
        "a task held after a completed turn's cleanup waits for a person",
        policy="native_completed_turn_cleanup_hold",
    ),
    SeedPolicy(
        "paperclip-unread-steers",
        "004",
        "a steer the model had not read when a restart came is lost",
        hook="paperclip_unread_steers",
    ),
)


def answers(host: Any, hook: str) -> bool:
    """Whether a loaded plugin implements ``hook``."""
    return any(
        hook in record.hooks and record.status == PluginStatus.LOADED for record in host.records()
    )


def missing_policies(host: Any) -> list[SeedPolicy]:
    """The seed policies no loaded plugin provides, in the order above."""
    try:
        registered = {policy.name for policy in host.recovery_policies()}
    except Exception:  # a broken policy plugin is reported by the host itself
        registered = set()
    return [
        p
        for p in SEED_POLICIES
        if (p.hook is not None and not answers(host, p.hook))
        or (p.policy is not None and p.policy not in registered)
    ]
