"""Codex, as the shared suites know it.

Codex (``codex app-server``, JSON-RPC on stdio) names the run's MCP tools
``mcp__paperclip/<tool>``; a message during a turn is a steer, read in the
running turn. Its real-CLI and conformance tests are its own (an approval
policy, a sandbox and a worktree go through them); the fake runs the shared
fake scenarios.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tests.providers.codex.cli import CODEX as CODEX_CLI
from tests.providers.description import ProviderUnderTest
from tests.support.model_endpoint_script import FunctionCall, mcp_tool


@dataclass(frozen=True)
class Codex(ProviderUnderTest):
    def tool(self, name: str, arguments: dict[str, Any] | None = None) -> FunctionCall:
        return mcp_tool(name, arguments or {})

    def prompts(self, stack, ctx: dict, run: dict) -> list[Any]:
        """Codex's turns of the run's thread: a steer enters the running one."""
        return [e for e in stack.events(ctx, run["id"]) if e["type"] == "turn/started"]


CODEX = Codex(
    kind="codex",
    cli=CODEX_CLI,
    fake_module="paperclip_codex_testing.fake_app_server",
    serve=("app-server",),
    steers=True,
)
