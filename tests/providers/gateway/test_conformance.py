"""The fake gateway agrees with a real OpenClaw gateway on what the driver and the engine read.

One scenario (a tool that answers, a tool that fails, a closing reply) runs
through the real driver and the runner's tool relay against the fake
(always) and a pinned OpenClaw gateway with the scripted model; both reduce to
the same recording in ``data/``, which says where usage shows: the ``usage``
events (the run's output tokens so far, after each model call) and the one
usage the driver reports, from the run's final answer. That usage is the sum
of what the model sent: the scripted endpoint's for the real gateway, the
fake's own (its log) for the fake.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("paperclip_gateway", reason="the gateway plugin is not installed")

from paperclip_gateway.driver import GatewayDriver
from paperclip_hookspecs.providers import DriverContext, ProviderEvent
from paperclip_provider_kit.testing.conformance import CONFORMANCE_MODEL

from tests.providers.conformance import Conformance, FakeConformance, RealConformance
from tests.providers.gateway.conftest import Gateway, start_fake_gateway, start_openclaw
from tests.providers.gateway.provider import GATEWAY
from tests.support.model_endpoint import ModelEndpoint

pytestmark = [pytest.mark.process, pytest.mark.installed_plugins]


def reduce(result: Any, events: list[ProviderEvent], reported: Any) -> dict[str, Any]:
    """The run as read: its tools' ends, its life's first and last phase, its final reply,
    where its usage shows."""
    tools = [
        [e.payload["data"]["name"], e.payload["data"]["status"]]
        for e in events
        if e.type == "agent.item"
        and e.payload["data"].get("kind") == "tool"
        and e.payload["data"]["phase"] == "end"
    ]
    phases = [e.payload["data"]["phase"] for e in events if e.type == "agent.lifecycle"]
    end = next(e.payload["data"] for e in reversed(events) if e.type == "agent.lifecycle")
    finals = [e.payload for e in events if e.type == "chat.final"]
    return {
        "result": [result.status, result.answer],
        "tools": tools,
        "phases": [phases[0], phases[-1]],
        "aborted": end.get("aborted"),
        "streams": sorted({e.type for e in events}),
        "final_reply_ends_with_answer": bool(finals)
        and str(finals[-1]["message"]["content"][-1]["text"]).endswith(str(result.answer)),
        "run_ids": sorted({e.payload["runId"] for e in events}),
        "usage_events": _usage_events(events),
        "reported": [[u.key, u.model, u.cost_micros] for u in reported],
    }


def _usage_events(events: list[ProviderEvent]) -> list[list[Any]]:
    """Each ``usage`` event: its fields, what came just before it, whether the count grew."""
    shown, before, outputs = [], "", [0]
    for event in events:
        data = event.payload.get("data") or {}
        if event.type == "agent.usage":
            grew = data["outputTokens"] > outputs[-1]
            outputs.append(data["outputTokens"])
            shown.append([sorted(data), before, grew])
        before = event.type + (f":{data['phase']}" if event.type == "agent.lifecycle" else "")
    return shown


@dataclass(frozen=True)
class GatewayConformance(Conformance):
    """A gateway on loopback, its tools at the driver's relay; one usage a gateway run."""

    def context_of(self, tmp: Path, gateway: Gateway) -> DriverContext:
        os.environ.update(gateway.runner_env())
        return DriverContext(state_dir=str(tmp), command=tuple(gateway.profile()))

    @asynccontextmanager
    async def on_fake(self, tmp: Path) -> AsyncIterator[tuple[DriverContext, dict[str, Any]]]:
        gateway = start_fake_gateway(tmp, tmp / "scripts")
        try:
            yield self.context_of(tmp, gateway), {"agent_id": CONFORMANCE_MODEL}
        finally:
            gateway.stop()

    @asynccontextmanager
    async def on_real(
        self, tmp: Path, endpoint: ModelEndpoint
    ) -> AsyncIterator[tuple[DriverContext, dict[str, Any]]]:
        gateway = start_openclaw(tmp, endpoint, CONFORMANCE_MODEL)
        try:
            yield self.context_of(tmp, gateway), {}
        finally:
            gateway.stop()

    def fake_sent(self, tmp: Path) -> list[dict[str, int]]:
        return self.usage_entries(tmp / "fake-gateway.log")

    def expected(self, sent: list[dict[str, int]]) -> list[dict[str, int]]:
        """The run's usage, reported once: the sum of what the model sent for its calls."""
        return [{key: sum(s[key] for s in sent) for key in self.counts}]

    def check_reported(self, reported: Any) -> None:
        """Its key, model and cost are in the recording."""


CONFORMANCE = GatewayConformance(
    provider=GATEWAY,
    driver=GatewayDriver,
    reduce=reduce,
    turn={"run_id": "conformance-run", "issue_id": "issue-1"},
)


class TestTheFake(FakeConformance):
    conformance = CONFORMANCE


@pytest.mark.gateway_cli
class TestTheRealGateway(RealConformance):
    conformance = CONFORMANCE
