"""How the driver answers Codex's requests to its client: nobody is there to ask, so by policy.

- Command and file-change approvals (an escalated shell command, a patch outside
  the sandbox): ``accept`` or ``decline`` by the agent's ``approvals`` setting.
  Under approval policy ``never`` Codex does not ask: it refuses the escalation
  to the model itself. Either way the turn goes on.
- MCP tool-call approvals (``mcpServer/elicitation/request`` with
  ``codex_approval_kind = mcp_tool_call``): yes for the run's own server, whose
  tools the control plane guards; other servers follow ``approvals``.
- ``request_user_input`` (Codex's ask-the-user tool): every question is answered
  with :data:`NO_PERSON_ANSWER`, which points the model at ``post_comment`` and
  ``block``, the platform's way to ask a person.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from paperclip_codex.jsonrpc import METHOD_NOT_FOUND, JsonRpcError

NO_PERSON_ANSWER = (
    "No person answers questions during a Paperclip run. Decide yourself if you can; "
    "otherwise post your question with post_comment and call block."
)


def answer_server_request(
    method: str, params: Any, *, approve: bool, own_server: str | None
) -> Any:
    """The result for one server request; JsonRpcError for a method we do not handle."""
    if method in ("item/commandExecution/requestApproval", "item/fileChange/requestApproval"):
        return {"decision": "accept" if approve else "decline"}
    if method in ("execCommandApproval", "applyPatchApproval"):
        return {"decision": "approved" if approve else "denied"}
    if method == "item/permissions/requestApproval":
        granted = params.get("permissions", {}) if approve and isinstance(params, Mapping) else {}
        return {"permissions": granted, "scope": "turn"}
    if method == "mcpServer/elicitation/request":
        return _elicitation(params, approve=approve, own_server=own_server)
    if method == "item/tool/requestUserInput":
        questions = params.get("questions") if isinstance(params, Mapping) else None
        return {
            "answers": {
                str(q.get("id")): {"answers": [NO_PERSON_ANSWER]}
                for q in questions or []
                if isinstance(q, Mapping)
            }
        }
    raise JsonRpcError(METHOD_NOT_FOUND, f"paperclip does not handle {method}")


def _elicitation(params: Any, *, approve: bool, own_server: str | None) -> dict[str, Any]:
    if not isinstance(params, Mapping):
        return {"action": "decline", "content": None}
    meta = params.get("_meta") or params.get("meta") or {}
    is_tool_approval = (
        isinstance(meta, Mapping) and meta.get("codex_approval_kind") == "mcp_tool_call"
    )
    own = own_server is not None and params.get("serverName") == own_server
    if is_tool_approval and (approve or own):
        return {"action": "accept", "content": None}
    return {"action": "decline", "content": None}
