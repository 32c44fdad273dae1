"""Pi, as the shared suites know it.

Pi has no MCP client: the run's tools reach the model through paperclip-pi's
extension, as ``paperclip_<tool>``. Pi's ``steer`` enters the running turn
before the model's next call. Pi counts reasoning tokens within the output.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from tests.engine.test_steer_restarts import STEER, steer
from tests.engine.test_steer_restarts_pi import user_inputs
from tests.providers.description import ProviderUnderTest
from tests.providers.pi.cli import PI as PI_CLI
from tests.providers.scenarios import WAIT
from tests.support.processes import wait_until


@dataclass(frozen=True)
class Pi(ProviderUnderTest):
    def prompts(self, stack, ctx: dict, run: dict) -> list[Any]:
        """Pi's agent runs: a steer enters the running one."""
        return [e for e in stack.events(ctx, run["id"]) if e["type"] == "agent_end"]

    def check_first_request(self, request: Any) -> None:
        assert "paperclip_block" in set(request.tool_names())

    def check_steered(self, stack, ctx: dict, run: dict, text: str) -> None:
        """The steer entered the conversation as a user message of its own, after the prompt."""
        assert [t for _, t in user_inputs(stack, ctx, run["id"])][1:] == [text]

    def send_unread(self, stack, ctx: dict, run_id: str) -> None:
        steer(stack, ctx, run_id)  # a person's comment, acknowledged by the runner
        wait_until(
            lambda: any(e["type"] == "steering_acknowledgement" for e in stack.events(ctx, run_id)),
            WAIT,
            message="the steer acknowledged",
        )

    def read_in_second_turn(self, stack, ctx: dict, run_id: str) -> bool:
        return any(t == 2 and STEER in text for t, text in user_inputs(stack, ctx, run_id))

    def check_read_once(self, stack, ctx: dict, run_id: str, endpoint: Any) -> None:
        delivered = [text for t, text in user_inputs(stack, ctx, run_id) if t > 1]
        assert sum(text.count(STEER) for text in delivered) == 1, delivered
        # What the third turn's model saw first: the resumed session holds the steer once.
        [third] = [r for r in endpoint.scripted(ctx["model"]) if r.step == 3]
        assert json.dumps(third.body["messages"]).count(STEER) == 1


PI = Pi(
    kind="pi",
    cli=PI_CLI,
    fake_module="paperclip_pi_testing.fake_pi",
    steers=True,
    reasoning_apart=False,
)
