"""The conformance suite: a provider's fake against its pinned real CLI, through its driver.

The scenario, its tools and its recordings are
:mod:`paperclip_provider_kit.testing.conformance`'s; here is what starts the
real CLI (the scripted model endpoint of tests/support). A provider's
``test_conformance.py`` describes how its driver's turn is read (its
:class:`Conformance`: the driver and ``reduce``), and runs both halves::

    class TestTheFake(FakeConformance):
        conformance = CONFORMANCE

    @pytest.mark.opencode_cli
    class TestTheRealCli(RealConformance):
        conformance = CONFORMANCE

The recording is ``data/<cli>-<version>.json`` in the provider's folder, made
with ``PAPERCLIP_RECORD_<CLI>=1``.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from paperclip_hookspecs.providers import DriverContext, ProviderDriver, ProviderEvent
from paperclip_provider_kit.testing import Reported, counts
from paperclip_provider_kit.testing.conformance import (
    CONFORMANCE_MODEL,
    CONFORMANCE_SCRIPT,
    check_recording,
    conformance_tools,
    recorded,
    run_conformance_turn,
)
from paperclip_provider_kit.usage import COUNTS

from tests.providers.description import FAKE_BASE_URL, MODEL_KEY_VARIABLE, ProviderUnderTest
from tests.support.model_endpoint import ModelEndpoint
from tests.support.model_endpoint_script import calls, say

Reduce = Callable[[Any, list[ProviderEvent], Reported], dict[str, Any]]


@dataclass(frozen=True)
class Conformance:
    """How a provider's turn is read: its driver, and ``reduce`` (the turn's result, events and
    reported usage to what the driver and the engine read of them)."""

    provider: ProviderUnderTest
    driver: Callable[[DriverContext], ProviderDriver]
    reduce: Reduce
    counts: tuple[str, ...] = COUNTS
    """What the CLI reports of a response's usage."""
    turn: dict[str, Any] = dataclasses.field(default_factory=dict)
    """Fields of the scenario's turn the provider's recording has its own way."""

    @property
    def recording(self) -> Path:
        cli = self.provider.cli
        return (
            Path(__file__).parent / self.provider.kind / "data" / f"{cli.name}-{cli.version}.json"
        )

    @property
    def record_variable(self) -> str:
        return f"PAPERCLIP_RECORD_{self.provider.cli.name.upper()}"

    def model_script(self) -> list[Any]:
        """:data:`CONFORMANCE_SCRIPT` as the scripted model says it through the CLI."""
        tool = self.provider.tool
        return [calls(tool("lookup", {"key": "a"})), calls(tool("broken")), say("done")]

    def env(self, tmp: Path) -> dict[str, str]:
        """The CLI's environment: the plugin importable, a dummy key, a home of the test's."""
        plugin = sys.modules[self.driver.__module__.split(".")[0]]
        root = Path(plugin.__file__ or "").parent.parent
        return {
            "PYTHONPATH": str(root),
            MODEL_KEY_VARIABLE: "dummy",
            "HOME": str(tmp),
            **self.provider.cli.env(),
        }

    @asynccontextmanager
    async def on_fake(self, tmp: Path) -> AsyncIterator[tuple[DriverContext, dict[str, Any]]]:
        """The driver's context on the fake whose script is the scenario, and the config."""
        command = self.provider.fake_command(tmp / "scripts", tmp / "fake.log")
        yield self.context(tmp, command), self.config(FAKE_BASE_URL)

    @asynccontextmanager
    async def on_real(
        self, tmp: Path, endpoint: ModelEndpoint
    ) -> AsyncIterator[tuple[DriverContext, dict[str, Any]]]:
        """The driver's context on the pinned CLI, and the config of the scripted model."""
        command = (str(self.provider.cli.require()), *self.provider.serve)
        yield self.context(tmp, command), self.config(endpoint.url)

    def context(self, tmp: Path, command: tuple[str, ...]) -> DriverContext:
        return DriverContext(state_dir=str(tmp / "state"), env=self.env(tmp), command=command)

    def config(self, base_url: str) -> dict[str, Any]:
        return {"base_url": base_url, "model": CONFORMANCE_MODEL, "env_key": MODEL_KEY_VARIABLE}

    def fake_sent(self, tmp: Path) -> list[dict[str, int]]:
        """What the fake says it sent, response by response."""
        return self.usage_entries(tmp / "fake.log")

    @staticmethod
    def usage_entries(log: Path) -> list[dict[str, int]]:
        """The ``usage`` entries of a fake's log: what its scripted model sent."""
        return [
            e for e in map(json.loads, log.read_text().splitlines()) if e.get("type") == "usage"
        ]

    def expected(self, sent: list[dict[str, int]]) -> list[dict[str, int]]:
        """The usage the driver reports of what the model sent: each response's."""
        return [{key: s[key] for key in self.counts} for s in sent]

    def check_reported(self, reported: Reported) -> None:
        """What else the driver reports of the real CLI's usage: no CLI here knows a price for
        the scripted model; one that counts reasoning within the output reports none apart."""
        assert {(u.model, u.cost_micros) for u in reported} == {(CONFORMANCE_MODEL, None)}
        if "reasoning_tokens" not in self.counts:
            assert {u.reasoning_tokens for u in reported} == {0}

    async def run(
        self, context: DriverContext, tmp: Path, config: dict[str, Any]
    ) -> tuple[dict[str, Any], Reported]:
        """The scenario through the driver: the turn reduced, and the usage reported."""
        reported = Reported()
        driver = self.driver(dataclasses.replace(context, report_usage=reported))
        async with conformance_tools() as url:
            result, events = await run_conformance_turn(driver, url, tmp, config, **self.turn)
        return self.reduce(result, events, reported), reported


class FakeConformance:
    """The fake behaves like the recorded real CLI."""

    conformance: ClassVar[Conformance]

    async def test_the_fake_behaves_like_the_recorded_real_cli(self, tmp_path: Path) -> None:
        described = self.conformance
        scripts = tmp_path / "scripts"
        scripts.mkdir()
        (scripts / f"{CONFORMANCE_MODEL}.json").write_text(json.dumps(CONFORMANCE_SCRIPT))
        async with described.on_fake(tmp_path) as (context, config):
            reduced, reported = await described.run(context, tmp_path, config)
        assert reduced == recorded(described.recording)
        sent = described.fake_sent(tmp_path)
        assert len(sent) == len(CONFORMANCE_SCRIPT)
        assert counts(reported, described.counts) == described.expected(sent)


class RealConformance:
    """The real CLI behaves as recorded (its marker on the provider's class)."""

    conformance: ClassVar[Conformance]

    async def test_the_real_cli_behaves_as_recorded(self, tmp_path: Path) -> None:
        described = self.conformance
        with ModelEndpoint() as endpoint:
            endpoint.script(CONFORMANCE_MODEL, described.model_script())
            async with described.on_real(tmp_path, endpoint) as (context, config):
                reduced, reported = await described.run(context, tmp_path, config)
            sent = [u.as_dict() for u in endpoint.usage_sent(CONFORMANCE_MODEL)]
        check_recording(described.recording, reduced, described.record_variable)
        # Every response's usage reported as the model sent it.
        assert len(sent) == len(CONFORMANCE_SCRIPT)
        assert counts(reported, described.counts) == described.expected(sent)
        described.check_reported(reported)
