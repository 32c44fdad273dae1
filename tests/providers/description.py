"""What the shared suites need to know of a provider: its description.

A provider's tests describe it once (``tests/providers/<kind>/provider.py``):
its pinned CLI, how a runner launches the CLI and the fake, how the CLI names
the run's tools, and its quirks (whether a message during a turn enters the
running prompt or follows it, what its events say of the prompts it answered,
what it reports of usage). :mod:`tests.providers.fake_suite`,
:mod:`tests.providers.real_cli_suite` and :mod:`tests.providers.conformance`
run every shared scenario from it; a new provider gets them by describing
itself. A quirk the data cannot say is a method its description overrides.
"""

from __future__ import annotations

import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.engine.conftest import Stack
from tests.providers.scenarios import assert_usage_recorded, fake_agent
from tests.support.model_endpoint import ModelEndpoint
from tests.support.model_endpoint_script import FunctionCall, Usage
from tests.support.npm_cli import NpmCli

MODEL_KEY_VARIABLE = "SCRIPTED_MODEL_API_KEY"
FAKE_BASE_URL = "http://127.0.0.1:9/v1"
"""A fake's model endpoint: never called (the fake's script is its model)."""


def fake_config(model: str) -> dict[str, Any]:
    """An agent's provider config on the fake (the launch profile ``fake``), whose script is
    ``<model>.json``."""
    return {
        "launch": "fake",
        "base_url": FAKE_BASE_URL,
        "model": model,
        "env_key": MODEL_KEY_VARIABLE,
    }


@dataclass(frozen=True)
class ProviderUnderTest:
    """A provider whose CLI a runner launches from a profile (``<cli> <serve…>``), the model
    an OpenAI-compatible endpoint of the agent's config; its fake a ``python -m`` module."""

    kind: str
    """The provider kind, and its folder under tests/providers/."""
    cli: NpmCli
    """The pinned real CLI."""
    fake_module: str
    """The fake, run as ``python -m <fake_module> --script-dir <dir> --log <log>``."""
    serve: tuple[str, ...] = ()
    """The CLI's arguments in a runner's launch profile."""
    tool_prefix: str = "paperclip_"
    """How the CLI names the run's tools to the model: ``<tool_prefix><tool>``."""
    steers: bool = False
    """A message during a turn enters the running prompt (True), or is a prompt of its own
    answered after it in the same turn (a follow-up)."""
    reasoning_apart: bool = True
    """The CLI reports reasoning tokens apart from the output (Pi counts them within it)."""

    def tool(self, name: str, arguments: dict[str, Any] | None = None) -> FunctionCall:
        """A scripted model's call of the run's tool ``name``, as the CLI names it."""
        return FunctionCall(f"{self.tool_prefix}{name}", arguments or {})

    # Launching.

    def fake_command(self, script_dir: Path, log: Path) -> tuple[str, ...]:
        """The fake's command: its scripts in ``script_dir``, its log at ``log``."""
        return (
            sys.executable,
            "-m",
            self.fake_module,
            "--script-dir",
            str(script_dir),
            "--log",
            str(log),
        )

    def fake_launch(self, stack: Stack) -> dict[str, Any]:
        """A runner's launch profiles: the fake as the profile ``fake``."""
        stack.script_dir.mkdir(parents=True, exist_ok=True)
        return {self.kind: {"fake": list(self.fake_command(stack.script_dir, stack.fake_log))}}

    def start_fake(self, stack: Stack) -> None:
        """A control plane, and a runner offering the fake."""
        stack.start_server()
        stack.start_runner(launch=self.fake_launch(stack))

    def fake_agent(self, stack: Stack, script: Any) -> dict[str, Any]:
        """An agent on the fake (started here, if it is not yet) whose script is ``script``."""
        if not stack.servers:
            self.start_fake(stack)
        model = f"scripted-{uuid.uuid4().hex[:8]}"
        return fake_agent(stack, self.kind, script, fake_config(model), model)

    def start_runner(self, stack: Stack) -> None:
        """A runner whose default profile is the pinned CLI, with a home of the test's own
        (the same on every start: the CLI's stored sessions), and a dummy model key."""
        home = stack.tmp / "home"
        home.mkdir(exist_ok=True)
        stack.start_runner(
            launch={self.kind: {"default": [str(self.cli.require()), *self.serve]}},
            # Nothing of the user's is read or written.
            env={MODEL_KEY_VARIABLE: "scripted-dummy-key", "HOME": str(home), **self.cli.env()},
        )

    def real_agent(self, stack: Stack, endpoint: ModelEndpoint, steps: list[Any]) -> dict:
        """A control plane and a runner on the pinned CLI (started here), and an agent whose
        model is ``steps`` on ``endpoint``."""
        self.cli.require()
        stack.start_server()
        self.start_runner(stack)
        model = f"scripted-{uuid.uuid4().hex[:8]}"
        endpoint.script(model, steps)
        config = {"base_url": endpoint.url, "model": model, "env_key": MODEL_KEY_VARIABLE}
        ctx = stack.setup_issue({}, provider_config=config, provider=self.kind)
        ctx["model"] = model
        return ctx

    # Quirks.

    def prompts(self, stack: Stack, ctx: dict, run: dict) -> list[Any]:
        """The prompts the CLI answered in the run, as its events say (one a turn, and one
        more for each follow-up)."""
        raise NotImplementedError

    def check_first_request(self, request: Any) -> None:
        """What the CLI offers and says in its first request of a run, beyond the run's tools
        and the standing rules in its system text (which every CLI sends)."""

    def check_steered(self, stack: Stack, ctx: dict, run: dict, text: str) -> None:
        """What the CLI's events say of the message ``text`` sent during the turn."""

    def assert_usage(
        self, stack: Stack, ctx: dict, run: dict, sent: list[Usage], prompts: int = 1
    ) -> list[dict[str, Any]]:
        """The run's usage recorded as the model sent it (a cost event a response); the
        cost events."""
        return assert_usage_recorded(stack, ctx, run["id"], sent, reasoning=self.reasoning_apart)

    def holds_text(self, request: Any, text: str) -> bool:
        """Whether a request to the model carries the person's ``text`` as a user message."""
        return text in request.user_texts()

    def send_unread(self, stack: Stack, ctx: dict, run_id: str) -> None:
        """Send the steer of tests.engine.test_steer_restarts during the held first turn,
        acknowledged and not yet read (an unread message, lost with the CLI)."""
        raise NotImplementedError

    def read_in_second_turn(self, stack: Stack, ctx: dict, run_id: str) -> bool:
        """Whether the CLI's events say the second turn's prompt is being answered."""
        raise NotImplementedError

    def check_read_once(self, stack: Stack, ctx: dict, run_id: str, endpoint: Any) -> None:
        """What says the unread message reached the model once, across two restarts."""
