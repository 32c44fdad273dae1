"""What the runner gives a provider kind, by its declared capabilities (never by its name).

- ``mcp_tools``: only such a kind gets the run's tools (``TurnInput.mcp``) and has
  the run's token opened on the MCP server.
- ``resume``: only such a kind is asked to resume a session (``TurnInput.session_ref``).
- ``steer`` or ``follow_up``: only such a kind's driver is handed a steer; for any
  other the steer is refused without reaching the driver.
"""

from __future__ import annotations

from pathlib import Path

from paperclip_hookspecs.providers import McpEndpoint, ProviderKind, TurnInput
from paperclip_hookspecs.workspaces import ExecutionWorkspace

from paperclip.wire import messages as wire
from paperclip.wire.model_rules import without_profile

MCP_SERVER_NAME = "paperclip"


def turn_input(
    kind: ProviderKind,
    message: wire.StartTurn,
    scratch: Path,
    endpoint_url: str,
    workspace: ExecutionWorkspace | None = None,
) -> TurnInput:
    """The turn a driver of ``kind`` runs for ``message``: in ``workspace`` (the issue's
    worktree) when there is one, else in ``scratch`` (the run's folder, or its agent user's
    ``work`` folder inside it)."""
    capabilities = kind.capabilities
    mcp = (
        McpEndpoint(name=MCP_SERVER_NAME, url=endpoint_url, bearer_token=message.token)
        if capabilities.mcp_tools
        else None
    )
    return TurnInput(
        run_id=str(message.run_id),
        prompt=message.prompt,
        cwd=workspace.path if workspace is not None else str(scratch),
        session_ref=message.session_ref if capabilities.resume else None,
        mcp=mcp,
        # The core's key: a plugin that refuses unknown keys never sees it.
        config=without_profile(message.config),
        system=message.system,
        issue_id=str(message.issue_id) if message.issue_id is not None else None,
        workspace=workspace,
    )


def may_steer(kind: ProviderKind | None) -> bool:
    """Whether a steer may be handed to a driver of ``kind``."""
    return kind is not None and (kind.capabilities.steer or kind.capabilities.follow_up)
