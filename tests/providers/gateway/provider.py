"""The OpenClaw gateway, as the shared suites know it.

No local process is adopted: the run id is the ``agent`` request's idempotency
key, and a message during a turn is another agent request on the same session
(a follow-up, keyed ``<run id>:follow-up:<message id>``). The run's tools reach
the remote agent through the runner's relay, which the gateway's
``mcp.servers.paperclip`` points at; OpenClaw names them ``paperclip__<tool>``.
A gateway run's usage comes with its final answer: one cost event a gateway
run, summing its model calls.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from tests.engine.conftest import Stack
from tests.providers.description import ProviderUnderTest
from tests.providers.gateway.cli import OPENCLAW
from tests.providers.gateway.conftest import start_fake_gateway, start_openclaw, start_stack
from tests.providers.scenarios import assert_usage_recorded, fake_agent
from tests.support.model_endpoint import ModelEndpoint
from tests.support.model_endpoint_script import Usage


@dataclass(frozen=True)
class OpenClawGateway(ProviderUnderTest):
    def fake_agent(self, stack: Stack, script: Any) -> dict[str, Any]:
        """An agent of the fake gateway (started here, with the stack, if it is not yet)."""
        if getattr(stack, "gateway", None) is None:
            stack.script_dir.mkdir(parents=True, exist_ok=True)
            start_stack(stack, start_fake_gateway(stack.tmp, stack.script_dir))
        name = f"scripted-{uuid.uuid4().hex[:8]}"
        return fake_agent(stack, self.kind, script, {"agent_id": name}, name)

    def real_agent(self, stack: Stack, endpoint: ModelEndpoint, steps: list[Any]) -> dict:
        """A real gateway on the scripted model (~10 s to start), the stack reaching it, and
        an agent whose session is its issue's."""
        model = f"scripted-{uuid.uuid4().hex[:8]}"
        endpoint.script(model, steps)
        start_stack(stack, start_openclaw(stack.tmp, endpoint, model))
        config = {"session_key_strategy": "issue"}
        ctx = stack.setup_issue({}, provider_config=config, provider=self.kind)
        ctx["model"] = model
        ctx["session_key"] = f"agent:main:paperclip:issue:{ctx['issue']['id']}"
        return ctx

    def start_runner(self, stack: Stack) -> None:
        """A runner whose default profile reaches the stack's gateway."""
        gateway = stack.gateway  # type: ignore[attr-defined]
        stack.start_runner(
            launch={self.kind: {"default": gateway.profile()}}, env=gateway.runner_env()
        )

    def prompts(self, stack: Stack, ctx: dict, run: dict) -> list[Any]:
        """The gateway runs of the Paperclip run: keyed by its id, or a follow-up of it; on
        the issue's session where the agent's sessions are its issues'."""
        events = [e for e in stack.events(ctx, run["id"]) if e["type"].startswith("agent.")]
        run_ids = sorted({e["payload"]["runId"] for e in events})
        assert run_ids[:1] == [run["id"]], run_ids
        assert all(i.startswith(f"{run['id']}:follow-up:") for i in run_ids[1:]), run_ids
        if "session_key" in ctx:
            assert {e["payload"]["sessionKey"] for e in events} == {ctx["session_key"]}
        return run_ids

    def holds_text(self, request: Any, text: str) -> bool:
        # The follow-up's message carries the text within OpenClaw's own wording.
        return any(text in t for t in request.user_texts())

    def assert_usage(
        self, stack: Stack, ctx: dict, run: dict, sent: list[Usage], prompts: int = 1
    ) -> list[dict[str, Any]]:
        """Each gateway run's usage, from its own request's final answer: a cost event each,
        keyed by the gateway run."""
        recorded = assert_usage_recorded(
            stack, ctx, run["id"], sent, per_response=False, runs=prompts
        )
        assert {e["key"] for e in recorded} == set(self.prompts(stack, ctx, run))
        return recorded


GATEWAY = OpenClawGateway(
    kind="gateway",
    cli=OPENCLAW,
    fake_module="paperclip_gateway_testing.fake_gateway",
    tool_prefix="paperclip__",
)
