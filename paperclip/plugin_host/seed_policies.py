"""The recovery policies the seeds' rules stand on, and which of them this installation lacks.

Each policy ships as its own distribution, and the core's default install
depends on all of them. One can still be off: disabled
(``PAPERCLIP_PLUGINS_DISABLE``), left out (``PAPERCLIP_PLUGINS_ONLY``),
uninstalled, or failing to load. The core then runs, but a rule of a seed stops
holding after a restart (a held chat answer is never presented, an unread steer
is lost, ...): ``paperclip serve`` warns, ``/api/health`` says ``degraded`` and
``paperclip doctor`` lists it, each naming why it is off.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from packaging.utils import canonicalize_name

from paperclip.plugin_host.records import PluginStatus, SkipCode

log = logging.getLogger(__name__)

SETTINGS = {
    SkipCode.DISABLED: "PAPERCLIP_PLUGINS_DISABLE",
    SkipCode.NOT_ALLOWED: "PAPERCLIP_PLUGINS_ONLY",
}
"""The setting behind each skip that is an operator's choice."""


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


@dataclass(frozen=True, slots=True)
class PolicyOff:
    """A seed policy no loaded plugin provides, and why."""

    policy: SeedPolicy
    why: str
    """``disabled`` or ``not_allowed`` (a setting), ``not_installed``, or the code of the
    failure that kept its plugin from loading (``import_error``, ...)."""
    setting: str | None
    """The setting that turned it off: ``PAPERCLIP_PLUGINS_DISABLE`` or ``PAPERCLIP_PLUGINS_ONLY``."""
    reason: str
    """Why, in words, for logs and doctor (may hold an import error: not for public bodies)."""

    def sentence(self) -> str:
        """One line for a log or a report: what is off, why, and what stops holding."""
        return (
            f"recovery policy {self.policy.distribution} is off ({self.reason}): "
            f"after a restart, {self.policy.without}"
        )


def policies_off(host: Any) -> list[PolicyOff]:
    """Each seed policy no loaded plugin provides, with the setting or failure behind it."""
    records = {canonicalize_name(r.distribution): r for r in host.records() if not r.builtin}
    off = []
    for policy in missing_policies(host):
        record = records.get(canonicalize_name(policy.distribution))
        if record is None:
            reason = f"not installed (pip install {policy.distribution})"
            off.append(PolicyOff(policy, "not_installed", None, reason))
        elif record.code is None:  # loaded, yet what the policy stands on is not registered
            reason = f"{record.label} does not provide it"
            off.append(PolicyOff(policy, "not_provided", None, reason))
        else:
            reason = record.reason or record.code.value
            off.append(PolicyOff(policy, record.code.value, SETTINGS.get(record.code), reason))
    return off


def warn_policies_off(host: Any) -> list[PolicyOff]:
    """Log a warning for each seed policy that is off (at ``paperclip serve``'s start)."""
    off = policies_off(host)
    for item in off:
        log.warning("%s", item.sentence())
    return off
