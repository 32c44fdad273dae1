"""OpenCode, as the shared suites know it.

OpenCode names the run's MCP tools ``paperclip_<tool>``; a message sent during
a turn is a follow-up, queued after the running step and answered in the same
turn as a prompt of its own.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from tests.engine.test_steer_restarts import STEER, turn_rows
from tests.engine.test_steer_restarts_opencode import follow_up, prompts_answered
from tests.providers.description import ProviderUnderTest
from tests.providers.opencode.cli import OPENCODE as OPENCODE_CLI


@dataclass(frozen=True)
class OpenCode(ProviderUnderTest):
    def prompts(self, stack, ctx: dict, run: dict) -> list[Any]:
        """The user messages of the run's session: the prompt, and each follow-up."""
        return sorted(
            {
                e["payload"]["info"]["id"]
                for e in stack.events(ctx, run["id"])
                if e["type"] == "message.updated" and e["payload"]["info"]["role"] == "user"
            }
        )

    def check_first_request(self, request: Any) -> None:
        offered = set(request.tool_names())
        assert "paperclip_block" in offered
        # What a run does not offer the model: the web, sub-agents, questions nobody answers.
        assert not offered & {"webfetch", "websearch", "task", "question"}
        assert request.body["messages"][0]["role"] == "system"

    def send_unread(self, stack, ctx: dict, run_id: str) -> None:
        follow_up(stack, ctx, run_id)  # queued behind the held step

    def read_in_second_turn(self, stack, ctx: dict, run_id: str) -> bool:
        return 2 in prompts_answered(stack, ctx, run_id)

    def check_read_once(self, stack, ctx: dict, run_id: str, endpoint: Any) -> None:
        assert turn_rows(stack, run_id)[2]["input"]["steeredMessages"] == []
        # What the model saw once the follow-up was read: it once, in every later request.
        seen = {
            r.step: json.dumps(r.body["messages"]).count(STEER)
            for r in endpoint.scripted(ctx["model"])
        }
        assert {step: seen[step] for step in range(2, 6)} == dict.fromkeys(range(2, 6), 1), seen


OPENCODE = OpenCode(
    kind="opencode",
    cli=OPENCODE_CLI,
    fake_module="paperclip_opencode_testing.fake_server",
    serve=("serve",),
)
